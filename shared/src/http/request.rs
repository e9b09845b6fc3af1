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
    Complete {
        request: Request<'a>,
        consumed: usize,
    },
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
    content_length: Option<u64>,
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
    // Only the first MAX_HEAD bytes may hold the head; looking further would let a client
    // make us scan (and buffer) without limit.
    let window_end = buffer.len().min(start + MAX_HEAD);
    let mut position = start;
    let mut request_line = None;
    let mut facts = HeaderFacts::default();
    let mut header_count = 0;

    let head_end = loop {
        let Some(newline) = buffer[position..window_end]
            .iter()
            .position(|&b| b == b'\n')
        else {
            // No complete line yet. Reject what is already hopeless (a TLS handshake, binary
            // garbage) now rather than waiting for 8 KiB of it.
            if request_line.is_none() {
                check_partial_request_line(&buffer[position..window_end])?;
            }
            if buffer.len() - start >= MAX_HEAD {
                return Err(match request_line {
                    None => invalid(414, "request line too long"),
                    Some(_) => invalid(431, "request head over 8 KiB"),
                });
            }
            return Ok(None);
        };
        let line = &buffer[position..position + newline];
        position += newline + 1;
        let Some(line) = line.strip_suffix(b"\r") else {
            return Err(invalid(400, "bare LF line ending"));
        };
        if line.contains(&b'\r') {
            return Err(invalid(400, "bare CR in the request head"));
        }
        if request_line.is_none() {
            request_line = Some(parse_request_line(line)?);
        } else if line.is_empty() {
            break position;
        } else {
            header_count += 1;
            if header_count > MAX_HEADERS {
                return Err(invalid(431, "more than 100 header fields"));
            }
            parse_header(line, &mut facts)?;
        }
    };
    let (method, target, version) = request_line.expect("the loop parses the request line first");

    if version == Version::Http11 && facts.hosts != 1 {
        return Err(invalid(
            400,
            "an HTTP/1.1 request needs exactly one Host header",
        ));
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
    let body_length = match facts.content_length {
        Some(length) if length > MAX_BODY as u64 => {
            return Err(invalid(413, "request body over 1 MiB"))
        }
        Some(length) => length as usize,
        None => 0,
    };
    if buffer.len() - head_end < body_length {
        return Ok(None); // the head is fine, the body is still on its way
    }
    let (path, query) = split_target(target)?;
    let keep_alive = match version {
        Version::Http11 => !facts.close,
        Version::Http10 => facts.keep_alive && !facts.close,
    };
    let request = Request {
        method,
        path,
        query,
        version,
        content_length: facts.content_length.map(|length| length as usize),
        keep_alive,
        body: &buffer[head_end..head_end + body_length],
    };
    Ok(Some((request, head_end + body_length)))
}

/// `tchar` from RFC 9110: the characters allowed in a method or a header name.
fn is_token_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// A request line that has not ended yet can still be judged by its method: it must be
/// token characters up to the first space.
fn check_partial_request_line(partial: &[u8]) -> Result<(), ParseError> {
    let method = partial.split(|&b| b == b' ').next().unwrap_or_default();
    if method.iter().all(|&b| is_token_char(b) || b == b'\r') {
        Ok(())
    } else {
        Err(invalid(400, "malformed request line"))
    }
}

/// `GET /path?query HTTP/1.1`: exactly two single spaces, nothing else.
fn parse_request_line(line: &[u8]) -> Result<(&str, &str, Version), ParseError> {
    let malformed = invalid(400, "malformed request line");
    let mut parts = line.splitn(3, |&b| b == b' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed);
    };
    if method.is_empty() || !method.iter().all(|&b| is_token_char(b)) {
        return Err(malformed);
    }
    // Only visible ASCII in a target: no spaces, no control bytes, no raw UTF-8.
    if target.is_empty() || !target.iter().all(|b| b.is_ascii_graphic()) {
        return Err(malformed);
    }
    let version = match version {
        b"HTTP/1.1" => Version::Http11,
        b"HTTP/1.0" => Version::Http10,
        // A later 1.x is read as 1.1 (RFC 9110 section 2.5: same major version, so the
        // same message syntax); another major version is one we don't speak.
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor] if minor.is_ascii_digit() => {
            Version::Http11
        }
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Err(invalid(505, "HTTP version not supported"))
        }
        _ => return Err(malformed),
    };
    // Both were checked to be ASCII above, so these conversions cannot fail.
    let method = std::str::from_utf8(method).map_err(|_| malformed)?;
    let target = std::str::from_utf8(target).map_err(|_| malformed)?;
    Ok((method, target, version))
}

