//! An incremental HTTP/1.1 request parser (RFC 9112).
//!
//! "Incremental" means you may call [`parse`] on whatever has arrived so far, as often as
//! you like. It never remembers anything between calls: it looks at the whole buffer each
//! time and answers one of three things ([`Parse`]):
//!
//! - `Complete`: a whole request (head and body) is at the start of the buffer, and it
//!   took `consumed` bytes. Anything after them is the next, pipelined request.
//! - `Incomplete`: nothing is wrong yet, but the request is not all here. Read more.
//! - `Invalid`: the bytes break HTTP's rules. Answer with that status and close, because
//!   after a framing error we can no longer tell where the next request would start.
//!
//! The parsed [`Request`] borrows from the buffer instead of copying: no allocation per
//! request, which matters on the benchmark path.
//!
//! Being strict is a security feature. Lenient parsers that accept a bare LF, a space
//! before a colon or two `Content-Length`s are how "request smuggling" happens: a proxy and
//! a server disagree on where one request ends. We reject all of those with a 400.
//!
//! It is also strict *early*: a request that can never become valid is refused at the
//! byte that makes it so (the `5` of `HTTP/5`, a CR followed by anything but LF, the digit
//! that takes a `Content-Length` over the limit), not when its head is complete. Otherwise
//! a client could hold a connection with a head that is already broken, until a timeout
//! closes it or, in a chapter without timers, forever. So each line is judged as far as it
//! has arrived, by the same rules whether its end is here or not: each byte either fits
//! the start of a valid line or rules the line out, as in strict parsers such as llhttp
//! and httparse. The first wrong byte decides the answer; no byte after it can change it.

/// The most bytes the request line and headers may take (the contract's 8 KiB).
pub const MAX_HEAD: usize = 8 * 1024;
/// The most header lines a request may have.
pub const MAX_HEADERS: usize = 100;
/// The largest request body we accept (`POST /echo`); more is 413.
pub const MAX_BODY: usize = 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// A parsed request. Everything borrows from the receive buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The method token as sent, such as `GET` (methods are case-sensitive).
    pub method: &'a str,
    /// The path part of the target, still percent-encoded: `/files/a%20b.txt`.
    pub path: &'a str,
    /// What follows `?` in the target, or `""`.
    pub query: &'a str,
    pub version: Version,
    /// `Content-Length`, if the request had one.
    pub content_length: Option<usize>,
    /// Does the client want the connection kept open after the response? HTTP/1.1 says
    /// yes unless `Connection: close`; HTTP/1.0 says no unless `Connection: keep-alive`.
    pub keep_alive: bool,
    pub body: &'a [u8],
}

impl<'a> Request<'a> {
    /// The value of `name` in the query string (`/sleep?ms=100` has `ms` = `100`).
    pub fn query_param(&self, name: &str) -> Option<&'a str> {
        self.query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then_some(value)
        })
    }
}

/// Why a request was rejected, and the status to answer with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub status: u16,
    pub reason: &'static str,
}

// ANCHOR: parse_result
#[derive(Debug, PartialEq, Eq)]
pub enum Parse<'a> {
    Complete { request: Request<'a>, consumed: usize },
    Incomplete,
    Invalid(ParseError),
}
// ANCHOR_END: parse_result

fn invalid(status: u16, reason: &'static str) -> ParseError {
    ParseError { status, reason }
}

/// Parses the request at the start of `buffer`. See the module documentation.
pub fn parse(buffer: &[u8]) -> Parse<'_> {
    match parse_request(buffer) {
        Ok(Some((request, consumed))) => Parse::Complete { request, consumed },
        Ok(None) => Parse::Incomplete,
        Err(error) => Parse::Invalid(error),
    }
}

/// What the headers told us, gathered while reading them.
#[derive(Default)]
struct HeaderFacts {
    hosts: usize,
    content_length: Option<usize>,
    transfer_encoding: Option<bool>, // Some(is the last coding "chunked"?)
    close: bool,
    keep_alive: bool,
}

