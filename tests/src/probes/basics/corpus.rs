//! The conformance corpus: raw requests from RFC 9112's rules, each with the answer it
//! must get, run against every chapter.
//!
//! Each row is one request exactly as a client (or an attacker) might send it, and one of
//! five expectations ([`Answer`]):
//!
//! - **refused**: a 4xx (or 5xx, for HTTP/2 and chunked bodies) with `Connection: close`,
//!   and then the connection ends. Every refused row is sent with a second, valid request
//!   right behind it in the same write (`SMUGGLED`), and that request must never be
//!   answered. This is the request-smuggling family: if a server misjudged where the bad
//!   request ends and kept the connection, the bytes behind it would be read as a request
//!   of their own, which is exactly how a smuggled request slips past a proxy.
//! - **answered**: odd but valid, so it gets a real answer (usually 200, with the body we
//!   know), and the connection stays usable: a follow-up request in the same write must
//!   come back next, intact. A server that took part of the first request's body as a
//!   request would answer something else there.
//! - **refused or served**: either is allowed (a chunked body: 501, or echoed correctly).
//! - **refused early**: the client sends the start of a head that is already broken and
//!   waits, the connection open. The contract says a request that can never become valid
//!   is refused as soon as the bytes that make it so arrive, so the 4xx (or 505) with
//!   `Connection: close` must come at once, without the rest. A server that waited for
//!   the end of the head would wait for a timeout, or forever in a chapter without one.
//! - **ends**: the client sends part of a request and shuts its side; the server must
//!   close, with at most a 4xx, never a success for a request it did not get.
//!
//! The whole table runs in one probe per chapter, and a failure lists every row that
//! failed, each with its rule and its bytes, not just the first.

use std::net::Shutdown;
use std::time::Instant;

use crate::client::{show, ReadError};
use crate::manifest::Capability;
use crate::probes::checklist::{count, rule, secs, size, Rule, READING};
use crate::probes::{
    broken, connect, get, post, receive, seconds, still_serves, Outcome, Probed, Stop, Target,
    HELLO, PATIENCE, PROMPTLY,
};
use crate::probes::{probe, Module, Probe};
use crate::server::Server;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(crate) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("conformance_corpus", Capability::Basics, conformance_corpus),
];

// ANCHOR: behind
/// Sent right behind every refused request, in the same write. It must never be answered.
const SMUGGLED: &[u8] = b"GET /hello?smuggled HTTP/1.1\r\nHost: suite\r\n\r\n";

/// Sent right behind every answered request. Its echo must be the next answer.
const FOLLOW_UP: &[u8] =
    b"POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 9\r\nConnection: close\r\n\r\nfollow-up";
// ANCHOR_END: behind

/// The contract's limits on a request. Its head (the request line and the header lines,
/// counting any empty lines before the request line) is at most this long: 431 past it
/// (414 will do for a target that is too long by itself) ...
pub(crate) const HEAD_LIMIT: usize = 8 * 1024;
/// ... and has at most this many header lines (`Host` included): 431 past it.
pub(crate) const HEADER_LINES_LIMIT: usize = 100;
/// The longest body `POST /echo` takes: 413 past it, from the head alone.
pub(crate) const BODY_LIMIT: usize = 1024 * 1024;

