//! The client half of `/upstream/PATH`: the request we send, how we connect, and how we
//! read the answer.
//!
//! The chapters differ in how they *wait* for the upstream (a blocking `TcpStream` in
//! chapters 1-3, non-blocking sockets and timers from chapter 4 on), so this module only
//! holds what is the same for all of them: the bytes to send, a non-blocking connect, the
//! reading of what comes back ([`ResponseReader`]), and the 502/504 answers.
//!
//! We ask the upstream to close the connection after answering (`Connection: close`), so
//! the answer ends when its `Content-Length` is reached or, without one, at end of file.
//! Before it may come interim answers (`100 Continue`, `103 Early Hints`), which we skip;
//! and a `204` or `304` ends with its head, whatever its headers say (RFC 9112 section 6.3).

use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::ops::Range;
use std::time::{Duration, Instant};

use nix::libc;
use socket2::{Domain, Protocol, Socket, Type};

use crate::http::request::MAX_HEAD;
use crate::http::response::never_has_body;
use crate::http::{Body, Response};

/// How long the upstream may take, from connecting to its last byte: over this is 504.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// The largest upstream answer we relay; more is a 502.
pub const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// The request to send upstream.
pub fn request(path_and_query: &str, upstream: SocketAddr) -> Vec<u8> {
    format!("GET {path_and_query} HTTP/1.1\r\nHost: {upstream}\r\nConnection: close\r\n\r\n")
        .into_bytes()
}

/// 502: the upstream refused, vanished or answered garbage.
pub fn bad_gateway(detail: &str) -> Response {
    Response::error(502, detail)
}

/// 504: the upstream took longer than [`TIMEOUT`].
pub fn gateway_timeout() -> Response {
    Response::error(504, "the upstream took longer than 5 s")
}

/// A non-blocking `connect`: returns at once, usually before the connection is made. The
/// socket becomes writable when the handshake is over, and `SO_ERROR` (`take_error`)
/// then says how it went.
pub fn start_connecting(address: SocketAddr) -> io::Result<TcpStream> {
    let domain = Domain::for_address(address);
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    match socket.connect(&address.into()) {
        // Connected already: it can happen on loopback.
        Ok(()) => {}
        // The usual answer, "in progress": the kernel goes on with the handshake without
        // us. An interrupted non-blocking connect goes on just the same.
        Err(error)
            if error.raw_os_error() == Some(libc::EINPROGRESS)
                || error.kind() == io::ErrorKind::Interrupted => {}
        // Refused on the spot, no route to the host, out of descriptors...
        Err(error) => return Err(error),
    }
    Ok(socket.into())
}

/// What [`ResponseReader::push`] made of the bytes received so far.
#[derive(Debug, PartialEq, Eq)]
pub enum UpstreamParse {
    /// A whole answer, ready to relay to our client.
    Done(Response),
    /// Fine so far; keep reading.
    NeedMore,
    /// Not an HTTP answer we can relay: 502.
    Garbage(&'static str),
}

/// Reads the upstream's answer as it arrives, a piece at a time.
///
/// Each piece is looked at once. A reader that searched the whole buffer for the end of
/// the head after every read would do quadratic work: an upstream that sends 16 MiB
/// without a blank line would cost seconds of the loop's time, one 16 KiB read after
/// another. So the reader remembers how far its search got, and stops searching once the
/// head is over 8 KiB, the limit our own request parser sets.
pub struct ResponseReader {
    /// Everything received so far.
    received: Vec<u8>,
    /// How far reading `received` got. Apart from the bytes so that [`parse_response`]
    /// can use it on a buffer it does not own.
    progress: Progress,
    /// It said `Done` or `Garbage`: there is nothing more to read.
    finished: bool,
}

impl Default for ResponseReader {
    fn default() -> ResponseReader {
        ResponseReader::new()
    }
}

impl ResponseReader {
    pub fn new() -> ResponseReader {
        ResponseReader { received: Vec::new(), progress: Progress::default(), finished: false }
    }