fn parse_request(buffer: &[u8]) -> Result<Option<(Request<'_>, usize)>, ParseError> {
    // RFC 9112 section 2.2: a server SHOULD ignore empty lines before the request line
    // (some clients send a stray CRLF after a POST body).
    let mut start = 0;
    while buffer[start..].starts_with(b"\r\n") && start < MAX_HEAD {
        start += 2;
    }
    if buffer[start..] == *b"\r" && start < MAX_HEAD {
        return Ok(None); // perhaps the first half of one more empty line
    }
    // Only the first MAX_HEAD bytes may hold the head; looking further would let a client
    // make us scan (and buffer) without limit.
    let window_end = buffer.len().min(start + MAX_HEAD);
    let mut position = start;
    let mut request_line = None;
    let mut facts = HeaderFacts::default();
    let mut header_count = 0;

    let head_end = loop {
        let (text, end) = next_line(&buffer[position..window_end]);
        // Judge the line as far as it has arrived, whether or not its end is here yet (see
        // "strict early" in the module documentation). The checks are the same either
        // way; `whole` only tells them whether more text may still come: once a CR or LF
        // follows it, none can.
        let whole = end != LineEnd::NotYet;
        if position == start {
            request_line = parse_request_line(text, whole)?;
        } else if !text.is_empty() {
            header_count += 1;
            if header_count > MAX_HEADERS {
                return Err(invalid(431, "more than 100 header fields"));
            }
            parse_header(text, whole, &mut facts)?;
        }
        match end {
            LineEnd::CrLf => position += text.len() + 2,
            LineEnd::Broken(reason) => return Err(invalid(400, reason)),
            LineEnd::NotYet | LineEnd::HalfWay => {
                // Nothing is wrong so far, but the line is not all here.
                if buffer.len() - start >= MAX_HEAD {
                    return Err(if position == start {
                        invalid(414, "request line too long")
                    } else {
                        invalid(431, "request head over 8 KiB")
                    });
                }
                return Ok(None);
            }
        }
        if text.is_empty() {
            break position; // the empty line that ends the head
        }
    };
    let (method, target, version) = request_line.expect("the loop parses the request line first");

    if version == Version::Http11 && facts.hosts != 1 {
        return Err(invalid(400, "an HTTP/1.1 request needs exactly one Host header"));
    }
    if let Some(chunked) = facts.transfer_encoding {
        // Two ways to say where the body ends is the classic smuggling trick.
        if facts.content_length.is_some() {
            return Err(invalid(400, "both Content-Length and Transfer-Encoding"));
        }
        if version == Version::Http10 || !chunked {
            return Err(invalid(400, "bad Transfer-Encoding"));
        }
        return Err(invalid(501, "chunked request bodies are not supported"));
    }
    // At most MAX_BODY: `content_length` refused anything more.
    let body_length = facts.content_length.unwrap_or(0);
    if buffer.len() - head_end < body_length {
        return Ok(None); // the head is fine, the body is still on its way
    }
    let (path, query) = split_target(target);
    let keep_alive = match version {
        Version::Http11 => !facts.close,
        Version::Http10 => facts.keep_alive && !facts.close,
    };
    let request = Request {
        method,
        path,
        query,
        version,
        content_length: facts.content_length,
        keep_alive,
        body: &buffer[head_end..head_end + body_length],
    };
    Ok(Some((request, head_end + body_length)))
}

/// What follows a line's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineEnd {
    /// Nothing yet: more text may come.
    NotYet,
    /// A CR, the last byte received. Its LF should be on its way.
    HalfWay,
    /// CR LF: the line is whole.
    CrLf,
    /// A bare LF, or a CR followed by anything but LF. RFC 9112 section 2.2 allows
    /// nothing but CR LF, and a server that took a bare LF as a line end would disagree
    /// with a proxy that does not about where a header ends.
    Broken(&'static str),
}

/// The line at the start of `bytes`, as much of it as has arrived: its text (everything
/// before the first CR or LF) and what follows that.
fn next_line(bytes: &[u8]) -> (&[u8], LineEnd) {
    let length = bytes.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(bytes.len());
    let end = match &bytes[length..] {
        [] => LineEnd::NotYet,
        [b'\r'] => LineEnd::HalfWay,
        [b'\r', b'\n', ..] => LineEnd::CrLf,
        [b'\n', ..] => LineEnd::Broken("bare LF line ending"),
        _ => LineEnd::Broken("bare CR in the request head"),
    };
    (&bytes[..length], end)
}

