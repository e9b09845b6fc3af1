//! The row "keep-alive and pipelining" (chapter 3 on).
//!
//! - [`keep_alive`]: several requests, one after another, on one connection; HTTP/1.0
//!   too, when it asks.
//! - [`pipelining`]: several requests in one write, answered in order, even behind a wait
//!   or a big answer.

use std::thread;
use std::time::Duration;

use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{rule, size, Rule, CONNECTIONS_TOPIC};
use crate::probes::{
    broken, check, connect, expect_status, get, needs_own_server, post, receive, request_and_close,
    sending, with_site, Outcome, Probed, Stop, Target, HELLO, PATIENCE,
};
use crate::probes::{probe, Module, Probe};
use crate::server::Server;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("keep_alive", Capability::KeepAlive, keep_alive),
    probe("pipelining", Capability::KeepAlive, pipelining),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::KeepAlive,
        description: "keep-alive and pipelining",
        chapters: [
            No("ch01 answers one request per connection and closes it, so a second or \
                pipelined request needs a new connection."),
            No("ch02 still answers one request per connection and closes it; keep-alive and \
                pipelining arrive with the event loop in ch03."),
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
        ],
        note: None,
    }
}
// ANCHOR_END: row

/// Row 4: several requests, one after another, on one connection; also for HTTP/1.0
/// clients that ask for it.
pub fn keep_alive(target: &Target) -> Probed {
    let server = target.server()?;
    let mut client = connect(&server)?;
    sending(&mut client, &get("/hello"), "GET /hello")?;
    let first = receive(&mut client, &server, false, "GET /hello")?;
    expect_status(&first, &[200], "GET /hello")?;
    if first.says_close() {
        // `receive` has checked that the server really closed.
        return Ok(Outcome::Lacks(
            "the answer to an HTTP/1.1 GET /hello said Connection: close, and the server \
             closed the connection"
                .into(),
        ));
    }
    // (request, what it is, is it HEAD, the status to expect)
    let steps: [(&[u8], &str, bool, u16); 4] = [
        (
            b"GET /stats HTTP/1.1\r\nHost: suite\r\n\r\n",
            "a second request (GET /stats)",
            false,
            200,
        ),
        // A HEAD answer has a Content-Length but no body: a server that sent the body
        // anyway would garble the next answer, which the next step would notice.
        (b"HEAD /hello HTTP/1.1\r\nHost: suite\r\n\r\n", "a third (HEAD /hello)", true, 200),
        (
            b"POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: 5\r\n\r\nagain",
            "a fourth (POST /echo)",
            false,
            200,
        ),
        (
            b"GET /hello HTTP/1.1\r\nHost: suite\r\nConnection: close\r\n\r\n",
            "a fifth, with Connection: close",
            false,
            200,
        ),
    ];
    for (request, what, head, status) in steps {
        let what = format!("{what} on the same connection");
        sending(&mut client, request, &what)?;
        let response = receive(&mut client, &server, head, &what)?;
        expect_status(&response, &[status], &what)?;
    }
    // `receive` saw the connection close after the last one; it must also have said so.
    // (Checked there: a close without "Connection: close" is an error.)

    // HTTP/1.0 closes unless the client asks for keep-alive, and then the server must
    // say `Connection: keep-alive`, because 1.0 clients assume a close otherwise.
    let mut client = connect(&server)?;
    let what = "GET /hello HTTP/1.0 with Connection: keep-alive";
    sending(&mut client, b"GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", what)?;
    let response = receive(&mut client, &server, false, what)?;
    check!(
        response.has_connection_option("keep-alive"),
        "{what}: the response does not say Connection: keep-alive"
    );
    sending(&mut client, b"GET /hello HTTP/1.0\r\n\r\n", "a second HTTP/1.0 request")?;
    let response = receive(&mut client, &server, false, "a second HTTP/1.0 request")?;
    check!(
        response.says_close(),
        "a plain HTTP/1.0 request was not answered with Connection: close"
    );
    Ok(Outcome::Works)
}

