//! What an HTTP/1.1 response is, read once for the suite's client and the load generator.
//!
//! Two programs read responses, in two ways. The suite's [`Client`](crate::client::Client)
//! waits on one blocking socket and keeps every byte, since a probe compares the body. The
//! book's load generator (`book/tools/src/bin/load`) sweeps over hundreds of non-blocking
//! sockets and keeps nothing: it counts. What they read is the same, and this module says it
//! once: where a head ends ([`head_length`]), what it says ([`RawHead`]: the status line and
//! the header lines, held to RFC 9112's syntax), and where the body after it ends
//! ([`RawHead::framing`]). [`Splitter`] puts the three together for bytes that arrive in
//! pieces, as the load generator needs.
//!
//! The chapters' own upstream relay (`shared/src/upstream.rs`) reads responses too, but it is
//! the chapters' code and its lesson, so it keeps its own reader.

use crate::client::truncate;

/// The most a response head may take before we call it garbage.
pub const MAX_HEAD: usize = 64 * 1024;

/// A parsed response.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    /// In the order received, names as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// How many times header `name` appears.
    pub fn header_count(&self, name: &str) -> usize {
        self.headers.iter().filter(|(key, _)| key.eq_ignore_ascii_case(name)).count()
    }

    /// Does the server say it will close the connection after this response?
    pub fn says_close(&self) -> bool {
        self.has_connection_option("close")
    }

    /// Does the `Connection` header list `option` (`close`, `keep-alive`)?
    pub fn has_connection_option(&self, option: &str) -> bool {
        let headers = self.headers.iter().map(|(name, value)| (name.as_str(), value.as_str()));
        lists_connection_option(headers, option)
    }

    /// The body as text, for messages and comparisons.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// "404 (no such route)": the status and the start of the body, for messages; "404"
    /// alone when there is no body (or it has not been read).
    pub fn summary(&self) -> String {
        let line = self.body.split(|&byte| byte == b'\n').next().unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.status.to_string();
        }
        // A binary body is shown escaped (`\x00\xff...`): raw, it would garble the report.
        let shown = match std::str::from_utf8(line) {
            Ok(text) if !text.chars().any(char::is_control) => text.to_string(),
            _ => line.escape_ascii().to_string(),
        };
        format!("{} ({})", self.status, truncate(&shown, 60))
    }
}

/// Do the `Connection` headers among `headers` list `option`?
fn lists_connection_option<'a>(
    mut headers: impl Iterator<Item = (&'a str, &'a str)>, option: &str,
) -> bool {
    headers.any(|(name, value)| {
        name.eq_ignore_ascii_case("connection")
            && value.split(',').any(|token| token.trim().eq_ignore_ascii_case(option))
    })
}

/// The length of the head at the start of `bytes`, its closing blank line included, once
/// all of it has arrived.
pub fn head_length(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|window| window == b"\r\n\r\n").map(|at| at + 4)
}

/// Where the body after a head ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// After this many bytes (0 for an answer that has no body).
    Length(usize),
    /// At the last of its chunks (`Transfer-Encoding: chunked`). The contract asks every
    /// chapter for a `Content-Length`, so only the load generator meets this: nginx answers
    /// `/echo` in chunks.
    Chunked,
}

/// A response head read where it lies, nothing copied: its status, and its header lines,
/// checked one by one as they are read.
#[derive(Clone, Copy, Debug)]
pub struct RawHead<'a> {
    pub status: u16,
    header_lines: &'a str,
}

