//! The client half of `/upstream/PATH`: the request we send, and how we read the answer.
//!
//! The chapters differ in how they *wait* for the upstream (a blocking `TcpStream` in
//! chapters 1-3, non-blocking sockets and timers from chapter 4 on), so this module only
//! holds what is the same for all of them: the bytes to send, the parsing of what comes
//! back, and the 502/504 answers.
//!
//! We ask the upstream to close the connection after answering (`Connection: close`), so
//! the answer ends either when its `Content-Length` is reached or at end of file.

use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

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

/// What [`parse_response`] made of the bytes received so far.
#[derive(Debug, PartialEq, Eq)]
pub enum UpstreamParse {
    /// A whole answer, ready to relay to our client.
    Done(Response),
    /// Fine so far; keep reading.
    NeedMore,
    /// Not an HTTP answer we can relay: 502.
    Garbage(&'static str),
}

/// Parses the upstream's answer. `at_eof` says the upstream has closed the connection,
/// which ends a response that has no `Content-Length`.
pub fn parse_response(buffer: &[u8], at_eof: bool) -> UpstreamParse {
    if buffer.len() > MAX_RESPONSE {
        return UpstreamParse::Garbage("the upstream's answer is too large");
    }
    let Some(head_end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if at_eof {
            UpstreamParse::Garbage("the upstream closed before a whole response head")
        } else {
            UpstreamParse::NeedMore
        };
    };
    let Ok(head) = std::str::from_utf8(&buffer[..head_end]) else {
        return UpstreamParse::Garbage("the upstream's response head is not text");
    };
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    // "HTTP/1.1 200 OK": the status is the three digits after the version.
    let status = match status_line.split(' ').collect::<Vec<_>>().as_slice() {
        [version, code, ..] if version.starts_with("HTTP/1.") && code.len() == 3 => code
            .parse::<u16>()
            .ok()
            .filter(|code| (100..600).contains(code)),
        _ => None,
    };
    let Some(status) = status else {
        return UpstreamParse::Garbage("the upstream's status line is malformed");
    };
    let mut content_type = "application/octet-stream".to_string();
    let mut content_length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return UpstreamParse::Garbage("the upstream sent a malformed header");
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-type")
            && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        {
            content_type = value.to_string();
        } else if name.eq_ignore_ascii_case("content-length") {
            match value.parse::<usize>() {
                Ok(length) => content_length = Some(length),
                Err(_) => return UpstreamParse::Garbage("the upstream's Content-Length is bad"),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return UpstreamParse::Garbage("chunked upstream answers are not supported");
        }
    }
    let body = &buffer[head_end + 4..];
    let body = match content_length {
        Some(length) if body.len() >= length => &body[..length],
        Some(_) if at_eof => return UpstreamParse::Garbage("the upstream's answer was cut short"),
        None if at_eof => body,
        _ => return UpstreamParse::NeedMore,
    };
    UpstreamParse::Done(Response {
        status,
        content_type: Cow::Owned(content_type),
        body: Body::Owned(body.to_vec()),
        allow: None,
        close: false,
    })
}

/// Fetches from the upstream with blocking calls, as chapters 1-3 do: the whole server
/// waits while this runs. Every step has a deadline, so the wait ends after [`TIMEOUT`].
pub fn fetch_blocking(upstream: SocketAddr, path_and_query: &str) -> Response {
    let deadline = Instant::now() + TIMEOUT;
    match try_fetch_blocking(upstream, path_and_query, deadline) {
        Ok(response) => response,
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ) =>
        {
            gateway_timeout()
        }
        Err(_) => bad_gateway("could not reach the upstream"),
    }
}

fn try_fetch_blocking(
    upstream: SocketAddr,
    path_and_query: &str,
    deadline: Instant,
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
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        stream.set_read_timeout(Some(left()?))?;
        let count = stream.read(&mut chunk)?;
        buffer.extend_from_slice(&chunk[..count]);
        match parse_response(&buffer, count == 0) {
            UpstreamParse::Done(response) => return Ok(response),
            UpstreamParse::Garbage(reason) => return Ok(bad_gateway(reason)),
            UpstreamParse::NeedMore => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_answers() {
        let done = |bytes: &[u8], eof| match parse_response(bytes, eof) {
            UpstreamParse::Done(response) => response,
            other => panic!("{other:?}"),
        };
        let response = done(
            b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Type: text/x\r\n\r\nhi",
            false,
        );
        assert_eq!(
            (response.status, response.body.as_bytes()),
            (201, &b"hi"[..])
        );
        assert_eq!(response.content_type, "text/x");
        assert_eq!(
            done(b"HTTP/1.0 200 OK\r\n\r\nuntil eof", true)
                .body
                .as_bytes(),
            b"until eof"
        );
        assert_eq!(
            parse_response(b"HTTP/1.0 200 OK\r\n\r\nuntil", false),
            UpstreamParse::NeedMore
        );
        assert!(matches!(
            parse_response(b"SSH-2.0-OpenSSH\r\n", true),
            UpstreamParse::Garbage(_)
        ));
        assert!(matches!(
            parse_response(b"HTTP/1.1 abc\r\n\r\n", false),
            UpstreamParse::Garbage(_)
        ));
        assert!(matches!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", true),
            UpstreamParse::Garbage(_)
        ));
    }
}