/// `tchar` from RFC 9110: the characters allowed in a method or a header name.
fn is_token_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// `GET /path?query HTTP/1.1`: exactly two single spaces, nothing else. Until the line is
/// `whole`, its text is checked as the start of one, and the answer is `Ok(None)` if
/// nothing in it is wrong yet.
fn parse_request_line(
    text: &[u8], whole: bool,
) -> Result<Option<(&str, &str, Version)>, ParseError> {
    let malformed = invalid(400, "malformed request line");
    let mut parts = text.splitn(3, |&b| b == b' ');
    let method = parts.next().unwrap_or_default(); // even "" has one part
    let target = parts.next();
    let version = parts.next();
    // Each part is checked as soon as its bytes arrive; it is whole once a space follows
    // it, or the line ends.
    let method_is_whole = target.is_some() || whole;
    if !method.iter().all(|&b| is_token_char(b)) || (method_is_whole && method.is_empty()) {
        return Err(malformed);
    }
    if let Some(target) = target {
        check_target(target, version.is_some() || whole)?;
    }
    let version = match version {
        Some(version) => check_version(version, whole)?,
        None => None,
    };
    if !whole {
        return Ok(None);
    }
    let (Some(target), Some(version)) = (target, version) else {
        return Err(malformed); // `GET /hello` and nothing more is HTTP/0.9
    };
    // Both were checked to be ASCII above, so these conversions cannot fail.
    let method = std::str::from_utf8(method).map_err(|_| malformed)?;
    let target = std::str::from_utf8(target).map_err(|_| malformed)?;
    Ok(Some((method, target, version)))
}

/// A request target has only visible ASCII (no spaces, no control bytes, no raw UTF-8),
/// in one of the forms RFC 9112 says a server must accept: `/path?query`, the absolute
/// `http://host/path`, or `*` (as in `OPTIONS *`). Until it is `whole`, its start is
/// checked.
fn check_target(target: &[u8], whole: bool) -> Result<(), ParseError> {
    if !target.iter().all(u8::is_ascii_graphic) {
        return Err(invalid(400, "malformed request line"));
    }
    const SCHEME: &[u8] = b"http://";
    let fits = match target.first() {
        None => !whole,
        Some(b'/') => true,
        Some(b'*') => target.len() == 1,
        // The scheme is case-insensitive, and may be all we have of it so far.
        Some(_) => {
            let scheme = &target[..target.len().min(SCHEME.len())];
            scheme.eq_ignore_ascii_case(&SCHEME[..scheme.len()])
                && (scheme.len() == SCHEME.len() || !whole)
        }
    };
    if fits {
        Ok(())
    } else {
        Err(invalid(400, "malformed request target"))
    }
}

/// `HTTP/1.1`, judged a byte at a time: `HTTP/`, a digit, `.`, a digit, and nothing more.
/// `Ok(None)` until it is `whole`.
fn check_version(version: &[u8], whole: bool) -> Result<Option<Version>, ParseError> {
    let malformed = invalid(400, "malformed request line");
    for (index, &byte) in version.iter().enumerate() {
        let fits = match index {
            0..=4 => byte == b"HTTP/"[index],
            5 | 7 => byte.is_ascii_digit(),
            6 => byte == b'.',
            _ => false,
        };
        if !fits {
            return Err(malformed);
        }
        // Another major version is one we don't speak, and its digit already says so.
        if index == 5 && byte != b'1' {
            return Err(invalid(505, "HTTP version not supported"));
        }
    }
    if !whole {
        Ok(None)
    } else if version == b"HTTP/1.0" {
        Ok(Some(Version::Http10))
    } else if version.len() == 8 {
        // HTTP/1.1, or a later 1.x, read as 1.1 (RFC 9110 section 2.5: the same major
        // version, so the same message syntax).
        Ok(Some(Version::Http11))
    } else {
        Err(malformed) // cut short, like `HTTP/1.`
    }
}