/// Row 4: four requests in one write; four answers, in order.
pub fn pipelining(target: &Target) -> Probed {
    let server = target.server()?;
    let mut requests = get("/hello");
    requests.extend(post("/echo", b"pipelined"));
    requests.extend(get("/sleep?ms=1"));
    requests.extend(b"GET /nowhere HTTP/1.1\r\nHost: suite\r\nConnection: close\r\n\r\n");
    let mut client = connect(&server)?;
    sending(&mut client, &requests, "four pipelined requests")?;
    let expected: [(&str, u16, &[u8]); 4] = [
        ("GET /hello", 200, HELLO),
        ("POST /echo", 200, b"pipelined"),
        ("GET /sleep?ms=1", 200, b"slept 1 ms\n"),
        ("GET /nowhere", 404, b""),
    ];
    for (index, (what, status, body)) in expected.into_iter().enumerate() {
        let what = format!("pipelined request {} ({what})", index + 1);
        let response = receive(&mut client, &server, false, &what)?;
        if index == 0 && response.says_close() {
            return Ok(Outcome::Lacks(
                "of four pipelined requests, only the first was answered (with Connection: \
                 close), then the server closed the connection"
                    .into(),
            ));
        }
        expect_status(&response, &[status], &what)?;
        check!(
            body.is_empty() || response.body == body,
            "{what}: body {:?}; answers out of order?",
            response.text()
        );
    }

    // Fifty at once, each echoing its own number: all answered, in order.
    let mut requests = Vec::new();
    for number in 0..50 {
        requests.extend(post("/echo", format!("request {number}").as_bytes()));
    }
    let mut client = connect(&server)?;
    sending(&mut client, &requests, "fifty pipelined POST /echo")?;
    for number in 0..50 {
        let what = format!("pipelined POST /echo number {number} of 50");
        let response = receive(&mut client, &server, false, &what)?;
        check!(
            response.body == format!("request {number}").as_bytes(),
            "{what}: body {:?}; answers out of order?",
            response.text()
        );
    }

    // A GET may carry a body; it must be skipped, not read as the next request. And a
    // request that says Connection: close is the last one answered.
    let mut client = connect(&server)?;
    sending(
        &mut client,
        b"GET /hello HTTP/1.1\r\nHost: suite\r\nContent-Length: 9\r\n\r\nGET /nope\
          GET /stats HTTP/1.1\r\nHost: suite\r\nConnection: close\r\n\r\n\
          GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n",
        "a GET with a body, then two more",
    )?;
    let what = "a pipelined GET /hello with a 9-byte body";
    let response = receive(&mut client, &server, false, what)?;
    check!(response.body == HELLO, "{what}: body {:?}", response.text());
    let what = "the GET /stats after it, with Connection: close";
    let response = receive(&mut client, &server, false, what)?;
    expect_status(&response, &[200], what)?;
    check!(
        response.text().contains("requests_served"),
        "{what}: body {:?} (was the first request's body read as a request?)",
        response.text()
    );
    // `receive` has checked that the connection then closed, with nothing more sent.

    // More pipelined behind a wait than a server keeps unread (1 MiB, in our chapters):
    // it stops reading until the wait is over, then reads on, and answers every one. (A
    // server that stops reading by cancelling a multishot receive once took that cancel
    // for an error, and reset the connection a third of the way through.)
    let what =
        format!("{} MiB of GET /hello pipelined behind a GET /sleep?ms={WAIT_MS}", BEHIND >> 20);
    let answered = answer_count_behind_a_wait(&server, &what)?;
    let expected = BEHIND / HELLO_REQUEST.len() + 1;
    check!(answered == expected, "{what}: {answered} of {expected} answers came");

    // A request that comes while the one before it is still being answered (a 4 MiB file
    // on its way, read a chunk at a time): it is kept, and answered after. A server that
    // reads on while an answer waits must not lose what it read when the wait ends
    // (chapter 10 once did: a receive in flight, dropped with the race it was part of).
    if needs_own_server(target).is_ok() {
        let (server, _site) = with_site(target, 4 << 20)?;
        for attempt in 0..10 {
            let what = format!("a GET /hello pipelined 2 ms behind a 4 MiB file (try {attempt})");
            let mut client = connect(&server)?;
            sending(&mut client, &get("/files/big.bin"), &what)?;
            thread::sleep(Duration::from_millis(2)); // the gap is the point, not a wait
            sending(&mut client, &request_and_close("GET", "/hello"), &what)?;
            expect_status(&receive(&mut client, &server, false, &what)?, &[200], &what)?;
            let response = receive(&mut client, &server, false, &what)?;
            check!(response.body == HELLO, "{what}: body {:?}", response.text());
        }
    }
    Ok(Outcome::Works)
}