/// What a row of the corpus must get.
#[derive(Clone, Copy, Debug)]
pub enum Answer {
    /// One of these statuses, `Connection: close`, then the end of the connection.
    Refused(&'static [u16]),
    /// This status and, if given, this body; the connection stays usable.
    Answered(u16, Option<&'static [u8]>),
    /// Refused with one of these statuses, or answered 200 with this body.
    RefusedOrServed(&'static [u16], &'static [u8]),
    /// The request stops short, and nothing follows it: one of these statuses within
    /// [`PROMPTLY`], `Connection: close`, then the end of the connection.
    RefusedEarly(&'static [u16]),
    /// The client half-closes after these bytes; the server must close, having sent
    /// nothing or a 4xx.
    Ends,
}

/// One row: a rule, a request that tests it, and the answer it must get.
pub struct Case {
    /// The rule, and where it is written: `RFC 9112 §5.1: no whitespace before the colon`.
    pub rule: &'static str,
    pub request: Vec<u8>,
    pub answer: Answer,
}

fn case(rule: &'static str, request: impl Into<Vec<u8>>, answer: Answer) -> Case {
    Case { rule, request: request.into(), answer }
}

fn refused(rule: &'static str, request: impl Into<Vec<u8>>, statuses: &'static [u16]) -> Case {
    case(rule, request, Answer::Refused(statuses))
}

fn served(rule: &'static str, request: impl Into<Vec<u8>>, body: &'static [u8]) -> Case {
    case(rule, request, Answer::Answered(200, Some(body)))
}

fn early(rule: &'static str, request: impl Into<Vec<u8>>, statuses: &'static [u16]) -> Case {
    case(rule, request, Answer::RefusedEarly(statuses))
}

/// `GET /hello` with these header lines (each ending in CRLF) after `Host`.
fn hello_with(headers: &str) -> Vec<u8> {
    format!("GET /hello HTTP/1.1\r\nHost: suite\r\n{headers}\r\n").into_bytes()
}

/// `POST /echo` with these header lines and then `hello` as the body.
fn echo_with(headers: &str) -> Vec<u8> {
    format!("POST /echo HTTP/1.1\r\nHost: suite\r\n{headers}\r\nhello").into_bytes()
}

/// `count` header lines `X-Header-N: N`.
fn numbered_headers(count: usize) -> String {
    (0..count).map(|n| format!("X-Header-{n}: {n}\r\n")).collect()
}

// ANCHOR: corpus
/// The corpus. Sections follow RFC 9112; the limits are the contract's.
#[rustfmt::skip] // a table: one row per rule, as wide as it needs
pub fn corpus() -> Vec<Case> {
    use Answer::*;
    vec![
        // The request line: method SP target SP version CRLF (RFC 9112 §3).
        refused("§3: one space, not two, between method and target", "GET  /hello HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§3: nothing after the version", "GET /hello HTTP/1.1 extra\r\nHost: suite\r\n\r\n", &[400]),
        refused("§3: no trailing space after the version", "GET /hello HTTP/1.1 \r\nHost: suite\r\n\r\n", &[400]),
        refused("§3: no leading space before the method", " GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§3: a tab is not a separator", "GET\t/hello HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§3.2: no space inside the target", "GET /hel lo HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§3.2: a target starts with '/' (or is absolute)", "GET hello HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§2.3: HTTP/0.9 (no version) is not spoken", "GET /hello\r\n\r\n", &[400]),
        refused("§2.3: the version is case-sensitive", "GET /hello http/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§2.3: an unknown major version", "GET /hello HTTP/9.9\r\nHost: suite\r\n\r\n", &[400, 505]),
        refused("RFC 9113 §3.4: the HTTP/2 connection preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", &[400, 505]),
        refused("RFC 9110 §5.6.2: a method is a token ('(' is not)", "GE(T /hello HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("RFC 9110 §5.6.2: NUL in the method", "G\0ET /hello HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("RFC 9110 §5.6.2: a byte over 127 in the method", &b"G\xc3\x89T /hello HTTP/1.1\r\nHost: suite\r\n\r\n"[..], &[400]),
        refused("§3.2: NUL in the target", "GET /hel\0lo HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§3.2: DEL in the target", "GET /hel\x7flo HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
        refused("§3.2: raw bytes over 127 in the target", &b"GET /h\xc3\xa9llo HTTP/1.1\r\nHost: suite\r\n\r\n"[..], &[400]),
        refused("a status line is not a request line", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", &[400]),
        case("RFC 9110 §9.1: methods are case-sensitive, so `get` is unknown", "get /hello HTTP/1.1\r\nHost: suite\r\n\r\n", Answered(501, None)),
        served("§3.2.2: the absolute form", "GET http://suite/hello HTTP/1.1\r\nHost: suite\r\n\r\n", HELLO),
        served("§2.2: an empty line before the request line is ignored", "\r\nGET /hello HTTP/1.1\r\nHost: suite\r\n\r\n", HELLO),
        refused("§2.2 and the 8 KiB limit: 9 KiB of empty lines", format!("{}GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n", "\r\n".repeat((HEAD_LIMIT + 1024) / 2)), &[400, 414, 431]),
        served("RFC 9110 §7.8: an h2c upgrade may be ignored", hello_with("Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n"), HELLO),

        // Header fields: name ":" OWS value OWS (RFC 9112 §5, RFC 9110 §5).
        refused("§5.1: no whitespace between name and colon", "GET /hello HTTP/1.1\r\nHost : suite\r\n\r\n", &[400]),
        refused("§5.1: not even a tab", hello_with("X-Thing\t: y\r\n"), &[400]),
        refused("§5.2: obs-fold (a line continued with a space)", hello_with("X-Folded: one\r\n two\r\n"), &[400]),
        refused("§5.2: obs-fold (continued with a tab)", hello_with("X-Folded: one\r\n\ttwo\r\n"), &[400]),
        refused("§2.2: whitespace before the first header line", "GET /hello HTTP/1.1\r\n Host: suite\r\n\r\n", &[400]),
        refused("§5: a header line needs a colon", hello_with("no colon here\r\n"), &[400]),
        refused("§5: a header name is not empty", hello_with(": empty name\r\n"), &[400]),
        refused("RFC 9110 §5.1: a header name is a token (no space)", hello_with("X Y: z\r\n"), &[400]),
        refused("RFC 9110 §5.1: a header name is a token (no '(')", hello_with("X(Y): z\r\n"), &[400]),
        refused("RFC 9110 §5.1: no bytes over 127 in a header name", &b"GET /hello HTTP/1.1\r\nHost: suite\r\nX-\xffName: z\r\n\r\n"[..], &[400]),
        refused("RFC 9110 §5.5: NUL in a header value", hello_with("X: a\0b\r\n"), &[400]),
        refused("RFC 9110 §5.5: a control byte in a header value", hello_with("X: a\x01b\r\n"), &[400]),
        refused("RFC 9110 §5.5: DEL in a header value", hello_with("X: a\x7fb\r\n"), &[400]),
        served("RFC 9110 §5.5: bytes over 127 (obs-text) in a value are allowed", &b"GET /hello HTTP/1.1\r\nHost: suite\r\nX-Name: caf\xc3\xa9\r\n\r\n"[..], HELLO),
        served("§5.1: no space after the colon is fine", "GET /hello HTTP/1.1\r\nHost:suite\r\n\r\n", HELLO),
        served("§5.1: whitespace around a value is not part of it", hello_with("X-Padded: \t value \t\r\n"), HELLO),

        // Line endings: CRLF, and nothing else (§2.2).
        refused("§2.2: bare LF line ends", "GET /hello HTTP/1.1\nHost: suite\n\n", &[400]),
        refused("§2.2: a bare LF ending one header line", "GET /hello HTTP/1.1\r\nHost: suite\n\r\n", &[400]),
        refused("§2.2: a bare LF ending the head", "GET /hello HTTP/1.1\r\nHost: suite\r\n\n", &[400]),
        refused("§2.2: a bare LF inside the head hides a header", hello_with("X: a\nContent-Length: 5\r\n"), &[400]),
        refused("§2.2: a bare CR in the request line", "GET /hello HTTP/1.1\rHost: suite\r\n\r\n", &[400]),
        refused("§2.2: a bare CR inside a header value", hello_with("X: a\rContent-Length: 5\r\n"), &[400]),
        refused("§2.2: CR CR LF", "GET /hello HTTP/1.1\r\nHost: suite\r\r\n\r\n", &[400]),

        // Host (§3.2).
        refused("§3.2: HTTP/1.1 needs a Host", "GET /hello HTTP/1.1\r\n\r\n", &[400]),
        refused("§3.2: exactly one Host", "GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", &[400]),
        refused("§3.2: exactly one Host, whatever the case", "GET /hello HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", &[400]),
        served("§3.2: HTTP/1.0 may leave Host out", "GET /hello HTTP/1.0\r\n\r\n", HELLO),
        served("RFC 9110 §5.1: header names are case-insensitive", "GET /hello HTTP/1.1\r\nhOsT: suite\r\n\r\n", HELLO),
        refused("§3.2: a Host with an invalid value (a space)", "GET /hello HTTP/1.1\r\nHost: a b\r\n\r\n", &[400]),
        refused("§3.2: a Host with an invalid value (a path)", "GET /hello HTTP/1.1\r\nHost: suite/x\r\n\r\n", &[400]),
        served("RFC 9110 §2.5: a later HTTP/1.x is read as HTTP/1.1", "GET /hello HTTP/1.9\r\nHost: suite\r\n\r\n", HELLO),

        // Content-Length (§6.2, §6.3; RFC 9110 §8.6).
        refused("§6.3: Content-Length is digits (not letters)", echo_with("Content-Length: abc\r\n"), &[400]),
        refused("§6.3: Content-Length is digits (no sign)", echo_with("Content-Length: -1\r\n"), &[400]),
        refused("§6.3: Content-Length is digits (no plus)", echo_with("Content-Length: +5\r\n"), &[400]),
        refused("§6.3: Content-Length is digits (no hex)", echo_with("Content-Length: 0x5\r\n"), &[400]),
        refused("§6.3: Content-Length is digits (no space inside)", echo_with("Content-Length: 5 5\r\n"), &[400]),
        refused("§6.3: Content-Length is not empty", echo_with("Content-Length:\r\n"), &[400]),
        refused("RFC 9110 §8.6: a list in Content-Length may be refused", echo_with("Content-Length: 5, 5\r\n"), &[400]),
        refused("§6.3: Content-Length headers that disagree", echo_with("Content-Length: 5\r\nContent-Length: 6\r\n"), &[400]),
        refused("§6.3: a Content-Length too big to count", echo_with("Content-Length: 99999999999999999999999999\r\n"), &[400, 413]),
        refused("the 1 MiB body limit, from the head alone", format!("POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: {}\r\n\r\n", BODY_LIMIT + 1), &[413]),
        served("RFC 9110 §8.6: repeated, agreeing Content-Length", echo_with("Content-Length: 5\r\nContent-Length: 5\r\n"), b"hello"),
        served("§6.3: leading zeros are still digits", echo_with("Content-Length: 005\r\n"), b"hello"),
        served("§6.3: a GET's body is skipped, not read as a request", "GET /hello HTTP/1.1\r\nHost: suite\r\nContent-Length: 9\r\n\r\nGET /nope", HELLO),
        served("§6.3: a body that looks like a request is only a body", post("/echo", SMUGGLED), SMUGGLED),

        // ANCHOR: smuggling
        // Transfer-Encoding (§6.1, §6.3): any framing doubt means 400 and close.
        refused("§6.3: Content-Length and Transfer-Encoding (CL.TE)", "POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", &[400]),
        refused("§6.3: Transfer-Encoding and Content-Length (TE.CL)", "POST /echo HTTP/1.1\r\nHost: suite\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", &[400]),
        refused("§6.3: CL.TE, with the coding capitalized", "POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 5\r\nTransfer-Encoding: Chunked\r\n\r\nhello", &[400]),
        refused("§6.3: chunked must be the final coding", echo_with("Transfer-Encoding: chunked, identity\r\n"), &[400]),
        refused("§6.3: a coding that is not chunked cannot frame a request", echo_with("Transfer-Encoding: identity\r\n"), &[400]),
        refused("§6.3: 'xchunked' is not chunked", echo_with("Transfer-Encoding: xchunked\r\n"), &[400]),
        refused("§6.1: no Transfer-Encoding in HTTP/1.0", "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", &[400]),
        refused("§5.1: Transfer-Encoding with a space before the colon", echo_with("Transfer-Encoding : chunked\r\nContent-Length: 5\r\n"), &[400]),
        refused("§5.2: Transfer-Encoding hidden in an obs-fold", echo_with("Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n"), &[400]),
        case("§7.1: a chunked body may be refused (501) or must be decoded", "POST /echo HTTP/1.1\r\nHost: suite\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", RefusedOrServed(&[501], b"hello")),
        // ANCHOR_END: smuggling

        // The contract's limits: 8 KiB of head, 100 headers.
        served("contract: 100 header lines are allowed", hello_with(&numbered_headers(HEADER_LINES_LIMIT - 1)), HELLO),
        refused("contract: 101 header lines are too many", hello_with(&numbered_headers(HEADER_LINES_LIMIT)), &[431]),
        served("contract: a 7 KiB head is allowed", hello_with(&format!("X-Fill: {}\r\n", "a".repeat(HEAD_LIMIT - 1024))), HELLO),
        refused("contract: a 9 KiB header", hello_with(&format!("X-Fill: {}\r\n", "a".repeat(HEAD_LIMIT + 1024))), &[431]),
        refused("contract: nine 1 KiB headers", hello_with(&format!("X-Fill: {}\r\n", "a".repeat(1000)).repeat(9)), &[431]),
        served("contract: a 7 KiB target is allowed", get(&format!("/hello?pad={}", "a".repeat(HEAD_LIMIT - 1024))), HELLO),
        refused("contract: a 9 KiB target", get(&format!("/hello?pad={}", "a".repeat(HEAD_LIMIT + 1024))), &[414, 431]),
        refused("contract: a 9 KiB method", format!("{} /hello HTTP/1.1\r\nHost: suite\r\n\r\n", "A".repeat(HEAD_LIMIT + 1024)), &[400, 414, 431, 501]),
        refused("contract: a header that never ends is cut off at 8 KiB", format!("GET /hello HTTP/1.1\r\nHost: suite\r\nX-Fill: {}", "a".repeat(20 * 1024)), &[431]),

        // Not HTTP at all.
        refused("a TLS ClientHello (https:// to an http port)", tls_client_hello(), &[400]),
        refused("an SSH client's banner", "SSH-2.0-OpenSSH_9.6\r\n", &[400]),
        refused("NUL bytes", "\0\0\0\0\r\n\r\n", &[400]),
        refused("binary noise", noise(512), &[400]),

        // Clients that stop half-way and shut their side: no request, so no success.
        case("a request line cut short, then the client half-closes", "GET /hel", Ends),
        case("a head cut short, then the client half-closes", "GET /hello HTTP/1.1\r\nHost: suite\r\n", Ends),
        case("a body cut short, then the client half-closes", "POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 100\r\n\r\nonly part", Ends),

        // Heads that stop short, already broken: refused at once, without the rest.
        early("RFC 9110 §5.6.2: a method is a token, refused at the '('", "GE(", &[400]),
        early("§3.2: a target starts with '/', 'http://' or is '*', refused at the 'e'", "GET he", &[400]),
        early("§2.3: 'HTTX' is no HTTP version, refused at the 'X'", "GET /hello HTTX", &[400]),
        early("§2.3: an unknown major version, refused at its digit", "GET /hello HTTP/5", &[400, 505]),
        early("§2.2: a CR in the request line followed by anything but LF", "GET /hello HTTP/1.1\rX", &[400]),
        early("§2.2: a CR after a header followed by anything but LF", "GET /hello HTTP/1.1\r\nHost: suite\rX", &[400]),
        early("§2.2: a bare LF after the request line", "GET /hello HTTP/1.1\n", &[400]),
        early("§2.2: a bare LF after a header", "GET /hello HTTP/1.1\r\nHost: suite\n", &[400]),
        early("RFC 9110 §5.1: a header name is a token, refused at the '('", "GET /hello HTTP/1.1\r\nHost: suite\r\nX(", &[400]),
        early("§5.1: whitespace before the colon, refused at the space", "GET /hello HTTP/1.1\r\nHost ", &[400]),
        early("§5.2: obs-fold, refused at the line's first space", "GET /hello HTTP/1.1\r\nHost: suite\r\n ", &[400]),
        early("§6.3: Content-Length is digits, refused at the 'x'", "POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 5x", &[400]),
        early("the 1 MiB body limit, refused at the digit that passes it", format!("POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: {}", BODY_LIMIT + 1), &[413]),
        early("§6.3: a Content-Length too big to count, before its line ends", "POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 1000000000000000000000", &[400, 413]),
        early("contract: a 101st header line, refused as it begins", format!("GET /hello HTTP/1.1\r\nHost: suite\r\n{}X-Header-100: 1", numbered_headers(HEADER_LINES_LIMIT - 1)), &[431]),
        early("contract: a head over 8 KiB, refused before its line ends", format!("GET /hello HTTP/1.1\r\nHost: suite\r\nX-Fill: {}", "a".repeat(HEAD_LIMIT + 1024)), &[431]),
    ]
}
// ANCHOR_END: corpus

/// A TLS 1.3 ClientHello record, as `curl https://suite/` would begin: what a server
/// sees when someone tries https:// on a plain HTTP port.
fn tls_client_hello() -> Vec<u8> {
    let server_name = b"suite";
    let mut extensions = Vec::new();
    // server_name (0): a list holding one host name.
    let name_entry = [&[0u8][..], &(server_name.len() as u16).to_be_bytes(), server_name].concat();
    let name_list = [&(name_entry.len() as u16).to_be_bytes()[..], &name_entry].concat();
    extensions.extend([0x00, 0x00]);
    extensions.extend((name_list.len() as u16).to_be_bytes());
    extensions.extend(&name_list);
    // supported_versions (43): TLS 1.3 and 1.2.
    extensions.extend([0x00, 0x2b, 0x00, 0x05, 0x04, 0x03, 0x04, 0x03, 0x03]);

    let mut hello = vec![0x03, 0x03]; // legacy_version: TLS 1.2
    hello.extend(crate::site::pattern(32)); // random
    hello.push(32); // legacy_session_id
    hello.extend(crate::site::pattern(32));
    let suites = [0x13, 0x01, 0x13, 0x02, 0x13, 0x03, 0xc0, 0x2b, 0xc0, 0x2f];
    hello.extend((suites.len() as u16).to_be_bytes());
    hello.extend(suites);
    hello.extend([0x01, 0x00]); // compression: none
    hello.extend((extensions.len() as u16).to_be_bytes());
    hello.extend(extensions);

    let length = hello.len() as u32;
    let mut handshake = vec![0x01]; // ClientHello
    handshake.extend(&length.to_be_bytes()[1..]);
    handshake.extend(hello);
    let mut record = vec![0x16, 0x03, 0x01]; // a handshake record
    record.extend((handshake.len() as u16).to_be_bytes());
    record.extend(handshake);
    record
}

/// `length` bytes of noise that cannot be mistaken for a method (the first byte is 0xff).
fn noise(length: usize) -> Vec<u8> {
    let mut bytes = crate::site::pattern(length);
    if let Some(first) = bytes.first_mut() {
        *first = 0xff;
    }
    bytes
}

/// What stopped a row, as text for the list of failures.
fn stop_text(stop: Stop) -> String {
    match stop {
        Stop::Broken(what) => what,
        Stop::Skipped(why) => why.to_string(),
    }
}

/// Runs one row on a new connection. `Err` says what went wrong.
pub fn run_case(server: &Server, case: &Case) -> Result<(), String> {
    let mut client = connect(server).map_err(stop_text)?;
    let mut bytes = case.request.clone();
    match case.answer {
        Answer::Refused(_) => bytes.extend_from_slice(SMUGGLED),
        Answer::Answered(..) | Answer::RefusedOrServed(..) => bytes.extend_from_slice(FOLLOW_UP),
        Answer::RefusedEarly(_) | Answer::Ends => {}
    }
    let sent = Instant::now();
    // A server may refuse (and close) before it has read everything; the answer is what
    // counts, so a failed send is not yet a failure.
    let _ = client.send(&bytes);
    let what = "the answer";
    match case.answer {
        Answer::Refused(statuses) | Answer::RefusedEarly(statuses) => {
            if let Answer::RefusedEarly(_) = case.answer {
                // Nothing follows these bytes and the connection stays open, so they alone
                // must make the server answer, and at once.
                match client.wait_for_bytes(sent + PROMPTLY) {
                    Ok(()) => {}
                    Err(ReadError::TimedOut { .. }) => {
                        return Err(format!(
                            "no answer within {}: these bytes can never begin a valid \
                             request, yet the server waits for the rest of the head",
                            seconds(PROMPTLY)
                        ))
                    }
                    Err(error) => return Err(error.to_string()),
                }
            }
            // `receive` also checks that after `Connection: close` the connection really
            // ends, with no further bytes: no answer to the smuggled request.
            let response = receive(&mut client, server, false, what).map_err(stop_text)?;
            if !statuses.contains(&response.status) {
                return Err(format!("expected {statuses:?}, got {}", response.summary()));
            }
            if !response.says_close() {
                return Err(format!(
                    "{} without Connection: close; the bytes after a bad request must not \
                     be read as a next request",
                    response.status
                ));
            }
        }
        Answer::Answered(status, body) => {
            let response = receive(&mut client, server, false, what).map_err(stop_text)?;
            if response.status != status || body.is_some_and(|body| response.body != body) {
                return Err(format!(
                    "expected {status}{}, got {} with body {:?}",
                    body.map(|body| format!(" {:?}", show(body))).unwrap_or_default(),
                    response.status,
                    show(&response.body)
                ));
            }
            follow_up(&mut client, server, &response)?;
        }
        Answer::RefusedOrServed(statuses, body) => {
            let response = receive(&mut client, server, false, what).map_err(stop_text)?;
            if statuses.contains(&response.status) {
                if !response.says_close() {
                    return Err(format!("{} without Connection: close", response.status));
                }
            } else if response.status == 200 && response.body == body {
                follow_up(&mut client, server, &response)?;
            } else {
                return Err(format!(
                    "expected {statuses:?} or 200 {:?}, got {}",
                    show(body),
                    response.summary()
                ));
            }
        }
        Answer::Ends => {
            client
                .stream()
                .shutdown(Shutdown::Write)
                .map_err(|error| format!("cannot half-close: {error}"))?;
            let deadline = Instant::now() + PATIENCE;
            match client.read_response(deadline, false) {
                // Closed without a word: fine.
                Err(ReadError::Closed { received: 0 } | ReadError::Reset { received: 0 }) => {}
                Ok(response) if (400..500).contains(&response.status) => {
                    match client.wait_for_close(deadline) {
                        crate::client::Ending::Closed => {}
                        other => {
                            return Err(format!(
                                "answered {}, then did not close: {other:?}",
                                response.status
                            ))
                        }
                    }
                }
                Ok(response) => {
                    return Err(format!(
                        "answered {} to a request that never arrived",
                        response.summary()
                    ))
                }
                Err(ReadError::TimedOut { .. }) => {
                    return Err(format!(
                        "the connection was still open {} s after the client half-closed",
                        PATIENCE.as_secs()
                    ))
                }
                Err(error) => return Err(error.to_string()),
            }
        }
    }
    Ok(())
}

/// After an answered row: a server that keeps the connection must answer the follow-up
/// next, and nothing else. (One that closed has said so, and `receive` checked it.)
fn follow_up(
    client: &mut crate::client::Client, server: &Server, first: &crate::client::Response,
) -> Result<(), String> {
    if first.says_close() {
        return Ok(());
    }
    let response =
        receive(client, server, false, "the follow-up request behind it").map_err(stop_text)?;
    if response.status != 200 || response.body != b"follow-up" {
        return Err(format!(
            "the next answer on the connection should be the follow-up's echo, but it is {} \
             {:?}: the first request was not framed where it ends",
            response.status,
            show(&response.body)
        ));
    }
    Ok(())
}

// ANCHOR: conformance_corpus
/// Every row of the corpus against one server, and then: is it still serving?
pub fn conformance_corpus(target: &Target) -> Probed {
    let mut server = target.server()?;
    let corpus = corpus();
    let mut failures = Vec::new();
    for (row, case) in corpus.iter().enumerate() {
        let result = run_case(&server, case);
        let label = format!("row {row} ({}) [{}]", case.rule, show(&case.request));
        if let Err(what) = result {
            failures.push(format!("{label}: {what}"));
        }
        // A crash must be blamed on the row that caused it, not on the next one.
        if let Some(status) = server.exit_status() {
            failures.push(format!(
                "{label}: the server process ended ({status}){}",
                server.stderr_note()
            ));
            break;
        }
    }
    if !failures.is_empty() {
        return Err(broken(format!(
            "{} of {} corpus rows failed:\n  {}",
            failures.len(),
            corpus.len(),
            failures.join("\n  ")
        )));
    }
    still_serves(&mut server, "the conformance corpus")?;
    Ok(Outcome::Works)
}
// ANCHOR_END: conformance_corpus

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("conformance_corpus", READING, format!(
            "Every row of [the conformance corpus](#the-conformance-corpus-row-by-row) gets its \
             answer: {} requests that break, or stretch, RFC 9112's rules, each on a new \
             connection.",
            corpus().len())),
        rule("conformance_corpus", READING, format!(
            "The limits: a request head (the request line, the header lines, and any empty \
             lines before the request line) over {} is refused with 431 (414 will do for a \
             target too long by itself; 400 for a head that is all empty lines), and so is a \
             head with more than {} header lines, `Host` included.",
            size(HEAD_LIMIT as u64), HEADER_LINES_LIMIT)),
        rule("conformance_corpus", READING,
            "A refused request is answered with `Connection: close`, and the connection then \
             ends: a request sent right behind it, in the same write, is never answered. A \
             request that is answered leaves the connection usable: the request behind it is \
             answered next.".to_string()),
        rule("conformance_corpus", READING, format!(
            "A head that can never become a valid request is refused as soon as the bytes that \
             make it so arrive, within {}, while the client waits with the head unfinished: a \
             bad byte in the method, a bad version, a stray CR or bare LF, whitespace before a \
             colon, obs-fold, a `Content-Length` that is not digits or is over the body limit, \
             a header line past the {}th, a head past {}.",
            secs(PROMPTLY), HEADER_LINES_LIMIT, size(HEAD_LIMIT as u64))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![count(corpus().len()), size(HEAD_LIMIT as u64), HEADER_LINES_LIMIT.to_string()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_hello_is_well_formed() {
        let record = tls_client_hello();
        // The record's length field covers exactly what follows its 5-byte header.
        let length = u16::from_be_bytes([record[3], record[4]]) as usize;
        assert_eq!(length + 5, record.len());
        assert_eq!(record[5], 0x01, "a ClientHello");
    }

    #[test]
    fn every_row_is_named_and_distinct() {
        let corpus = corpus();
        for (index, case) in corpus.iter().enumerate() {
            assert!(!case.rule.is_empty() && !case.request.is_empty());
            assert!(
                !corpus[..index].iter().any(|other| other.request == case.request),
                "row {index} repeats an earlier request"
            );
        }
    }
}