    /// Adds bytes just read from the upstream; an empty slice means end of file. At end
    /// of file the answer is always `Done` or `Garbage`, never `NeedMore`: reading on
    /// would only find end of file again.
    pub fn push(&mut self, bytes: &[u8]) -> UpstreamParse {
        if self.finished {
            return UpstreamParse::Garbage("the upstream's answer was already read");
        }
        self.received.extend_from_slice(bytes);
        match self.progress.advance(&self.received, bytes.is_empty()) {
            Ok(None) => UpstreamParse::NeedMore,
            Ok(Some((head, body))) => {
                self.finished = true;
                // The body becomes the response's, moved to the front of the buffer we
                // already have rather than copied into a new one.
                let mut bytes = std::mem::take(&mut self.received);
                bytes.truncate(body.end);
                bytes.drain(..body.start);
                UpstreamParse::Done(head.response(bytes))
            }
            Err(reason) => {
                self.finished = true;
                UpstreamParse::Garbage(reason)
            }
        }
    }
}

/// Parses everything received so far in one go, starting afresh on every call: for
/// chapters that keep the buffer themselves. [`ResponseReader`] remembers its work
/// instead; here the 8 KiB cap on the head is what keeps each call cheap.
pub fn parse_response(buffer: &[u8], at_eof: bool) -> UpstreamParse {
    match Progress::default().advance(buffer, at_eof) {
        Ok(None) => UpstreamParse::NeedMore,
        Ok(Some((head, body))) => UpstreamParse::Done(head.response(buffer[body].to_vec())),
        Err(reason) => UpstreamParse::Garbage(reason),
    }
}

/// How far the reading of an answer got.
#[derive(Default)]
struct Progress {
    /// Where the head being looked for begins: after the interim answers before it.
    head_start: usize,
    /// How far the search for the head's end got: no blank line ends before this.
    searched: usize,
    /// The final answer's head, once found.
    head: Option<Head>,
}

/// The parts of a response head that relaying needs.
struct Head {
    status: u16,
    content_type: String,
    body: BodyLength,
    /// Where the body begins among the bytes received: just after the head.
    body_start: usize,
}

/// How to tell where the body ends (RFC 9112 section 6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyLength {
    /// No body, whatever the headers say: 1xx, 204 and 304 end with their head.
    None,
    Exactly(usize),
    /// No `Content-Length`: the body ends when the upstream closes the connection.
    UntilClose,
}

impl Progress {
    /// Reads on in `received`, which holds what it held last time and perhaps more.
    /// Returns the final head and where its body lies once the answer is whole, `None`
    /// while it is not, or why it is garbage.
    fn advance(
        &mut self, received: &[u8], at_eof: bool,
    ) -> Result<Option<(&Head, Range<usize>)>, &'static str> {
        if self.head.is_none() {
            self.head = self.find_final_head(received, at_eof)?;
        }
        let Some(head) = &self.head else {
            return Ok(None);
        };
        let start = head.body_start;
        let end = match head.body {
            BodyLength::None => Some(start),
            BodyLength::Exactly(length) => Some(start.saturating_add(length)),
            BodyLength::UntilClose => at_eof.then_some(received.len()),
        };
        // Bytes after the end are not ours to relay. After a 204 they could even look
        // like a second response; relaying them would hand our client an answer to a
        // request it never made.
        match end {
            // Checked as soon as the head says the length: no use reading 16 MiB first.
            Some(end) if end > MAX_RESPONSE => Err("the upstream's answer is too large"),
            Some(end) if end <= received.len() => Ok(Some((head, start..end))),
            Some(_) if at_eof => Err("the upstream's answer was cut short"),
            _ if received.len() > MAX_RESPONSE => Err("the upstream's answer is too large"),
            _ => Ok(None),
        }
    }

    /// Looks for the head of the final answer, skipping the interim (1xx) answers before
    /// it. Returns it once found, or `None` while it is still coming.
    fn find_final_head(
        &mut self, received: &[u8], at_eof: bool,
    ) -> Result<Option<Head>, &'static str> {
        loop {
            // A head may not grow past MAX_HEAD, so neither does the search.
            let window_end = received.len().min(self.head_start + MAX_HEAD);
            // Only the new bytes need a look, and the 3 before them: those could begin a
            // blank line that the new bytes complete.
            let from = self.searched.saturating_sub(3).max(self.head_start);
            let Some(at) = find_blank_line(&received[from..window_end]) else {
                self.searched = window_end;
                return if received.len() - self.head_start >= MAX_HEAD {
                    Err("the upstream's response head is over 8 KiB")
                } else if received.len() > MAX_RESPONSE {
                    // Only interim answers can get here: thousands of them.
                    Err("the upstream's answer is too large")
                } else if at_eof {
                    Err("the upstream closed before a whole response head")
                } else {
                    Ok(None)
                };
            };
            let head_end = from + at + 4;
            let head = parse_head(&received[self.head_start..from + at], head_end)?;
            self.head_start = head_end;
            self.searched = head_end;
            match head.status {
                // We never ask to switch (no `Upgrade`), so whatever follows is not HTTP.
                101 => return Err("the upstream switched protocols"),
                // "Here is a hint, the answer follows": read on for the final one.
                100..=199 => continue,
                _ => return Ok(Some(head)),
            }
        }
    }
}