/// How much [`pipelining`] sends behind a wait: more than a server reads while a request
/// waits (our chapters' `MAX_PENDING`, 1 MiB), so that it must stop reading and read on.
pub(super) const BEHIND: usize = 2 << 20;
/// How long the request in front of them waits (`GET /sleep?ms=WAIT_MS`).
const WAIT_MS: u64 = 200;
const HELLO_REQUEST: &[u8] = b"GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n";

/// Sends `GET /sleep?ms=200` and [`BEHIND`] bytes of `GET /hello` in one go (from a thread
/// of its own, since the server pushes back), and counts the answers that come before the
/// connection ends or goes quiet for [`PATIENCE`].
fn answer_count_behind_a_wait(server: &Server, what: &str) -> Result<usize, Stop> {
    let connect = |error| broken(format!("{what}: cannot connect: {error}"));
    let stream = std::net::TcpStream::connect(server.address).map_err(connect)?;
    let mut writer = stream.try_clone().map_err(connect)?;
    let mut requests = get(&format!("/sleep?ms={WAIT_MS}"));
    requests.extend(HELLO_REQUEST.repeat(BEHIND / HELLO_REQUEST.len()));
    let sender = thread::spawn(move || std::io::Write::write_all(&mut writer, &requests));
    stream.set_read_timeout(Some(PATIENCE)).map_err(connect)?;
    let (mut answered, mut tail, mut chunk) = (0, Vec::new(), vec![0u8; 1 << 16]);
    let expected = BEHIND / HELLO_REQUEST.len() + 1;
    while answered < expected {
        match std::io::Read::read(&mut &stream, &mut chunk) {
            Ok(0) | Err(_) => break, // closed, reset, or quiet for too long: counted so far
            Ok(count) => {
                tail.extend_from_slice(&chunk[..count]);
                answered += tail.windows(12).filter(|w| *w == b"HTTP/1.1 200").count();
                tail.drain(..tail.len().saturating_sub(11)); // a status line split in two
            }
        }
    }
    drop(stream);
    let _ = sender.join();
    Ok(answered)
}

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("keep_alive", CONNECTIONS_TOPIC,
            "An HTTP/1.1 connection stays open after each answer (no `Connection: close`), for \
             `GET`, `HEAD` and `POST` in turn. A request that says `Connection: close` is \
             answered with `Connection: close`, and the server closes.".to_string()),
        rule("keep_alive", CONNECTIONS_TOPIC,
            "HTTP/1.0 closes after each answer, saying `Connection: close`, unless the request \
             says `Connection: keep-alive`: then the answer says `Connection: keep-alive`, and \
             the connection stays open.".to_string()),
        rule("pipelining", CONNECTIONS_TOPIC,
            "Requests sent together in one write are answered in order, each whole: four \
             different ones, and fifty `POST /echo` that each echo their own number. A `GET` \
             with a body has the body skipped, not read as a request. Nothing after a request \
             that says `Connection: close` is answered, though more requests follow it.".to_string()),
        rule("pipelining", CONNECTIONS_TOPIC,
            "A request that arrives while a big answer (a file) is still being sent is kept, and \
             answered after it.".to_string()),
        rule("pipelining", CONNECTIONS_TOPIC, format!(
            "{} of `GET /hello` pipelined behind a `GET /sleep?ms={}`, more than a server need \
             keep unread while the sleep waits: every one is answered, in one connection. Stop \
             reading when too much waits, and read on after.",
            size(BEHIND as u64), WAIT_MS)),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![size(BEHIND as u64), WAIT_MS.to_string()]
}