impl<'a> RawHead<'a> {
    /// Reads `HTTP/1.1 200 OK\r\nName: value\r\n...\r\n\r\n` (the blank line is optional).
    pub fn parse(head: &'a [u8]) -> Result<RawHead<'a>, String> {
        let text = std::str::from_utf8(head).map_err(|_| "the head is not UTF-8".to_string())?;
        let text = text.strip_suffix("\r\n\r\n").unwrap_or(text);
        let (status_line, header_lines) = text.split_once("\r\n").unwrap_or((text, ""));
        let mut parts = status_line.splitn(3, ' ');
        let (Some("HTTP/1.1"), Some(code)) = (parts.next(), parts.next()) else {
            return Err(format!("bad status line {status_line:?}"));
        };
        let status = code
            .parse::<u16>()
            .ok()
            .filter(|status| (100..600).contains(status) && code.len() == 3)
            .ok_or_else(|| format!("bad status line {status_line:?}"))?;
        Ok(RawHead { status, header_lines })
    }

    /// The header lines as (name, value), or what is wrong with a line, in order.
    pub fn headers(&self) -> impl Iterator<Item = Result<(&'a str, &'a str), String>> + Clone {
        let lines = self.header_lines;
        lines.split("\r\n").filter(move |_| !lines.is_empty()).map(|line| {
            if line.contains('\n') || line.contains('\r') {
                return Err(format!("a bare CR or LF in header line {line:?}"));
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("header line without a colon: {line:?}"))?;
            if name.is_empty() || name.contains(' ') {
                return Err(format!("bad header name in {line:?}"));
            }
            Ok((name, value.trim()))
        })
    }

    /// Where the body ends. `to_head_request` says the request was `HEAD`: then there is no
    /// body whatever `Content-Length` says, as there is none after a 1xx, 204 or 304.
    pub fn framing(&self, to_head_request: bool) -> Result<Framing, String> {
        let mut lengths = 0;
        let mut length = None;
        let mut chunked = false;
        for header in self.headers() {
            let (name, value) = header?;
            if name.eq_ignore_ascii_case("content-length") {
                lengths += 1;
                length = length.or(Some(value));
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                // Chunked is the last coding, when it is there at all (RFC 9112, 6.1).
                let last = value.rsplit(',').next().unwrap_or_default().trim();
                chunked = last.eq_ignore_ascii_case("chunked");
            }
        }
        let length = match (lengths, length) {
            (0, _) => None,
            (1, Some(one)) => Some(
                one.parse::<usize>()
                    .map_err(|_| format!("Content-Length is not a number: {one:?}"))?,
            ),
            _ => return Err("more than one Content-Length".into()),
        };
        let bodiless = to_head_request || self.status < 200 || matches!(self.status, 204 | 304);
        match length {
            _ if bodiless => Ok(Framing::Length(0)),
            Some(length) => Ok(Framing::Length(length)),
            None if chunked => Ok(Framing::Chunked),
            None => {
                Err(format!("{} without Content-Length (the contract requires one)", self.status))
            }
        }
    }

    /// Does the server say it will close the connection after this response?
    pub fn says_close(&self) -> bool {
        lists_connection_option(self.headers().flatten(), "close")
    }

    /// The head as a [`Response`] with an empty body, every header line checked.
    pub fn to_response(&self) -> Result<Response, String> {
        let headers = self
            .headers()
            .map(|header| header.map(|(name, value)| (name.to_string(), value.to_string())))
            .collect::<Result<_, _>>()?;
        Ok(Response { status: self.status, headers, body: Vec::new() })
    }
}

/// Parses `HTTP/1.1 200 OK\r\nName: value\r\n...\r\n\r\n` into a [`Response`] with no body.
pub fn parse_head(head: &[u8]) -> Result<Response, String> {
    RawHead::parse(head)?.to_response()
}

// ANCHOR: splitter
/// Splits a stream of bytes into HTTP/1.1 responses as they arrive, in pieces of any size.
/// The bodies are counted, not kept: an 8 MiB file costs no memory.
pub struct Splitter {
    /// A head that has arrived in part, or a chunked body's size line.
    waiting: Vec<u8>,
    part: Part,
    status: u16,
    close: bool,
}

/// Where in a response the splitter is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Part {
    Head,
    /// Bytes still to come: of a body with a `Content-Length`, or of a chunk and the CRLF
    /// after it (`chunked`: then the next chunk's size line follows).
    Bytes {
        left: usize,
        chunked: bool,
    },
    /// A chunked body: the line that says how long the next chunk is.
    ChunkSize,
    /// After the last (empty) chunk: trailer lines, up to an empty one.
    Trailer,
}