/// `Name: value`, with optional spaces or tabs around the value and none before the colon.
fn parse_header(line: &[u8], facts: &mut HeaderFacts) -> Result<(), ParseError> {
    if line[0] == b' ' || line[0] == b'\t' {
        // "obs-fold": a continuation of the previous header. Obsolete, and a smuggling risk.
        return Err(invalid(400, "obsolete line folding"));
    }
    let colon = line.iter().position(|&b| b == b':');
    let Some(colon) = colon else {
        return Err(invalid(400, "header line without a colon"));
    };
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_token_char(b)) {
        // This also catches "Host : x", a space before the colon, which RFC 9112 says
        // a server MUST reject.
        return Err(invalid(400, "malformed header name"));
    }
    let value = line[colon + 1..].trim_ascii();
    // Field values may hold visible ASCII, spaces, tabs and (obsolete but allowed) bytes
    // over 127. NUL and the other control bytes are never allowed.
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(invalid(400, "control character in a header value"));
    }

    if name.eq_ignore_ascii_case(b"host") {
        // `Host: name[:port]` (RFC 9112 section 3.2: anything else is a 400). A space, a
        // slash or an `@` in it would be a way to confuse whoever routes by this header.
        let host_char = |b: &u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:%[]".contains(b);
        if !value.iter().all(host_char) {
            return Err(invalid(400, "malformed Host header"));
        }
        facts.hosts += 1;
    } else if name.eq_ignore_ascii_case(b"content-length") {
        if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
            return Err(invalid(400, "Content-Length must be digits"));
        }
        let length = std::str::from_utf8(value)
            .ok()
            .and_then(|digits| digits.parse::<u64>().ok())
            .unwrap_or(u64::MAX); // only digits, so a failure means "too big to count"
        if facts
            .content_length
            .is_some_and(|earlier| earlier != length)
        {
            return Err(invalid(400, "Content-Length headers disagree"));
        }
        facts.content_length = Some(length);
    } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
        let last = value
            .rsplit(|&b| b == b',')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        facts.transfer_encoding = Some(last.eq_ignore_ascii_case(b"chunked"));
    } else if name.eq_ignore_ascii_case(b"connection") {
        for option in value.split(|&b| b == b',') {
            let option = option.trim_ascii();
            facts.close |= option.eq_ignore_ascii_case(b"close");
            facts.keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    Ok(())
}

/// Splits a request target into path and query. Accepts the usual `/path?query` and the
/// absolute form `http://host/path` that RFC 9112 says servers must accept too.
fn split_target(target: &str) -> Result<(&str, &str), ParseError> {
    let path_and_query = if target.starts_with('/') {
        target
    } else if target == "*" {
        "*" // `OPTIONS *`: a valid form, and no route of ours
    } else if let Some(rest) = strip_prefix_ignore_case(target, "http://") {
        rest.find('/').map_or("/", |slash| &rest[slash..])
    } else {
        return Err(invalid(400, "malformed request target"));
    };
    let without_fragment = path_and_query.split('#').next().unwrap_or_default();
    Ok(without_fragment
        .split_once('?')
        .unwrap_or((without_fragment, "")))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(bytes: &[u8]) -> (Request<'_>, usize) {
        match parse(bytes) {
            Parse::Complete { request, consumed } => (request, consumed),
            other => panic!("expected a complete request, got {other:?}"),
        }
    }

    fn status(bytes: &[u8]) -> u16 {
        match parse(bytes) {
            Parse::Invalid(error) => error.status,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn a_simple_get() {
        let bytes = b"GET /sleep?ms=5 HTTP/1.1\r\nHost: x\r\n\r\n";
        let (request, consumed) = complete(bytes);
        assert_eq!(consumed, bytes.len());
        assert_eq!(request.method, "GET");
        assert_eq!(request.path, "/sleep");
        assert_eq!(request.query_param("ms"), Some("5"));
        assert!(request.keep_alive);
    }

    #[test]
    fn every_prefix_is_incomplete() {
        let bytes = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
        for end in 0..bytes.len() {
            assert_eq!(
                parse(&bytes[..end]),
                Parse::Incomplete,
                "prefix of {end} bytes"
            );
        }
        assert_eq!(complete(bytes).0.body, b"hello");
    }

    #[test]
    fn pipelined_requests_are_consumed_one_at_a_time() {
        let bytes = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
        let (first, consumed) = complete(bytes);
        assert_eq!(first.path, "/a");
        assert_eq!(complete(&bytes[consumed..]).0.path, "/b");
    }

    #[test]
    fn keep_alive_rules() {
        assert!(!complete(b"GET / HTTP/1.0\r\n\r\n").0.keep_alive);
        assert!(
            complete(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                .0
                .keep_alive
        );
        assert!(
            !complete(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .0
                .keep_alive
        );
    }

    #[test]
    fn rejections() {
        assert_eq!(status(b"GET / HTTP/1.1\nHost: x\n\n"), 400); // bare LF
        assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), 400); // no Host
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost : x\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"), 400);
        assert_eq!(status(b"GET /  HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/2.0\r\n\r\n"), 505);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), 400);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), 400);
        let (request, _) = complete(b"GET / HTTP/1.2\r\nHost: [::1]:80\r\n\r\n");
        assert_eq!(request.version, Version::Http11);
        assert_eq!(status(b"\x16\x03\x01\x02\x00\x01"), 400); // a TLS ClientHello
        let cl =
            |value: &str| format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {value}\r\n\r\n");
        assert_eq!(status(cl("-1").as_bytes()), 400);
        assert_eq!(status(cl("1 2").as_bytes()), 400);
        assert_eq!(status(cl("2000000").as_bytes()), 413);
        assert_eq!(status(cl("99999999999999999999999").as_bytes()), 413);
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            400
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
            501
        );
    }

    #[test]
    fn limits() {
        let long_target = format!("GET /{} HTTP/1.1\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(status(long_target.as_bytes()), 414);
        let many = format!(
            "GET / HTTP/1.1\r\nHost: x\r\n{}\r\n",
            "A: b\r\n".repeat(101)
        );
        assert_eq!(status(many.as_bytes()), 431);
        let big = format!(
            "GET / HTTP/1.1\r\nHost: x\r\nA: {}\r\n\r\n",
            "b".repeat(MAX_HEAD)
        );
        assert_eq!(status(big.as_bytes()), 431);
    }
}
