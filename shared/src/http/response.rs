//! A response, and how it becomes bytes on the wire.
//!
//! The whole response, head and body, is written into one buffer so that a chapter can
//! send it with as few `write` calls as the kernel allows: one, usually.

use std::borrow::Cow;
use std::io::Write;

use super::request::{ParseError, Request, Version};

/// A response body. `Static` costs no allocation, which keeps `/hello` allocation-free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Static(&'static [u8]),
    Owned(Vec<u8>),
    /// A body of this many bytes that the chapter sends itself, after the head: a file
    /// sent a piece at a time (chapter 6). `write_response` writes only the head.
    Streamed(u64),
}

impl Body {
    /// The bytes to send with the head: all of them, or none for a `Streamed` body.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Body::Static(bytes) => bytes,
            Body::Owned(bytes) => bytes,
            Body::Streamed(_) => &[],
        }
    }

    /// The body's length, for `Content-Length`.
    pub fn len(&self) -> u64 {
        match self {
            Body::Streamed(length) => *length,
            other => other.as_bytes().len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: Cow<'static, str>,
    pub body: Body,
    /// The methods a 405 answer allows (`Allow: GET, HEAD`).
    pub allow: Option<&'static str>,
    /// The connection must close after this response, whatever the client asked for.
    /// True for answers to malformed requests: after a framing error we cannot know where
    /// the next request would begin.
    pub close: bool,
}

impl Response {
    /// A `text/plain` response.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: Cow::Borrowed("text/plain; charset=utf-8"),
            body: Body::Owned(body.into().into_bytes()),
            allow: None,
            close: false,
        }
    }

    /// A short error page, such as `404 Not Found` followed by a detail line.
    pub fn error(status: u16, detail: &str) -> Response {
        Response::text(status, format!("{status} {}\n{detail}\n", reason_phrase(status)))
    }

    /// The answer to a request the parser rejected: the error, and close.
    pub fn from_parse_error(error: ParseError) -> Response {
        Response { close: true, ..Response::error(error.status, error.reason) }
    }
}

/// How a response is framed on its connection: what the request asked for, and whether
/// the server keeps the connection open afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framing {
    /// The request's HTTP version: HTTP/1.0 must be told `Connection: keep-alive`.
    pub version: Version,
    /// Will the server keep the connection open after this response?
    pub keep_alive: bool,
    /// A `HEAD` request: the same head as `GET`, no body.
    pub head_only: bool,
}

impl Framing {
    /// For the answer to a request the parser rejected: we cannot trust anything it said,
    /// so HTTP/1.1, with a body, and close.
    pub const CLOSE: Framing =
        Framing { version: Version::Http11, keep_alive: false, head_only: false };

    /// What `request` asks for. The server may still decide to close (`keep_alive`).
    pub fn for_request(request: &Request) -> Framing {
        Framing {
            version: request.version,
            keep_alive: request.keep_alive,
            head_only: request.method == "HEAD",
        }
    }
}

/// Appends `response` as bytes to `out`, with `Server: {server}` and `Date: {date}`. `out`
/// is the connection's output buffer (a `Vec<u8>`, or from chapter 3 a pooled
/// [`Buffer`](crate::buffer::Buffer)), so this allocates nothing once it has room.
pub fn write_response(
    out: &mut impl Write, response: &Response, framing: &Framing, server: &str, date: &str,
) {
    let body = response.body.as_bytes();
    // Writing into memory cannot fail, so the results below are ignored on purpose.
    let _ = write!(
        out,
        "HTTP/1.1 {} {}\r\nServer: {}\r\nDate: {}\r\n",
        response.status,
        reason_phrase(response.status),
        server,
        date,
    );
    // A 204 or 304 (relayed from the upstream) ends with its head: the client reads no
    // body whatever we say, so we say nothing. A `Content-Length` there would even be
    // wrong: RFC 9110 forbids it in a 204.
    let bodyless = never_has_body(response.status);
    if !bodyless {
        let _ = write!(
            out,
            "Content-Type: {}\r\nContent-Length: {}\r\n",
            response.content_type,
            response.body.len()
        );
    }
    if let Some(allow) = response.allow {
        let _ = write!(out, "Allow: {allow}\r\n");
    }
    if !framing.keep_alive {
        let _ = out.write_all(b"Connection: close\r\n");
    } else if framing.version == Version::Http10 {
        let _ = out.write_all(b"Connection: keep-alive\r\n");
    }
    let _ = out.write_all(b"\r\n");
    if !framing.head_only && !bodyless {
        let _ = out.write_all(body);
    }
}

/// Statuses whose responses never have a body: 1xx, 204 and 304 (RFC 9110 section
/// 6.4.1). Their message ends with the head, whatever its headers say.
pub fn never_has_body(status: u16) -> bool {
    matches!(status, 100..=199 | 204 | 304)
}

/// The standard phrase for each status we send, our own or relayed from the upstream
/// (RFC 9110 section 15). The upstream may send any code; one we do not know is
/// "Unknown", which clients ignore anyway: they go by the number.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        // Reserved by RFC 9110, but every upstream that sends it means the joke.
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: &str = "ch00-test";
    const DATE: &str = "Thu, 01 Jan 1970 00:00:00 GMT";

    #[test]
    fn head_and_body() {
        let response = Response::text(200, "hi\n");
        let mut out = Vec::new();
        let framing = Framing { version: Version::Http10, keep_alive: true, head_only: false };
        write_response(&mut out, &response, &framing, SERVER, DATE);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\nServer: ch00-test\r\n"));
        assert!(text.contains("Content-Length: 3\r\n"));
        assert!(text.contains("Connection: keep-alive\r\n"));
        assert!(text.ends_with("\r\n\r\nhi\n"));

        let mut out = Vec::new();
        write_response(
            &mut out,
            &response,
            &Framing { head_only: true, keep_alive: false, ..framing },
            SERVER,
            DATE,
        );
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Content-Length: 3\r\nConnection: close\r\n\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
    }

    /// A relayed 204 or 304 keeps its status and loses its body, its length and its
    /// type: the client expects none of them (and RFC 9110 forbids the length in a 204).
    #[test]
    fn no_content_and_not_modified_have_no_body() {
        let framing = Framing { version: Version::Http11, keep_alive: true, head_only: false };
        for (status, phrase) in [(204, "No Content"), (304, "Not Modified")] {
            let response = Response::text(status, "a body that must not be sent");
            let mut out = Vec::new();
            write_response(&mut out, &response, &framing, SERVER, DATE);
            let text = String::from_utf8(out).unwrap();
            assert!(text.starts_with(&format!("HTTP/1.1 {status} {phrase}\r\n")));
            assert!(!text.contains("Content-Length"), "{text:?}");
            assert!(!text.contains("Content-Type"), "{text:?}");
            assert!(text.ends_with("GMT\r\n\r\n"), "{text:?}");
        }
        assert_eq!(reason_phrase(301), "Moved Permanently");
        assert_eq!(reason_phrase(403), "Forbidden");
        assert_eq!(reason_phrase(299), "Unknown");
    }
}
