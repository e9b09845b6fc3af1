//! A response, and how it becomes bytes on the wire.
//!
//! The whole response, head and body, is written into one buffer so that a chapter can
//! send it with as few `write` calls as the kernel allows: one, usually.

use std::borrow::Cow;
use std::io::Write;

use super::request::{ParseError, Version};

/// A response body. `Static` costs no allocation, which keeps `/hello` allocation-free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Static(&'static [u8]),
    Owned(Vec<u8>),
}

impl Body {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Body::Static(bytes) => bytes,
            Body::Owned(bytes) => bytes,
        }
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
        Response::text(
            status,
            format!("{status} {}\n{detail}\n", reason_phrase(status)),
        )
    }

    /// The answer to a request the parser rejected: the error, and close.
    pub fn from_parse_error(error: ParseError) -> Response {
        Response {
            close: true,
            ..Response::error(error.status, error.reason)
        }
    }
}

/// How the response is framed for this connection.
#[derive(Clone, Copy, Debug)]
pub struct Framing<'a> {
    /// `Server:` header: the chapter's name.
    pub server: &'a str,
    /// `Date:` header, already formatted (see [`super::date`]).
    pub date: &'a str,
    /// The request's HTTP version: HTTP/1.0 must be told `Connection: keep-alive`.
    pub version: Version,
    /// Will the server keep the connection open after this response?
    pub keep_alive: bool,
    /// A `HEAD` request: the same head as `GET`, no body.
    pub head_only: bool,
}

/// Appends `response` as bytes to `out`. `out` is the connection's output buffer, reused
/// from one response to the next, so once it has grown this allocates nothing.
pub fn write_response(out: &mut Vec<u8>, response: &Response, framing: &Framing) {
    let body = response.body.as_bytes();
    // Writing into a Vec cannot fail, so the results below are ignored on purpose.
    let _ = write!(
        out,
        "HTTP/1.1 {} {}\r\nServer: {}\r\nDate: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        response.status,
        reason_phrase(response.status),
        framing.server,
        framing.date,
        response.content_type,
        body.len()
    );
    if let Some(allow) = response.allow {
        let _ = write!(out, "Allow: {allow}\r\n");
    }
    if !framing.keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if framing.version == Version::Http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !framing.head_only {
        out.extend_from_slice(body);
    }
}

/// The standard phrase for each status we send.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
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

    #[test]
    fn head_and_body() {
        let response = Response::text(200, "hi\n");
        let mut out = Vec::new();
        let framing = Framing {
            server: "ch00-test",
            date: "Thu, 01 Jan 1970 00:00:00 GMT",
            version: Version::Http10,
            keep_alive: true,
            head_only: false,
        };
        write_response(&mut out, &response, &framing);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\nServer: ch00-test\r\n"));
        assert!(text.contains("Content-Length: 3\r\n"));
        assert!(text.contains("Connection: keep-alive\r\n"));
        assert!(text.ends_with("\r\n\r\nhi\n"));

        let mut out = Vec::new();
        write_response(
            &mut out,
            &response,
            &Framing {
                head_only: true,
                keep_alive: false,
                ..framing
            },
        );
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Content-Length: 3\r\nConnection: close\r\n\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
    }
}