/// `Name: value`, with optional spaces or tabs around the value and none before the colon.
/// Until the line is `whole`, its text is checked as the start of one, and nothing is
/// recorded in `facts`.
fn parse_header(text: &[u8], whole: bool, facts: &mut HeaderFacts) -> Result<(), ParseError> {
    if text.starts_with(b" ") || text.starts_with(b"\t") {
        // "obs-fold": a continuation of the previous header. Obsolete, and a smuggling risk.
        return Err(invalid(400, "obsolete line folding"));
    }
    // Until the colon arrives, all of the text is name.
    let colon = text.iter().position(|&b| b == b':');
    let name = &text[..colon.unwrap_or(text.len())];
    if !name.iter().all(|&b| is_token_char(b)) {
        // This also catches "Host : x", a space before the colon, which RFC 9112 says
        // a server MUST reject.
        return Err(invalid(400, "malformed header name"));
    }
    let Some(colon) = colon else {
        if whole {
            return Err(invalid(400, "header line without a colon"));
        }
        return Ok(());
    };
    if name.is_empty() {
        return Err(invalid(400, "malformed header name"));
    }
    let value = text[colon + 1..].trim_ascii();
    let is = |wanted: &[u8]| name.eq_ignore_ascii_case(wanted);

    // Content-Length goes first: it is read a digit at a time, and a digit that takes it
    // over the limit is a 413 whatever comes after it.
    let length = if is(b"content-length") { content_length(value)? } else { None };
    // Field values may hold visible ASCII, spaces, tabs and (obsolete but allowed) bytes
    // over 127. NUL and the other control bytes are never allowed.
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(invalid(400, "control character in a header value"));
    }
    // `Host: name[:port]` (RFC 9112 section 3.2: anything else is a 400). A space, a slash
    // or an `@` in it would be a way to confuse whoever routes by this header.
    let host_char = |b: &u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:%[]".contains(b);
    if is(b"host") && !value.iter().all(host_char) {
        return Err(invalid(400, "malformed Host header"));
    }
    if !whole {
        return Ok(()); // what the header means can wait for all of its value
    }

    if is(b"host") {
        facts.hosts += 1;
    } else if is(b"content-length") {
        let Some(length) = length else {
            return Err(invalid(400, "Content-Length must be digits")); // it is empty
        };
        if facts.content_length.is_some_and(|earlier| earlier != length) {
            return Err(invalid(400, "Content-Length headers disagree"));
        }
        facts.content_length = Some(length);
    } else if is(b"transfer-encoding") {
        let last = value.rsplit(|&b| b == b',').next().unwrap_or_default().trim_ascii();
        facts.transfer_encoding = Some(last.eq_ignore_ascii_case(b"chunked"));
    } else if is(b"connection") {
        for option in value.split(|&b| b == b',') {
            let option = option.trim_ascii();
            facts.close |= option.eq_ignore_ascii_case(b"close");
            facts.keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    Ok(())
}

/// A `Content-Length` value, read a digit at a time; `Ok(None)` while no digit has arrived.
/// A byte that is not a digit is a 400. A digit that takes the length over [`MAX_BODY`] is
/// a 413 at once: more digits could only make it larger, so there is nothing to wait for,
/// and no value is ever too big to count.
fn content_length(value: &[u8]) -> Result<Option<usize>, ParseError> {
    let mut length = None;
    for &byte in value {
        if !byte.is_ascii_digit() {
            return Err(invalid(400, "Content-Length must be digits"));
        }
        let so_far = length.unwrap_or(0) * 10 + usize::from(byte - b'0');
        if so_far > MAX_BODY {
            return Err(invalid(413, "request body over 1 MiB"));
        }
        length = Some(so_far);
    }
    Ok(length)
}

/// Splits a request target (of a form [`check_target`] accepted) into path and query.
fn split_target(target: &str) -> (&str, &str) {
    let path_and_query = match strip_prefix_ignore_case(target, "http://") {
        // The absolute form: the path begins at the first slash after the host.
        Some(rest) => rest.find('/').map_or("/", |slash| &rest[slash..]),
        // `/path?query`, or `*` (a valid form, and no route of ours).
        None => target,
    };
    let without_fragment = path_and_query.split('#').next().unwrap_or_default();
    without_fragment.split_once('?').unwrap_or((without_fragment, ""))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
