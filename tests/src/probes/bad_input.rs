//! Probes for bad input and odd clients: the RFC 9112 rejections, the size limits,
//! requests that arrive in pieces, and clients that vanish or reset. A server must answer
//! every broken request with a 4xx and close, and go on serving everyone else.

use std::thread;
use std::time::{Duration, Instant};

use super::{
    broken, check, connect, exchange, expect_status, first_line, get, post, receive, still_serves,
    Outcome, Probed, Target, PATIENCE,
};
use crate::client::show;
use crate::server::Server;
use crate::site::{self, first_difference};

/// Sends `request` and expects one of `allowed` (a 4xx or 5xx rejection), with
/// `Connection: close`: after a request it could not parse, a server cannot know where the
/// next one would start.
fn rejects(server: &Server, request: &[u8], allowed: &[u16], why: &str) -> Result<(), super::Stop> {
    let what = format!("{why} [{}]", show(request));
    let response = exchange(server, request)?;
    expect_status(&response, allowed, &what)?;
    check!(
        response.says_close(),
        "{what}: the {} does not say Connection: close",
        response.status
    );
    Ok(())
}

/// Sends `request` and expects a 200.
fn accepts(server: &Server, request: &[u8], why: &str) -> Result<(), super::Stop> {
    let what = format!("{why} [{}]", show(request));
    expect_status(&exchange(server, request)?, &[200], &what)
}

const BARE_LF: [&[u8]; 3] = [
    b"GET /hello HTTP/1.1\nHost: suite\n\n",
    b"GET /hello HTTP/1.1\r\nHost: suite\n\r\n",
    b"GET /hello HTTP/1.1\r\nHost: suite\r\n\n",
];

const OBS_FOLD: [&[u8]; 2] = [
    b"GET /hello HTTP/1.1\r\nHost: suite\r\nX-Folded: one\r\n two\r\n\r\n",
    b"GET /hello HTTP/1.1\r\nHost: suite\r\nX-Folded: one\r\n\ttwo\r\n\r\n",
];

const SPACE_BEFORE_COLON: [&[u8]; 2] = [
    b"GET /hello HTTP/1.1\r\nHost : suite\r\n\r\n",
    b"GET /hello HTTP/1.1\r\nHost: suite\r\nX-Thing\t: y\r\n\r\n",
];

