//! Unit tests for the request parser (`request.rs`).

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

/// Every prefix of `request` is `Incomplete`, and the whole is `Complete`.
fn incomplete_until_the_end(request: &[u8]) {
    for end in 0..request.len() {
        assert_eq!(
            parse(&request[..end]),
            Parse::Incomplete,
            "prefix of {end} bytes of {:?}",
            String::from_utf8_lossy(request)
        );
    }
    assert_eq!(complete(request).1, request.len());
}

/// `broken` can never become a valid request, and its last byte is the one that makes it
/// so: every shorter prefix is `Incomplete`, and `broken` itself is refused with `status`.
/// So is the request finished with an empty line: the status a complete request gets.
fn refused_at_last_byte(broken: &[u8], status: u16) {
    let shown = String::from_utf8_lossy(broken);
    for end in 0..broken.len() {
        assert_eq!(parse(&broken[..end]), Parse::Incomplete, "prefix of {end} bytes of {shown:?}");
    }
    match parse(broken) {
        Parse::Invalid(error) => assert_eq!(error.status, status, "{shown:?}: {error:?}"),
        other => panic!("{shown:?}: expected {status}, got {other:?}"),
    }
    let finished = [broken, b"\r\n\r\n"].concat();
    match parse(&finished) {
        Parse::Invalid(error) => assert_eq!(error.status, status, "finished {shown:?}"),
        other => panic!("finished {shown:?}: expected {status}, got {other:?}"),
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
    incomplete_until_the_end(bytes);
    assert_eq!(complete(bytes).0.body, b"hello");
}

/// The early checks must not refuse the start of anything valid: every form of target,
/// every version we speak, the limits' edges, whitespace where it is allowed.
#[test]
fn every_prefix_of_odd_but_valid_requests_is_incomplete() {
    let many_headers =
        format!("GET / HTTP/1.1\r\nHost: x\r\n{}\r\n", "A: b\r\n".repeat(MAX_HEADERS - 1));
    let requests: &[&[u8]] = &[
        b"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET http://example.com/a?b HTTP/1.1\r\nHost: example.com:80\r\n\r\n",
        b"GET HTTP://example.com HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
        b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
        b"get /a%20b#frag HTTP/1.0\r\n\r\n",
        b"GET / HTTP/1.9\r\nHost:x\r\nX-Empty:\r\nX-Pad: \t a b \t\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Name: caf\xc3\xa9\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \t 5 \t\r\n\r\nhello",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0000000000000000000000005\r\n\r\nhello",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
        many_headers.as_bytes(),
    ];
    for request in requests {
        incomplete_until_the_end(request);
    }
    let at_the_limit = format!(
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY}\r\n\r\n{}",
        "a".repeat(MAX_BODY)
    );
    assert_eq!(complete(at_the_limit.as_bytes()).0.body.len(), MAX_BODY);
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
    assert!(complete(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").0.keep_alive);
    assert!(!complete(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").0.keep_alive);
}

#[test]
fn targets() {
    let path_and_query = |target: &str| {
        let bytes = format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n");
        let (request, _) = complete(bytes.as_bytes());
        (request.path.to_string(), request.query.to_string())
    };
    let pair = |path: &str, query: &str| (path.to_string(), query.to_string());
    assert_eq!(path_and_query("/a?b=c#d"), pair("/a", "b=c"));
    assert_eq!(path_and_query("http://host/a?b"), pair("/a", "b"));
    assert_eq!(path_and_query("HTTP://host"), pair("/", ""));
    assert_eq!(path_and_query("*"), pair("*", ""));
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
    let cl = |value: &str| format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {value}\r\n\r\n");
    assert_eq!(status(cl("-1").as_bytes()), 400);
    assert_eq!(status(cl("1 2").as_bytes()), 400);
    assert_eq!(status(cl("").as_bytes()), 400);
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
    assert_eq!(status(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"), 501);
}

#[test]
fn limits() {
    let long_target = format!("GET /{} HTTP/1.1\r\n", "a".repeat(MAX_HEAD));
    assert_eq!(status(long_target.as_bytes()), 414);
    let many = format!("GET / HTTP/1.1\r\nHost: x\r\n{}\r\n", "A: b\r\n".repeat(101));
    assert_eq!(status(many.as_bytes()), 431);
    let big = format!("GET / HTTP/1.1\r\nHost: x\r\nA: {}\r\n\r\n", "b".repeat(MAX_HEAD));
    assert_eq!(status(big.as_bytes()), 431);
}

/// A request is refused at the first byte that rules it out, not when its head is done.
#[test]
fn a_broken_request_line_is_refused_at_its_first_wrong_byte() {
    // The method: token characters, then one space.
    refused_at_last_byte(b"G(", 400);
    refused_at_last_byte(b"GE\0", 400);
    refused_at_last_byte(b"G\xc3", 400);
    refused_at_last_byte(b"\x16", 400); // a TLS ClientHello
    refused_at_last_byte(b" ", 400); // no method before the space
    refused_at_last_byte(b"GET\t", 400);
    refused_at_last_byte(b"HTTP/", 400); // a status line, not a request line
                                         // The target: visible ASCII, starting `/`, `http://` or being `*`.
    refused_at_last_byte(b"GET  ", 400); // no target: two spaces
    refused_at_last_byte(b"GET /a\x7f", 400);
    refused_at_last_byte(b"GET /\xc3", 400);
    refused_at_last_byte(b"GET he", 400); // `h` may begin `http://`, `he` not
    refused_at_last_byte(b"GET http:/x", 400);
    refused_at_last_byte(b"GET **", 400);
    // The version, typed a byte at a time.
    refused_at_last_byte(b"GET / HTTX", 400);
    refused_at_last_byte(b"GET / h", 400); // the version is case-sensitive
    refused_at_last_byte(b"GET / HTTP/5", 505);
    refused_at_last_byte(b"GET / HTTP/2", 505);
    refused_at_last_byte(b"GET / HTTP/0", 505);
    refused_at_last_byte(b"GET / HTTP/1,", 400);
    refused_at_last_byte(b"GET / HTTP/12", 400);
    refused_at_last_byte(b"GET / HTTP/1.x", 400);
    refused_at_last_byte(b"GET / HTTP/1.1 ", 400); // a third space
    refused_at_last_byte(b"GET / HTTP/1.12", 400);
    // A line that ends too soon: the CR is the wrong byte.
    refused_at_last_byte(b"GET /hello\r", 400); // HTTP/0.9
    refused_at_last_byte(b"GET / HTTP/1.\r", 400);
    refused_at_last_byte(b"GET\r", 400);
}

#[test]
fn a_wrong_line_end_is_refused_at_once() {
    refused_at_last_byte(b"GET / HTTP/1.1\rX", 400); // a CR, then not LF
    refused_at_last_byte(b"GET / HTTP/1.1\r\r", 400);
    refused_at_last_byte(b"GET / HTTP/1.1\n", 400); // a bare LF
    refused_at_last_byte(b"\r\n\r\r", 400); // among the empty lines before the request
    refused_at_last_byte(b"\n", 400);
    refused_at_last_byte(b"GET / HTTP/1.1\r\nHost: x\rY", 400);
    refused_at_last_byte(b"GET / HTTP/1.1\r\nHost: x\r\r", 400);
    refused_at_last_byte(b"GET / HTTP/1.1\r\nHost: x\n", 400);
    refused_at_last_byte(b"GET / HTTP/1.1\r\nHost: x\r\n\rX", 400); // where the head ends
    refused_at_last_byte(b"GET / HTTP/1.1\r\nHost: x\r\n\n", 400);
}

#[test]
fn a_broken_header_line_is_refused_before_its_end() {
    let head = "GET / HTTP/1.1\r\nX: y\r\n";
    let refused = |line: &[u8], status: u16| {
        refused_at_last_byte(&[head.as_bytes(), line].concat(), status);
    };
    refused(b" ", 400); // obs-fold
    refused(b"\t", 400);
    refused(b"Host ", 400); // a space before the colon
    refused(b"X(", 400); // not a token character
    refused(b"X-\xff", 400);
    refused(b":", 400); // no name
    refused(b"X: a\0", 400);
    refused(b"X: a\x7f", 400);
    refused(b"Host: a b", 400);
    refused(b"Host: a/", 400);
    refused(b"NoColon\r", 400);
    refused_at_last_byte(b"GET / HTTP/1.1\r\n ", 400); // whitespace before the first header
}

#[test]
fn a_bad_content_length_is_refused_before_its_end() {
    let head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: ";
    let refused = |value: &str, status: u16| {
        refused_at_last_byte(format!("{head}{value}").as_bytes(), status);
    };
    refused("a", 400);
    refused("-", 400);
    refused("+", 400);
    refused("0x", 400);
    refused("5 5", 400);
    refused("5,", 400);
    refused("\r", 400); // an empty value

    // Over the 1 MiB limit: the 413 the whole request gets, at the digit that says so.
    refused(&(MAX_BODY + 1).to_string(), 413);
    refused("10000000", 413);
    refused("000000000000000000000000010000000", 413);
    // Far past what any integer holds: still the same 413, from the same digit on.
    let huge = format!("{head}1000000000000000000000");
    assert_eq!(status(huge.as_bytes()), 413);
    assert_eq!(status(format!("{huge}x\r\n\r\n").as_bytes()), 413);
}

#[test]
fn the_limits_are_refused_at_the_byte_that_passes_them() {
    let head = format!("GET / HTTP/1.1\r\nHost: x\r\n{}", "A: b\r\n".repeat(MAX_HEADERS - 1));
    refused_at_last_byte(format!("{head}A").as_bytes(), 431); // a 101st header begins
    let long_target = format!("GET /{}", "a".repeat(MAX_HEAD - 5));
    assert_eq!(long_target.len(), MAX_HEAD);
    refused_at_last_byte(long_target.as_bytes(), 414);
    let long_header = "GET / HTTP/1.1\r\nHost: x\r\nA: ";
    let long_header = format!("{long_header}{}", "b".repeat(MAX_HEAD - long_header.len()));
    refused_at_last_byte(long_header.as_bytes(), 431);
}