impl Default for Splitter {
    fn default() -> Splitter {
        Splitter::new()
    }
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter { waiting: Vec::new(), part: Part::Head, status: 0, close: false }
    }

    /// Between two responses: nothing of the next one has arrived.
    pub fn between_responses(&self) -> bool {
        self.part == Part::Head && self.waiting.is_empty()
    }

    /// Takes the next bytes from the socket. Calls `done(status, close)` for each response
    /// they complete, `close` saying whether the server will close after it; `done` returns
    /// whether to go on reading (after a close, what follows is not ours to read).
    pub fn feed(
        &mut self, mut data: &[u8], mut done: impl FnMut(u16, bool) -> bool,
    ) -> Result<(), String> {
        while !data.is_empty() {
            let complete = match self.part {
                Part::Head => {
                    let Some(taken) = self.head(data)? else { return Ok(()) };
                    data = &data[taken..];
                    self.part == Part::Head
                }
                Part::Bytes { left, chunked } => {
                    let taken = left.min(data.len());
                    data = &data[taken..];
                    self.part = match (left - taken, chunked) {
                        (0, true) => Part::ChunkSize,
                        (0, false) => Part::Head,
                        (left, chunked) => Part::Bytes { left, chunked },
                    };
                    self.part == Part::Head
                }
                Part::ChunkSize => {
                    let Some(line) = self.line(&mut data)? else { return Ok(()) };
                    // `1a2b;extension`: hexadecimal, then anything after a ';'.
                    let size = line.split(';').next().unwrap_or_default().trim();
                    let size = usize::from_str_radix(size, 16)
                        .map_err(|_| format!("bad chunk size {}", truncate(size, 20)))?;
                    self.part = match size {
                        0 => Part::Trailer,
                        size => Part::Bytes { left: size.saturating_add(2), chunked: true },
                    };
                    false
                }
                Part::Trailer => {
                    let Some(line) = self.line(&mut data)? else { return Ok(()) };
                    if line.is_empty() {
                        self.part = Part::Head;
                    }
                    line.is_empty()
                }
            };
            if complete && !done(self.status, self.close) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Reads a head from the front of `data`, behind what of it arrived before. Returns how
    /// many bytes of `data` it took, or `None` (all taken) until the head is whole.
    fn head(&mut self, data: &[u8]) -> Result<Option<usize>, String> {
        let before = self.waiting.len();
        let head = if before == 0 {
            // The usual case, a whole head in one read: read it where it lies.
            let Some(length) = head_length(data) else {
                self.waiting.extend_from_slice(data);
                return self.too_long().map(|()| None);
            };
            &data[..length]
        } else {
            // Look again a little before the new bytes, for a blank line split between reads.
            let from = before.saturating_sub(3);
            self.waiting.extend_from_slice(data);
            let Some(length) = head_length(&self.waiting[from..]) else {
                return self.too_long().map(|()| None);
            };
            &self.waiting[..from + length]
        };
        let taken = head.len() - before;
        let head = RawHead::parse(head)?;
        let framing = head.framing(false)?;
        self.status = head.status;
        self.close = head.says_close();
        self.part = match framing {
            Framing::Length(0) => Part::Head,
            Framing::Length(left) => Part::Bytes { left, chunked: false },
            Framing::Chunked => Part::ChunkSize,
        };
        self.waiting.clear();
        Ok(Some(taken))
    }

    fn too_long(&self) -> Result<(), String> {
        match self.waiting.len() > MAX_HEAD {
            true => Err("a response head over 64 KiB".into()),
            false => Ok(()),
        }
    }

    /// One line of a chunked body (without its CRLF), or `None` until it has all arrived;
    /// the bytes taken are removed from the front of `data`.
    fn line(&mut self, data: &mut &[u8]) -> Result<Option<String>, String> {
        let Some(end) = data.iter().position(|&byte| byte == b'\n') else {
            self.waiting.extend_from_slice(data);
            *data = &[];
            return self.too_long().map(|()| None);
        };
        self.waiting.extend_from_slice(&data[..end]);
        *data = &data[end + 1..];
        let line = String::from_utf8_lossy(&self.waiting).trim_end_matches('\r').to_string();
        self.waiting.clear();
        Ok(Some(line))
    }
}
// ANCHOR_END: splitter

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
