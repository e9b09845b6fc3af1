//! Probes for odd clients: requests that arrive in pieces, and clients that vanish or
//! reset. (The RFC 9112 rejections and the size limits are rows of the conformance corpus,
//! `corpus.rs`.) A server must go on serving everyone else whatever one client does.

use std::thread;
use std::time::{Duration, Instant};

use super::corpus;
use crate::client::Client;
use crate::manifest::Capability;
use crate::probes::checklist::{rule, secs, Rule, FAULTS, READING};
use crate::probes::{
    broken, check, connect, exchange, expect_status, first_line, get, post, receive, sending,
    stats_value, still_serves, until_read, Outcome, Probed, Stop, Target, HELLO, PATIENCE,
};
use crate::probes::{probe, Module, Probe};
use crate::server::Server;
use crate::site::{self, first_difference};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(crate) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("trickled_request", Capability::Basics, trickled_request),
    probe("body_split_across_writes", Capability::Basics, body_split_across_writes),
    probe("client_resets_mid_response", Capability::Basics, client_resets_mid_response),
    probe("clients_that_vanish", Capability::Basics, clients_that_vanish),
    probe("serves_after_abuse", Capability::Basics, serves_after_abuse),
];

/// Sends `request` one byte per write. After every `\r`, and at the end, it waits until
/// the server has read everything so far, so the server sees the request stop there,
/// between a CR and its LF, the split a line-by-line parser most easily gets wrong.
///
/// Why not wait after every byte: each wait asks the kernel (`ss`), which lists every
/// socket on the machine to find ours. That takes 3 ms on a quiet machine but 40 ms and
/// more with the tens of thousands of closed connections a suite run leaves in TIME_WAIT,
/// enough to run a request of 70 bytes past chapter 4's 10 s header timeout. So the bytes
/// between two waits go out back to back, one TCP segment each (the client sets
/// TCP_NODELAY), and the server may read several of them at once.
fn send_trickled(client: &mut Client, request: &[u8], what: &str) -> Result<(), Stop> {
    for (index, byte) in request.iter().enumerate() {
        let what = format!("{what}, byte {} of {}", index + 1, request.len());
        sending(client, std::slice::from_ref(byte), &what)?;
        if *byte == b'\r' || index + 1 == request.len() {
            until_read(client, &what)?;
        }
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
        send_trickled(&mut client, &request, &what)?;
        let response = receive(&mut client, &server, false, &what)?;
        expect_status(&response, &[200], &what)?;
        let expected: &[u8] = if request.starts_with(b"POST") { b"trickled body" } else { HELLO };
        check!(response.body == expected, "{what}: body {:?}", response.text());
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
    let cuts = [30, head_length, head_length + 1000, head_length + 100_000, request.len()];
    let what = "POST /echo with 300000 bytes sent in five writes";
    let mut client = connect(&server)?;
    let mut start = 0;
    for (index, cut) in cuts.into_iter().enumerate() {
        let piece = format!("{what}: piece {} of {}", index + 1, cuts.len());
        sending(&mut client, &request[start..cut], &piece)?;
        start = cut;
        // Each piece is read before the next is sent, so the server really sees the
        // request stop at each cut. (A piece bigger than the socket buffers may still be
        // arriving when the server's queue first shows empty; then its tail and the next
        // piece may be read together, which the server must handle just the same.)
        until_read(&client, &piece)?;
    }
    let response = receive(&mut client, &server, false, what)?;
    expect_status(&response, &[200], what)?;
    if let Some(at) = first_difference(&body, &response.body) {
        return Err(broken(format!("{what}: the echo differs from byte {at} on")));
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
fn reset_mid_response(server: &Server, times: usize) -> Result<(), Stop> {
    let body = site::pattern(1024 * 1024);
    for _ in 0..times {
        let mut client = connect(server)?;
        sending(&mut client, &post("/echo", &body), "a 1 MiB POST /echo")?;
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

fn vanish(server: &Server) -> Result<(), Stop> {
    let leave_after = |bytes: &[u8]| -> Result<(), Stop> {
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

/// How many connections [`serves_after_abuse`]'s `/stats` may count once every other
/// client has gone: its own.
const ASKING: u64 = 1;

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
    still_serves(&mut server, "a mix of bad requests, resets and vanishing clients")?;

    // Every client but the one asking has gone, so the count must come down to one.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let stats = exchange(&server, &get("/stats"))?;
        match stats_value(&stats, "connections_open") {
            Some(count) if count <= ASKING => return Ok(Outcome::Works),
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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("trickled_request", READING,
            "A request sent one byte per write, stopping between each CR and its LF, is \
             answered as if it came whole: `GET /hello`, and `POST /echo` with its body.".to_string()),
        rule("body_split_across_writes", READING, format!(
            "A big `POST /echo` sent in five writes (cut inside a header name, at the end of the \
             head, and twice in the body) is echoed whole. Read what arrives as it arrives: the \
             check waits until the server has read each piece (by the kernel's count, up to \
             {}) before it sends the next.",
            secs(PATIENCE))),
        rule("client_resets_mid_response", FAULTS,
            "Clients that reset their connection in the middle of a big `POST /echo` answer, so \
             that the server's writes fail (EPIPE, ECONNRESET), cost that connection only: the \
             process lives, and serves the next client.".to_string()),
        rule("clients_that_vanish", FAULTS,
            "Clients that connect and leave at every stage (before a byte, mid request line, \
             after a whole request, during a `/sleep`, mid body) cost nothing.".to_string()),
        rule("serves_after_abuse", FAULTS, format!(
            "After the corpus, resets and vanishing clients on one server, it still serves (a \
             `GET /hello`), and within {} of that, `/stats` says `connections_open` {} or less \
             (the connection asking): no connection is leaked. A connection counts until \
             it is really closed, so one still lingering after a refusal (your side shut, \
             waiting for the client's close) must be gone within those {} too.",
            secs(PATIENCE), ASKING, secs(PATIENCE))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![ASKING.to_string()]
}