/// Where the first `\r\n\r\n` in `bytes` begins.
fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|window| window == b"\r\n\r\n")
}

/// Parses a response head (without the blank line that ends it); `body_start` is where
/// its body would begin.
fn parse_head(head: &[u8], body_start: usize) -> Result<Head, &'static str> {
    let Ok(head) = std::str::from_utf8(head) else {
        return Err("the upstream's response head is not text");
    };
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    // "HTTP/1.1 200 OK": the status is the three digits after the version.
    let status = match status_line.split(' ').collect::<Vec<_>>().as_slice() {
        [version, code, ..]
            if version.starts_with("HTTP/1.")
                && code.len() == 3
                && code.bytes().all(|b| b.is_ascii_digit()) =>
        {
            code.parse::<u16>().ok().filter(|code| (100..600).contains(code))
        }
        _ => None,
    };
    let Some(status) = status else {
        return Err("the upstream's status line is malformed");
    };
    let mut content_type = "application/octet-stream".to_string();
    let mut content_length: Option<&str> = None;
    let mut lengths_differ = false;
    let mut transfer_encoding = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err("the upstream sent a malformed header");
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-type")
            && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        {
            content_type = value.to_string();
        } else if name.eq_ignore_ascii_case("content-length") {
            lengths_differ |= content_length.is_some_and(|earlier| earlier != value);
            content_length = Some(value);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_encoding = true;
        }
    }
    // RFC 9112 section 6.3, in its order: a status that never has a body ends with its
    // head, whatever the headers say; then `Transfer-Encoding`; then `Content-Length`,
    // which must be one number; and without either, the body runs until the close.
    let body = if never_has_body(status) {
        BodyLength::None
    } else if transfer_encoding {
        return Err("chunked upstream answers are not supported");
    } else if lengths_differ {
        return Err("the upstream sent two different Content-Lengths");
    } else if let Some(digits) = content_length {
        match parse_length(digits) {
            Some(length) => BodyLength::Exactly(length),
            None => return Err("the upstream's Content-Length is bad"),
        }
    } else {
        BodyLength::UntilClose
    };
    Ok(Head { status, content_type, body, body_start })
}

/// A `Content-Length` value: digits only (`parse` alone would take `+5`), and small
/// enough to count.
fn parse_length(digits: &str) -> Option<usize> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

impl Head {
    /// The response to relay: this head's status and type, with `body`.
    fn response(&self, body: Vec<u8>) -> Response {
        Response {
            status: self.status,
            content_type: Cow::Owned(self.content_type.clone()),
            body: Body::Owned(body),
            allow: None,
            close: false,
        }
    }
}

/// Fetches from the upstream with blocking calls, as chapters 1-3 do: the whole server
/// waits while this runs. Every step has a deadline, so the wait ends after [`TIMEOUT`].
pub fn fetch_blocking(upstream: SocketAddr, path_and_query: &str) -> Response {
    let deadline = Instant::now() + TIMEOUT;
    match try_fetch_blocking(upstream, path_and_query, deadline) {
        Ok(response) => response,
        Err(error)
            if matches!(error.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) =>
        {
            gateway_timeout()
        }
        Err(_) => bad_gateway("could not reach the upstream"),
    }
}

fn try_fetch_blocking(
    upstream: SocketAddr, path_and_query: &str, deadline: Instant,
) -> io::Result<Response> {
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or(io::Error::from(io::ErrorKind::TimedOut))
    };
    let mut stream = TcpStream::connect_timeout(&upstream, left()?)?;
    stream.set_write_timeout(Some(left()?))?;
    stream.write_all(&request(path_and_query, upstream))?;
    let mut reader = ResponseReader::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        stream.set_read_timeout(Some(left()?))?;
        let count = match stream.read(&mut chunk) {
            Ok(count) => count,
            // A signal arrived (SIGTERM, say): the deadline still holds, so read on.
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        match reader.push(&chunk[..count]) {
            UpstreamParse::Done(response) => return Ok(response),
            UpstreamParse::Garbage(reason) => return Ok(bad_gateway(reason)),
            UpstreamParse::NeedMore => {}
        }
    }
}

#[cfg(test)]
#[path = "upstream_tests.rs"]
mod tests;