/// Requests that are not HTTP, or not well-formed HTTP: 400 (or 505 for a version we do
/// not speak).
const GARBAGE: [(&[u8], &[u16]); 11] = [
    // The start of a TLS handshake: someone tried https:// on our port.
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", &[400]),
    (b"\0\0\0\0\r\n\r\n", &[400]),
    (b"GET /hello HTTP/1.1 extra\r\nHost: suite\r\n\r\n", &[400]),
    (b"GET  /hello HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
    (b"GET /hel lo HTTP/1.1\r\nHost: suite\r\n\r\n", &[400]),
    (b"GET /hello\r\n\r\n", &[400]),
    (b"GET /hello HTTP/1.1\rHost: suite\r\n\r\n", &[400]),
    (
        b"GET /hello HTTP/1.1\r\nHost: suite\r\nX: a\0b\r\n\r\n",
        &[400],
    ),
    (
        b"GET /hello HTTP/1.1\r\nHost: suite\r\nno colon here\r\n\r\n",
        &[400],
    ),
    (
        b"GET /hello HTTP/1.1\r\nHost: suite\r\n: empty name\r\n\r\n",
        &[400],
    ),
    (b"GET /hello HTTP/9.9\r\nHost: suite\r\n\r\n", &[400, 505]),
];

pub fn bare_lf(target: &Target) -> Probed {
    let mut server = target.server()?;
    for request in BARE_LF {
        rejects(&server, request, &[400], "a bare LF line end")?;
    }
    still_serves(&mut server, "bare LF requests")?;
    Ok(Outcome::Works)
}

pub fn obs_fold(target: &Target) -> Probed {
    let mut server = target.server()?;
    for request in OBS_FOLD {
        rejects(
            &server,
            request,
            &[400],
            "obs-fold (a header continued on the next line)",
        )?;
    }
    still_serves(&mut server, "obs-fold requests")?;
    Ok(Outcome::Works)
}

pub fn space_before_colon(target: &Target) -> Probed {
    let mut server = target.server()?;
    for request in SPACE_BEFORE_COLON {
        rejects(
            &server,
            request,
            &[400],
            "whitespace before a header's colon",
        )?;
    }
    accepts(
        &server,
        b"GET /hello HTTP/1.1\r\nHost:suite\r\n\r\n",
        "no space after the colon",
    )?;
    still_serves(&mut server, "whitespace before colons")?;
    Ok(Outcome::Works)
}

pub fn host_header(target: &Target) -> Probed {
    let mut server = target.server()?;
    rejects(
        &server,
        b"GET /hello HTTP/1.1\r\n\r\n",
        &[400],
        "HTTP/1.1 without Host",
    )?;
    rejects(
        &server,
        b"GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        &[400],
        "two Host headers",
    )?;
    rejects(
        &server,
        b"GET /hello HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
        &[400],
        "two Host headers (same value, different case)",
    )?;
    accepts(
        &server,
        b"GET /hello HTTP/1.0\r\n\r\n",
        "HTTP/1.0 without Host",
    )?;
    accepts(
        &server,
        b"GET /hello HTTP/1.1\r\nhOsT: suite\r\n\r\n",
        "a Host header in odd case",
    )?;
    still_serves(&mut server, "bad Host headers")?;
    Ok(Outcome::Works)
}

pub fn content_length_rules(target: &Target) -> Probed {
    let mut server = target.server()?;
    let with = |headers: &str| {
        format!("POST /echo HTTP/1.1\r\nHost: suite\r\n{headers}\r\nhello").into_bytes()
    };
    for bad in [
        "Content-Length: abc\r\n",
        "Content-Length: -1\r\n",
        "Content-Length: +5\r\n",
        "Content-Length: 5, 5\r\n",
        "Content-Length: 5 5\r\n",
        "Content-Length: 0x5\r\n",
        "Content-Length:\r\n",
        "Content-Length: 5\r\nContent-Length: 6\r\n",
    ] {
        rejects(&server, &with(bad), &[400], "a bad Content-Length")?;
    }
    rejects(
        &server,
        &with("Content-Length: 99999999999999999999999999\r\n"),
        &[400, 413],
        "a Content-Length too big to count",
    )?;
    // Repeated but in agreement is allowed.
    let request = with("Content-Length: 5\r\nContent-Length: 5\r\n");
    let response = exchange(&server, &request)?;
    expect_status(&response, &[200], "two agreeing Content-Length: 5 headers")?;
    check!(
        response.body == b"hello",
        "two agreeing Content-Length: 5 headers: echoed {:?}",
        response.text()
    );
    still_serves(&mut server, "bad Content-Length headers")?;
    Ok(Outcome::Works)
}

/// `Content-Length` with `Transfer-Encoding` is the classic request-smuggling trick: 400
/// and close. Chunked bodies alone may be refused with 501 (or, if a chapter takes them,
/// echoed correctly).
pub fn length_and_chunked(target: &Target) -> Probed {
    let mut server = target.server()?;
    rejects(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 5\r\n\
          Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        &[400],
        "Content-Length and Transfer-Encoding",
    )?;
    rejects(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: suite\r\nTransfer-Encoding: chunked\r\n\
          Content-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        &[400],
        "Transfer-Encoding and Content-Length",
    )?;
    let chunked =
        b"POST /echo HTTP/1.1\r\nHost: suite\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    let response = exchange(&server, chunked)?;
    match response.status {
        501 => {}
        200 => check!(
            response.body == b"hello",
            "a chunked POST /echo: echoed {:?}, expected \"hello\"",
            response.text()
        ),
        _ => {
            return Err(broken(format!(
                "a chunked POST /echo: expected 501 (or 200 with the body), got {}",
                response.summary()
            )))
        }
    }
    still_serves(&mut server, "Content-Length with Transfer-Encoding")?;
    Ok(Outcome::Works)
}

/// The head limits: 8 KiB for the request line and headers, 100 headers.
pub fn head_limits(target: &Target) -> Probed {
    let mut server = target.server()?;
    let with_headers =
        |headers: &str| format!("GET /hello HTTP/1.1\r\nHost: suite\r\n{headers}\r\n").into_bytes();
    let numbered = |count: usize| -> String {
        (0..count)
            .map(|n| format!("X-Header-{n}: {n}\r\n"))
            .collect()
    };
    // Just inside the limits: these must work (no off-by-one rejections).
    accepts(&server, &with_headers(&numbered(99)), "100 headers")?;
    let under = format!("X-Fill: {}\r\n", "a".repeat(7 * 1024));
    accepts(&server, &with_headers(&under), "a 7 KiB head")?;
    accepts(
        &server,
        &get(&format!("/hello?pad={}", "a".repeat(7 * 1024))),
        "a 7 KiB target",
    )?;
    // Over them.
    rejects(
        &server,
        &with_headers(&numbered(100)),
        &[431],
        "101 headers",
    )?;
    let over = format!("X-Fill: {}\r\n", "a".repeat(9 * 1024));
    rejects(&server, &with_headers(&over), &[431], "a 9 KiB header")?;
    let many = format!("X-Fill: {}\r\n", "a".repeat(1000)).repeat(9);
    rejects(&server, &with_headers(&many), &[431], "nine 1 KiB headers")?;
    rejects(
        &server,
        &get(&format!("/hello?pad={}", "a".repeat(9 * 1024))),
        &[414, 431],
        "a 9 KiB target",
    )?;
    // A head that never ends must be cut off at the limit, not buffered forever.
    let endless = format!(
        "GET /hello HTTP/1.1\r\nHost: suite\r\nX-Fill: {}",
        "a".repeat(20 * 1024)
    );
    rejects(
        &server,
        endless.as_bytes(),
        &[431],
        "a header that never ends",
    )?;
    still_serves(&mut server, "oversized heads")?;
    Ok(Outcome::Works)
}

pub fn garbage(target: &Target) -> Probed {
    let mut server = target.server()?;
    for (request, allowed) in GARBAGE {
        rejects(&server, request, allowed, "not HTTP")?;
    }
    still_serves(&mut server, "garbage requests")?;
    Ok(Outcome::Works)
}

/// Sends `request` one byte per write, with a short pause between writes so that each
/// byte travels (and is read) on its own.
fn send_trickled(client: &mut crate::client::Client, request: &[u8]) -> std::io::Result<()> {
    for byte in request {
        client.send(std::slice::from_ref(byte))?;
        thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

pub fn trickled_request(target: &Target) -> Probed {
    let server = target.server()?;
    let requests = [
        b"GET /hello HTTP/1.1\r\nHost: suite\r\nUser-Agent: one byte at a time\r\n\r\n".to_vec(),
        post("/echo", b"trickled body"),
    ];
    for request in requests {
        let what = format!("{}, sent one byte at a time", first_line(&request));
        let mut client = connect(&server)?;
        send_trickled(&mut client, &request)
            .map_err(|error| broken(format!("{what}: sending failed: {error}")))?;
        let response = receive(&mut client, &server, false, &what)?;
        expect_status(&response, &[200], &what)?;
        let expected: &[u8] = if request.starts_with(b"POST") {
            b"trickled body"
        } else {
            b"Hello, world!\n"
        };
        check!(
            response.body == expected,
            "{what}: body {:?}",
            response.text()
        );
    }
    Ok(Outcome::Works)
}

/// A request whose head and body arrive in several writes, split at awkward places.
pub fn body_split_across_writes(target: &Target) -> Probed {
    let server = target.server()?;
    let body = site::pattern(300_000);
    let request = post("/echo", &body);
    let head_length = request.len() - body.len();
    // Inside a header name, at the end of the head, and twice inside the body.
    let cuts = [
        30,
        head_length,
        head_length + 1000,
        head_length + 100_000,
        request.len(),
    ];
    let mut client = connect(&server)?;
    let mut start = 0;
    for cut in cuts {
        client
            .send(&request[start..cut])
            .map_err(|error| broken(format!("sending part of a POST /echo: {error}")))?;
        start = cut;
        thread::sleep(Duration::from_millis(20));
    }
    let what = "POST /echo with 300000 bytes sent in five writes";
    let response = receive(&mut client, &server, false, what)?;
    expect_status(&response, &[200], what)?;
    if let Some(at) = first_difference(&body, &response.body) {
        return Err(broken(format!(
            "{what}: the echo differs from byte {at} on"
        )));
    }
    Ok(Outcome::Works)
}

/// Clients that reset the connection in the middle of a big response. The server's write
/// fails (ECONNRESET or EPIPE); that must cost this connection only.
pub fn client_resets_mid_response(target: &Target) -> Probed {
    let mut server = target.server()?;
    reset_mid_response(&server, 3)?;
    still_serves(&mut server, "clients that reset mid-response")?;
    Ok(Outcome::Works)
}

fn reset_mid_response(server: &Server, times: usize) -> Result<(), super::Stop> {
    let body = site::pattern(1024 * 1024);
    for _ in 0..times {
        let mut client = connect(server)?;
        client
            .send(&post("/echo", &body))
            .map_err(|error| broken(format!("sending a 1 MiB POST /echo: {error}")))?;
        let head = client
            .read_head(Instant::now() + PATIENCE, false)
            .map_err(|error| broken(format!("a 1 MiB POST /echo: {error}")))?;
        expect_status(&head.response, &[200], "a 1 MiB POST /echo")?;
        let _ = client.read_some(1024, Instant::now() + PATIENCE);
        // Closing a socket with unread bytes in its receive buffer makes the kernel send
        // a reset (RST) instead of the usual goodbye (FIN): the abrupt end we want. It
        // does what SO_LINGER with a zero timeout would, with std alone.
        drop(client);
    }
    Ok(())
}

/// Clients that connect and leave at every stage of a request.
pub fn clients_that_vanish(target: &Target) -> Probed {
    let mut server = target.server()?;
    vanish(&server)?;
    still_serves(&mut server, "clients that vanished")?;
    Ok(Outcome::Works)
}

fn vanish(server: &Server) -> Result<(), super::Stop> {
    let leave_after = |bytes: &[u8]| -> Result<(), super::Stop> {
        let mut client = connect(server)?;
        // The server may already have given up on us; that is fine here.
        let _ = client.send(bytes);
        Ok(())
    };
    leave_after(b"")?;
    leave_after(b"GET /hel")?;
    leave_after(b"GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n")?;
    leave_after(b"GET /sleep?ms=50 HTTP/1.1\r\nHost: suite\r\n\r\n")?;
    leave_after(b"POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 100\r\n\r\nonly part")?;
    Ok(())
}

/// Everything above on one server, and then: does it still serve, and has it let go of
/// every connection (no leak in its connection table)?
pub fn serves_after_abuse(target: &Target) -> Probed {
    let mut server = target.server()?;
    let mut bad: Vec<&[u8]> = Vec::new();
    bad.extend(BARE_LF);
    bad.extend(OBS_FOLD);
    bad.extend(SPACE_BEFORE_COLON);
    bad.extend(GARBAGE.iter().map(|(request, _)| *request));
    for request in bad {
        // Only what happens afterwards matters here; each probe above checks the answers.
        let _ = exchange(&server, request);
    }
    reset_mid_response(&server, 2)?;
    vanish(&server)?;
    still_serves(
        &mut server,
        "a mix of bad requests, resets and vanishing clients",
    )?;

    // Every client but the one asking has gone, so the count must come down to one.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let stats = exchange(&server, &get("/stats"))?;
        let open = stats.text().lines().find_map(|line| {
            line.strip_prefix("connections_open ")
                .and_then(|count| count.trim().parse::<u64>().ok())
        });
        match open {
            Some(count) if count <= 1 => return Ok(Outcome::Works),
            Some(count) if Instant::now() >= deadline => {
                return Err(broken(format!(
                    "after every client left, /stats still shows connections_open {count} \
                     ({} s later): a connection leak?",
                    PATIENCE.as_secs()
                )))
            }
            Some(_) => thread::sleep(Duration::from_millis(50)),
            None => return Err(broken("GET /stats has no connections_open line")),
        }
    }
}
