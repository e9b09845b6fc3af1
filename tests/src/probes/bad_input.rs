//! Probes for odd clients: requests that arrive in pieces, and clients that vanish or
//! reset. (The RFC 9112 rejections and the size limits are rows of the conformance corpus,
//! `corpus.rs`.) A server must go on serving everyone else whatever one client does.

use std::thread;
use std::time::{Duration, Instant};

use super::{
    broken, check, connect, corpus, exchange, expect_status, first_line, get, post, receive,
    still_serves, Outcome, Probed, Target, PATIENCE,
};
use crate::server::Server;
use crate::site::{self, first_difference};

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

// ANCHOR: reset_mid_response
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
// ANCHOR_END: reset_mid_response

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
    for case in corpus::corpus() {
        // Only what happens afterwards matters here; `conformance_corpus` checks the
        // answers.
        let _ = corpus::run_case(&server, &case);
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
