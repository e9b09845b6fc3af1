//! Probes for the capability table's rows 2 to 8: what the architecture of a chapter
//! makes possible. Chapters without the capability must fail these *in the expected
//! way*: the `/hello` waits exactly as long as the other client holds the server, and is
//! answered as soon as it lets go; SIGTERM kills instead of stopping; nothing times out.
//! Any other failure (a crash, a wrong answer, a server that stays stuck) is a bug.

use std::os::unix::process::ExitStatusExt;
use std::thread;
use std::time::{Duration, Instant};

use super::{
    broken, check, connect, drain, dropped_note, exchange, expect_status, finish_hello, get,
    hello_meanwhile, make_site, needs_own_server, post, receive, request_and_close, seconds,
    sending, start_big_download, still_serves, until_accepted, until_read, with_site,
    with_upstream, Meanwhile, Outcome, Probed, Stop, Target, HELLO, PATIENCE, PROMPTLY,
};
use super::{measured, stat};
use crate::client::{show, Client, Ending, ReadError};
use crate::kernel;
use crate::manifest::{self, Capability, Expect};
use crate::resources;
use crate::server::{Options, Server};
use crate::site::{self, first_difference};

// ANCHOR: idle_client
/// Row 2: a client that connects and says nothing must not keep others waiting.
pub fn idle_client(target: &Target) -> Probed {
    let server = target.server()?;
    let idle = connect(&server)?;
    // Make sure the server has taken the idle client in before anyone else arrives;
    // otherwise a one-at-a-time server could simply serve the next client first.
    until_accepted(&server, "an idle client's connection")?;
    match hello_meanwhile(&server)? {
        Meanwhile::Answered => Ok(Outcome::Works),
        Meanwhile::Waiting { client, sent } => {
            let left = Instant::now();
            drop(idle);
            finish_hello(&server, client, sent)?;
            Ok(Outcome::Lacks(format!(
                "GET /hello got no answer within {} while an idle client held a connection; \
                 it was answered {} after the idle client left",
                seconds(PROMPTLY),
                seconds(left.elapsed())
            )))
        }
    }
}
// ANCHOR_END: idle_client

/// Row 2: a client that sends half a request head and stalls (slowloris) must not keep
/// others waiting.
pub fn half_sent_request(target: &Target) -> Probed {
    let server = target.server()?;
    let mut slow = connect(&server)?;
    sending(&mut slow, b"GET /hello HTTP/1.1\r\nHost: su", "half a request head")?;
    until_read(&slow, "half a request head")?;
    match hello_meanwhile(&server)? {
        Meanwhile::Answered => Ok(Outcome::Works),
        Meanwhile::Waiting { client, sent } => {
            let left = Instant::now();
            drop(slow);
            finish_hello(&server, client, sent)?;
            Ok(Outcome::Lacks(format!(
                "GET /hello got no answer within {} while another client sat on half a \
                 request head; it was answered {} after that client left",
                seconds(PROMPTLY),
                seconds(left.elapsed())
            )))
        }
    }
}

/// Row 3: a client that asks for a big file and stops reading must not keep others
/// waiting. The file is bigger than the kernel's socket buffers can hold, so the server
/// cannot simply hand the whole response to the kernel and move on.
pub fn slow_reader(target: &Target) -> Probed {
    let (server, site) = with_site(target, site::stuck_response_size())?;
    let (mut reader, already) = start_big_download(&server, &site)?;
    let what = "the big response left unread for a while";
    match hello_meanwhile(&server)? {
        Meanwhile::Answered => {
            drain(&mut reader, &site, already, what)?;
            Ok(Outcome::Works)
        }
        Meanwhile::Waiting { client, sent } => {
            let resumed = Instant::now();
            drain(&mut reader, &site, already, what)?;
            drop(reader);
            finish_hello(&server, client, sent)?;
            Ok(Outcome::Lacks(format!(
                "GET /hello got no answer within {} while another client left a {} MiB \
                 response unread; it was answered {} after that client read the rest",
                seconds(PROMPTLY),
                site.big.len() >> 20,
                seconds(resumed.elapsed())
            )))
        }
    }
}

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
    let what = format!("{} MiB of GET /hello pipelined behind a GET /sleep?ms=200", BEHIND >> 20);
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
const HELLO_REQUEST: &[u8] = b"GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n";

/// Sends `GET /sleep?ms=200` and [`BEHIND`] bytes of `GET /hello` in one go (from a thread
/// of its own, since the server pushes back), and counts the answers that come before the
/// connection ends or goes quiet for [`PATIENCE`].
fn answer_count_behind_a_wait(server: &Server, what: &str) -> Result<usize, Stop> {
    let connect = |error| broken(format!("{what}: cannot connect: {error}"));
    let stream = std::net::TcpStream::connect(server.address).map_err(connect)?;
    let mut writer = stream.try_clone().map_err(connect)?;
    let mut requests = get("/sleep?ms=200");
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

/// How many clients try to connect after SIGTERM in [`graceful_shutdown`], how far apart,
/// how soon one that gets in must have an answer (a server that answers at all answers a
/// `GET /hello` in a millisecond), and from when on each must be refused: at once, in
/// fact (our chapters refuse the first, 0.2 s after the signal); the margin is for a busy
/// machine, where the signal may take a while to reach the loops.
pub(super) const NEWCOMERS: usize = 7;
pub(super) const NEWCOMERS_EVERY: Duration = Duration::from_millis(200);
pub(super) const NEWCOMER_ANSWERED_WITHIN: Duration = Duration::from_secs(2);
pub(super) const REFUSED_WITHIN: Duration = Duration::from_secs(1);

/// Row 5: SIGTERM while a big response is in flight. A graceful server stops accepting,
/// finishes the response, and exits 0.
///
/// Stops accepting on every loop: while the response is held in flight (the client reads
/// none of it), a new client tries to connect every [`NEWCOMERS_EVERY`], [`NEWCOMERS`]
/// times. From [`REFUSED_WITHIN`] after the signal on, each must be refused; before, one
/// that gets in must at least have an answer to its `GET /hello` (or be closed) within
/// [`NEWCOMER_ANSWERED_WITHIN`]. A loop that closes its listener while the kernel still
/// holds it open (an accept the loop no longer waits for, still in flight) leaves the
/// newcomers in the listener's queue, connected and unanswered, until the process exits. A
/// server with more than one loop runs two (`--threads 2`).
pub fn graceful_shutdown(target: &Target) -> Probed {
    needs_own_server(target)?;
    let site = make_site(site::stuck_response_size())?;
    let mut server = target.start(Options {
        root: Some(site.root.clone()),
        if_supported: vec![("--threads", "2".into())],
        ..Options::default()
    })?;
    let (mut client, already) = start_big_download(&server, &site)?;
    server.signal("TERM").map_err(broken)?;
    if let Some(seen) = newcomers_after_the_signal(&mut server)? {
        return Ok(Outcome::Lacks(seen));
    }
    let rest = drain(&mut client, &site, already, "the response in flight at SIGTERM");
    drop(client);
    let Some(status) = server.wait_for_exit(Instant::now() + PATIENCE) else {
        return Err(broken(format!(
            "still running {} s after SIGTERM (its one response {})",
            PATIENCE.as_secs(),
            if rest.is_ok() { "was complete" } else { "was cut" }
        )));
    };
    if status.signal() == Some(15) {
        let cut = match rest {
            Ok(()) => "though the response in flight had already been handed to the kernel".into(),
            Err(Stop::Broken(what)) => format!("cutting the response in flight ({what})"),
            Err(skipped) => return Err(skipped),
        };
        return Ok(Outcome::Lacks(format!(
            "SIGTERM killed the process (it has no handler for it), {cut}"
        )));
    }
    check!(
        status.code() == Some(0),
        "after SIGTERM the process ended with {status}, expected exit status 0{}",
        server.stderr_note()
    );
    rest.map_err(|stop| match stop {
        Stop::Broken(what) => broken(format!("exited 0 after SIGTERM, but {what}")),
        skipped => skipped,
    })?;

    // SIGINT (Ctrl-C) too, on an idle server.
    let mut idle = target.server()?;
    idle.signal("INT").map_err(broken)?;
    match idle.wait_for_exit(Instant::now() + PATIENCE) {
        Some(status) if status.code() == Some(0) => Ok(Outcome::Works),
        Some(status) => Err(broken(format!("an idle server ended with {status} after SIGINT"))),
        None => Err(broken(format!(
            "an idle server was still running {} s after SIGINT",
            PATIENCE.as_secs()
        ))),
    }
}

/// The newcomers of [`graceful_shutdown`], after the signal: each must be refused (or,
/// within [`REFUSED_WITHIN`], answered). What was seen if one was let in when it should not
/// have been.
fn newcomers_after_the_signal(server: &mut Server) -> Result<Option<String>, Stop> {
    let signalled = Instant::now();
    let mut seen = Vec::new();
    for number in 1..=NEWCOMERS {
        // Spread over the shutdown, not a wait for anything: each tries afresh.
        thread::sleep(NEWCOMERS_EVERY);
        if server.exit_status().is_some() {
            return Ok(None); // SIGTERM killed it (chapters 1 and 2): nobody is let in
        }
        let after = signalled.elapsed();
        let what = format!(
            "a client that connected {} after SIGTERM ({number} of {NEWCOMERS})",
            seconds(after)
        );
        let before = if seen.is_empty() { "none".to_string() } else { seen.join(", ") };
        let mut client = match Client::connect(server.address) {
            Ok(client) => client,
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                seen.push("refused".to_string());
                continue;
            }
            Err(error) => return Err(broken(format!("{what}: {error}"))),
        };
        sending(&mut client, &get("/hello"), &what)?;
        let sent = Instant::now();
        let outcome = match client.read_response(sent + NEWCOMER_ANSWERED_WITHIN, false) {
            Ok(response) => response.summary(),
            Err(ReadError::Closed { received: 0 } | ReadError::Reset { received: 0 }) => {
                "closed without an answer".to_string()
            }
            Err(ReadError::TimedOut { .. }) => {
                return Ok(Some(format!(
                    "after SIGTERM, with one response held in flight, {what} was let in, and \
                     its GET /hello had no answer {} later, while the server still ran: a \
                     loop whose listener is still open, with nobody accepting from it (the \
                     newcomers before it: {before})",
                    seconds(NEWCOMER_ANSWERED_WITHIN)
                )));
            }
            Err(error) => return Err(broken(format!("{what}: {error}{}", server.stderr_note()))),
        };
        if after >= REFUSED_WITHIN {
            return Ok(Some(format!(
                "after SIGTERM, with one response held in flight, {what} was let in (its GET \
                 /hello: {outcome}): the server still accepted new clients (the newcomers \
                 before it: {before})"
            )));
        }
        seen.push(format!("let in ({outcome})"));
    }
    // Shown with `cargo test -p suite graceful_shutdown -- --nocapture`.
    println!("{}: newcomers after SIGTERM: {}", server.label, seen.join(", "));
    Ok(None)
}

/// How soon a graceful shutdown must end once nothing is in flight: at once, in fact; the
/// margin is for a busy machine. Far less than the contract's grace period
/// ([`GRACE_PERIOD`]), which only bounds how long responses in flight may take.
pub(super) const PROMPT_EXIT: Duration = Duration::from_secs(2);
/// The contract's bound on a graceful shutdown: responses in flight get this long.
pub(super) const GRACE_PERIOD: Duration = Duration::from_secs(5);
/// The `/sleep` in flight at SIGTERM in [`prompt_shutdown`].
pub(super) const SLEEP_AT_SHUTDOWN: Duration = Duration::from_millis(1000);

/// Row 5: a graceful shutdown exits as soon as nothing is in flight (the contract), not
/// when its grace period runs out. Three cases:
///
/// - SIGTERM with only idle clients connected (one that connected and sent nothing, and,
///   where there is keep-alive, one kept open after its answer): nothing is in flight,
///   so the process must exit 0 within [`PROMPT_EXIT`]. A loop that waits for every
///   connection to close, or for its grace period, sits out the full 5 s.
/// - SIGTERM with one client connected that asked for `Connection: close`, read its whole
///   answer, and keeps its socket open. The server has shut its side and waits for the
///   client to close its own (a lingering close, so that no request still on its way
///   turns into a reset that destroys the answer). Nothing more can come that matters, so
///   that wait must not hold the exit: within [`PROMPT_EXIT`] again. A server that lingers
///   until its keep-alive timeout sits out 5 s (nginx's `lingering_close auto` closes at
///   once when nothing more came).
/// - From chapter 4 on, where `/sleep` waits on a timer: SIGTERM while a `GET
///   /sleep?ms=1000` waits. It must get its answer, saying `Connection: close`, and the
///   process must exit right after it, not at the end of the grace period. (Chapter 3's
///   `/sleep` blocks the loop, signal and all: `graceful_shutdown` covers it.)
pub fn prompt_shutdown(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server = target.server()?;
    let mut kept = connect(&server)?;
    let response = {
        sending(&mut kept, &get("/hello"), "GET /hello")?;
        receive(&mut kept, &server, false, "GET /hello")?
    };
    expect_status(&response, &[200], "GET /hello")?;
    // A chapter without keep-alive has closed `kept` (`receive` checked); it must go, or
    // chapter 1 waits for it to hang up before it takes the next client.
    let kept = (!response.says_close()).then_some(kept);
    let idle = if kept.is_none() {
        "a client that connected and sent nothing"
    } else {
        "two idle clients (one that connected and sent nothing, one kept alive after its \
         answer)"
    };
    let _silent = connect(&server)?;
    until_accepted(&server, "a client that connected and sent nothing")?;
    server.signal("TERM").map_err(broken)?;
    let signalled = Instant::now();
    if let Some(status) = server.wait_for_exit(signalled + PROMPT_EXIT) {
        if status.signal() == Some(15) {
            return Ok(Outcome::Lacks(format!(
                "SIGTERM killed the process (it has no handler for it), with {idle} connected"
            )));
        }
    }
    let situation = format!("with only {idle} connected, nothing was in flight at SIGTERM");
    exited_within(&mut server, signalled, PROMPT_EXIT, &situation)?;
    drop(kept);

    // A client that has its final answer and keeps its socket open.
    let mut server = target.server()?;
    let what = "GET /hello with Connection: close";
    let mut finished = connect(&server)?;
    sending(&mut finished, &request_and_close("GET", "/hello"), what)?;
    // `receive` reads the whole answer and sees the server shut its side.
    let response = receive(&mut finished, &server, false, what)?;
    expect_status(&response, &[200], what)?;
    server.signal("TERM").map_err(broken)?;
    let signalled = Instant::now();
    let situation = "with only one client connected, which had read its final answer (it \
                     asked for Connection: close) and kept its socket open, nothing was in \
                     flight at SIGTERM";
    exited_within(&mut server, signalled, PROMPT_EXIT, situation)?;
    drop(finished);

    if manifest::expectation(Capability::SleepAndUpstream, target.chapter) != Expect::Yes {
        return Ok(Outcome::Works);
    }
    let mut server = target.server()?;
    let what = format!("a GET /sleep?ms={} in flight at SIGTERM", SLEEP_AT_SHUTDOWN.as_millis());
    let mut client = connect(&server)?;
    sending(&mut client, &get(&format!("/sleep?ms={}", SLEEP_AT_SHUTDOWN.as_millis())), &what)?;
    let sent = Instant::now();
    until_read(&client, &what)?;
    server.signal("TERM").map_err(broken)?;
    let signalled = Instant::now();
    // `receive` also checks that the connection then really closes.
    let response = receive(&mut client, &server, false, &what)?;
    expect_status(&response, &[200], &what)?;
    let expected = format!("slept {} ms\n", SLEEP_AT_SHUTDOWN.as_millis());
    check!(
        response.text() == expected,
        "{what}: body {:?}, expected {expected:?}",
        response.text()
    );
    check!(
        sent.elapsed() >= SLEEP_AT_SHUTDOWN,
        "{what}: answered after only {}: the sleep was cut short",
        seconds(sent.elapsed())
    );
    check!(
        response.says_close(),
        "{what}: the answer does not say Connection: close, though the server is shutting \
         down"
    );
    drop(client);
    let situation = format!("{what} was answered, and then nothing was in flight");
    exited_within(&mut server, signalled, SLEEP_AT_SHUTDOWN + TIMEOUT_SLACK, &situation)?;
    Ok(Outcome::Works)
}

/// After SIGTERM at `signalled`, in `situation` (for messages): the process must exit 0
/// within `bound`. If it is late, we wait on to say how late: that tells a loop that sat out
/// a timeout from one that would never have ended.
fn exited_within(
    server: &mut Server, signalled: Instant, bound: Duration, situation: &str,
) -> Result<(), Stop> {
    if let Some(status) = server.wait_for_exit(signalled + bound) {
        check!(
            status.code() == Some(0),
            "{situation}: after SIGTERM the process ended with {status}, expected exit status \
             0{}",
            server.stderr_note()
        );
        return Ok(());
    }
    let ended = match server.wait_for_exit(signalled + GRACE_PERIOD + PATIENCE) {
        Some(status) => {
            format!("it ended {} after the signal ({status})", seconds(signalled.elapsed()))
        }
        None => format!("it was still running {} after it", seconds(signalled.elapsed())),
    };
    Err(broken(format!(
        "{situation}, yet the process was still running {} after SIGTERM; {ended}",
        seconds(bound)
    )))
}

// ANCHOR: served_while_busy
/// The shape shared by the "something slow" probes (rows 6 and 8). `busy` has sent a
/// request that keeps its handler waiting for `hold` (a sleep, an upstream, a disk).
/// Meanwhile another client asks for `/hello`. Which answer comes first?
///
/// A chapter that waits for the slow thing *without blocking* answers `/hello` at once,
/// long before the slow answer. A chapter that blocks cannot answer `/hello` until the
/// slow request is done, so both answers arrive together (in either order: the loop may
/// write them in the same turn). Comparing the two answers with each other, rather than
/// timing `/hello` against a fixed bound, keeps the verdict right on a machine too busy to
/// answer anything quickly. `check_busy` checks the slow request's own answer.
///
/// `None` means "can't tell": the `/hello` went out too late, when the slow request was
/// nearly over. The caller then tries again with a longer hold.
fn served_while_busy(
    server: &Server, mut busy: Client, busy_what: &str, hold: Duration,
    check_busy: impl Fn(&crate::client::Response) -> Result<(), Stop>,
) -> Result<Option<Outcome>, Stop> {
    thread::scope(|scope| {
        // The slow request is read on its own thread, so we learn the moment it ends.
        let slow = scope.spawn(move || {
            let response = receive(&mut busy, server, false, busy_what);
            // Hang up at once: a server that lingers until its client leaves (ch01's
            // gentle close) would otherwise count our dawdling as its own slowness.
            drop(busy);
            (response, Instant::now())
        });
        let hello_sent = Instant::now();
        let hello = exchange(server, &get("/hello"));
        let hello_answered = Instant::now();
        let (slow_response, slow_answered) =
            slow.join().map_err(|_| broken(format!("reading {busy_what} panicked")))?;
        check_busy(&slow_response?)?;
        expect_status(&hello?, &[200], "GET /hello")?;
        // A third of the hold: far more than lies between two answers released by the
        // same event, far less than a non-blocking chapter leaves between them.
        let margin = hold / 3;
        if slow_answered < hello_sent + margin {
            Ok(None)
        } else if hello_answered + margin < slow_answered {
            Ok(Some(Outcome::Works))
        } else {
            Ok(Some(Outcome::Lacks(format!(
                "a GET /hello sent while {busy_what} was in progress was answered only when \
                 that was over, {} after it was sent",
                seconds(hello_answered - hello_sent)
            ))))
        }
    })
}
// ANCHOR_END: served_while_busy

/// How long the slow request of [`served_while_busy`] takes: short first, and longer if
/// the machine was too busy to tell.
pub(super) const HOLDS_MS: [u64; 2] = [1500, 4000];

fn with_longer_holds(mut attempt: impl FnMut(u64) -> Result<Option<Outcome>, Stop>) -> Probed {
    for hold in HOLDS_MS {
        if let Some(outcome) = attempt(hold)? {
            return Ok(outcome);
        }
    }
    Err(broken(format!(
        "inconclusive: even with a {HOLDS_MS:?} ms slow request, the GET /hello could not be \
         sent before it was nearly over (is the machine very busy?)"
    )))
}

/// Row 6: `/sleep` waits without holding anyone else up.
pub fn sleep_elsewhere(target: &Target) -> Probed {
    let server = target.server()?;
    with_longer_holds(|hold| {
        let what = format!("another client's GET /sleep?ms={hold}");
        let mut sleeper = connect(&server)?;
        sending(&mut sleeper, &get(&format!("/sleep?ms={hold}")), &what)?;
        let started = Instant::now();
        // Be sure the server is in the sleep before we ask for /hello.
        until_read(&sleeper, &what)?;
        let hold = Duration::from_millis(hold);
        served_while_busy(&server, sleeper, &what, hold, |response| {
            expect_status(response, &[200], &what)?;
            let expected = format!("slept {} ms\n", hold.as_millis());
            check!(response.text() == expected, "{what}: body {:?}", response.text());
            check!(
                started.elapsed() >= hold,
                "{what} answered after only {}",
                seconds(started.elapsed())
            );
            Ok(())
        })
    })
}

/// Row 6: a slow upstream waits without holding anyone else up.
pub fn slow_upstream(target: &Target) -> Probed {
    let (server, upstream) = with_upstream(target)?;
    with_longer_holds(|hold| {
        let what = format!("another client's GET /upstream/slow?ms={hold} (a slow upstream)");
        let mut client = connect(&server)?;
        sending(&mut client, &get(&format!("/upstream/slow?ms={hold}")), &what)?;
        // Once the upstream has the request, the chapter is waiting on it.
        check!(
            upstream.wait_for_request(PATIENCE).is_some(),
            "{what}: the server never sent the upstream (its --upstream) a request"
        );
        let hold = Duration::from_millis(hold);
        served_while_busy(&server, client, &what, hold, |response| {
            expect_status(response, &[200], &what)?;
            check!(response.text() == "slow answer\n", "{what}: body {:?}", response.text());
            Ok(())
        })
    })
}

/// The sleeps [`answers_as_ready`] pipelines, and how many.
pub(super) const READY_SLEEP: Duration = Duration::from_millis(700);
pub(super) const READY_REQUESTS: usize = 3;

// ANCHOR: answers_as_ready
/// Row 6: pipelined answers go out as each is ready, not as a batch. One client pipelines
/// three `GET /sleep?ms=700` in one write. They are answered in order, so the first is
/// ready at 0.7 s, and must arrive then, not wait for the others (at 2.1 s, one after the
/// other; at 0.7 s, if a chapter sleeps for all three at once). The bound is two sleeps: a
/// whole sleep of margin on either side.
///
/// A server that works through the pipeline to its end before it writes anything sends
/// all three together at the end: the first client of a browser's pipelined page waits
/// for its slowest part. A chapter that blocks in `/sleep` does that too, and holds up
/// everyone besides.
pub fn answers_as_ready(target: &Target) -> Probed {
    let server = target.server()?;
    let ms = READY_SLEEP.as_millis();
    let mut client = connect(&server)?;
    let what = format!("{READY_REQUESTS} GET /sleep?ms={ms} pipelined in one write");
    sending(&mut client, &get(&format!("/sleep?ms={ms}")).repeat(READY_REQUESTS), &what)?;
    let sent = Instant::now();
    let mut arrivals = Vec::with_capacity(READY_REQUESTS);
    for number in 1..=READY_REQUESTS {
        let this = format!("pipelined GET /sleep?ms={ms} number {number} of {READY_REQUESTS}");
        let response = receive(&mut client, &server, false, &this)?;
        arrivals.push(sent.elapsed());
        expect_status(&response, &[200], &this)?;
        let expected = format!("slept {ms} ms\n");
        check!(response.text() == expected, "{this}: body {:?}", response.text());
        if number == 1 && response.says_close() {
            // `receive` has checked that the server really closed.
            return Ok(Outcome::Lacks(format!(
                "of {what}, only the first was answered (with Connection: close, after {}), \
                 then the server closed the connection",
                seconds(arrivals[0])
            )));
        }
    }
    check!(
        arrivals[0] >= READY_SLEEP,
        "{what}: the first answer came after only {}: the sleep was cut short",
        seconds(arrivals[0])
    );
    if arrivals[0] < 2 * READY_SLEEP {
        return Ok(Outcome::Works);
    }
    let times: Vec<String> = arrivals.iter().map(|&arrival| seconds(arrival)).collect();
    Ok(Outcome::Lacks(format!(
        "of {what}, the answers arrived {} after they were sent: the first, ready after {}, \
         waited for the others",
        times.join(", "),
        seconds(READY_SLEEP)
    )))
}
// ANCHOR_END: answers_as_ready

/// Row 8: a slow disk (`--fs-delay-ms`) holds up only the request that reads the file.
pub fn slow_disk(target: &Target) -> Probed {
    needs_own_server(target)?;
    let site = make_site(0)?;
    with_longer_holds(|hold| {
        // The delay is paid twice: once to open the file, once to read it.
        let delay_ms = hold / 2;
        let server = target.start(Options {
            root: Some(site.root.clone()),
            fs_delay_ms: Some(delay_ms),
            ..Options::default()
        })?;
        let what = format!("another client's GET /files/hello.txt (--fs-delay-ms {delay_ms})");
        let mut client = connect(&server)?;
        sending(&mut client, &get("/files/hello.txt"), &what)?;
        until_read(&client, &what)?;
        served_while_busy(&server, client, &what, Duration::from_millis(hold), |response| {
            expect_status(response, &[200], &what)?;
            check!(
                response.body == site::HELLO_TXT.as_bytes(),
                "{what}: body {:?}",
                response.text()
            );
            Ok(())
        })
    })
}

/// How long after a timeout's deadline we still wait for it to fire.
pub(super) const TIMEOUT_SLACK: Duration = Duration::from_millis(1500);
/// The timeout each timeout probe starts the server with (`--header-timeout 0.5`, and so
/// on): short, so that the probes are, yet long against a turn of any loop.
pub(super) const TIMEOUT_UNDER_TEST: Duration = Duration::from_millis(500);
/// How much earlier than its deadline a timeout may fire: the clocks of the suite and of
/// the server do not start at quite the same moment.
pub(super) const TIMEOUT_EARLY: Duration = Duration::from_millis(100);
/// The `--keep-alive-timeout` of [`header_timeout`]: longer than the idle time it puts
/// between two requests on one connection, so that only the header timeout is at stake.
pub(super) const HEADER_PROBE_KEEP_ALIVE: Duration = Duration::from_secs(3);

/// A duration as a timeout flag takes it, in seconds: `0.5`, `3`.
pub(super) fn flag_seconds(duration: Duration) -> String {
    duration.as_secs_f64().to_string()
}

/// Row 7: a client that sends half a head and stalls gets 408 after `--header-timeout`.
pub fn header_timeout(target: &Target) -> Probed {
    needs_own_server(target)?;
    let timeout = TIMEOUT_UNDER_TEST;
    let mut server = target.start(Options {
        if_supported: vec![
            ("--header-timeout", flag_seconds(timeout)),
            ("--keep-alive-timeout", flag_seconds(HEADER_PROBE_KEEP_ALIVE)),
        ],
        ..Options::default()
    })?;
    let mut client = connect(&server)?;
    let what = "a client that sent half a request head and stalled";
    sending(&mut client, b"GET /hello HTTP/1.1\r\nHost: suite\r\n", what)?;
    let sent = Instant::now();
    match client.wait_for_bytes(sent + timeout + TIMEOUT_SLACK) {
        Ok(()) => {}
        Err(crate::client::ReadError::TimedOut { .. }) => {
            drop(client);
            still_serves(&mut server, "a stalled half-sent head")?;
            return Ok(Outcome::Lacks(format!(
                "{what} got no 408 and was not disconnected within {}{}",
                seconds(timeout + TIMEOUT_SLACK),
                dropped_note(&server)
            )));
        }
        Err(error) => {
            return Err(broken(format!("{what}: expected a 408, but {error} (no response)")))
        }
    }
    expect_408(&mut client, &server, sent, timeout, what)?;

    // The clock starts again after each response: a keep-alive client that answers its
    // first response with half a head gets the same treatment.
    let mut client = connect(&server)?;
    sending(&mut client, &get("/hello"), "GET /hello")?;
    let response = receive(&mut client, &server, false, "GET /hello")?;
    if !response.says_close() {
        let what = "a keep-alive client that sent half its second request head";
        sending(&mut client, b"GET /hello HTTP/1.1\r\nHo", what)?;
        let sent = Instant::now();
        client
            .wait_for_bytes(sent + timeout + TIMEOUT_SLACK)
            .map_err(|error| broken(format!("{what}: expected a 408, but {error}")))?;
        expect_408(&mut client, &server, sent, timeout, what)?;
    }

    // A kept-alive client idle for longer than the header timeout (but within the
    // keep-alive timeout) has the whole header timeout for its next head, counted from its
    // first byte: idle time is not taken from it.
    let mut client = connect(&server)?;
    sending(&mut client, &get("/hello"), "GET /hello")?;
    let response = receive(&mut client, &server, false, "GET /hello")?;
    if !response.says_close() {
        thread::sleep(timeout * 2); // idle, as a browser between two clicks
        let what = "a keep-alive client idle for 1 s that then sent its next head in two parts";
        sending(&mut client, b"GET /hello HTTP/1.1\r\n", what)?;
        thread::sleep(timeout / 5);
        sending(&mut client, b"Host: suite\r\n\r\n", what)?;
        let response = receive(&mut client, &server, false, what)?;
        check!(
            response.status == 200,
            "{what} got {} instead of 200: with --keep-alive-timeout 3 and --header-timeout \
             0.5, the header timeout counts from the first byte of the head, not from the \
             last answer",
            response.status
        );
    }

    // A client that connects and sends nothing has not sent a head either. A 408 or a
    // silent close are both fine; staying open is not.
    let mut client = connect(&server)?;
    let what = "a client that connected and sent nothing";
    let connected = Instant::now();
    match client.wait_for_close(connected + timeout + TIMEOUT_SLACK) {
        Ending::Closed => {}
        Ending::StillOpen => {
            return Err(broken(format!(
                "{what} was still connected {} later, with --header-timeout 0.5",
                seconds(connected.elapsed())
            )))
        }
        Ending::MoreBytes(bytes) => check!(
            bytes.starts_with(b"HTTP/1.1 408 "),
            "{what} was sent {} instead of a 408",
            show(&bytes)
        ),
    }
    Ok(Outcome::Works)
}

/// Row 7: a client that asks for a big file and then takes nothing of it is closed after
/// `--send-timeout`. Without it, a client that never reads holds its connection (and the
/// response's memory) for ever: slowloris from the other end.
///
/// The server gives up with the rest of the response still queued in the kernel ahead of
/// its FIN, so the client could only see the close by first reading megabytes, and
/// reading is what resets the timeout. The kernel shows the close without that (see
/// [`kernel::wait_until_closed_by_server`]). Then the client reads on: a response that
/// ends early was cut by the server, one that arrives whole was kept waiting for it.
/// (Where the kernel cannot be asked, the probe waits out the deadline and relies on
/// that second half alone.)
pub fn send_timeout(target: &Target) -> Probed {
    needs_own_server(target)?;
    let timeout = TIMEOUT_UNDER_TEST;
    let site = make_site(site::stuck_response_size())?;
    let mut server = target.start(Options {
        root: Some(site.root.clone()),
        if_supported: vec![("--send-timeout", flag_seconds(timeout))],
        ..Options::default()
    })?;
    // The server can write nothing of the response before this, so its send timeout
    // cannot run out before `asked + timeout` either.
    let asked = Instant::now();
    let (mut client, already) = start_big_download(&server, &site)?;
    let total = site.big.len();
    let what = format!("a client that asked for a {} MiB file and then read nothing", total >> 20);
    let deadline = asked + timeout + TIMEOUT_SLACK;
    let waited = deadline.saturating_duration_since(Instant::now());
    let closed = kernel::wait_until_closed_by_server(client.stream(), waited);
    let seen = Instant::now();
    if closed.is_none() {
        // Nothing to watch: wait out the deadline under test, then see what the reading
        // shows.
        thread::sleep(deadline.saturating_duration_since(seen));
    }

    // Read on, to the end of the response or of the connection.
    let mut received = already;
    let cut = loop {
        if received == total {
            break false;
        }
        match client.read_some(total - received, Instant::now() + PATIENCE) {
            Ok(bytes) => {
                if let Some(at) =
                    first_difference(&site.big[received..received + bytes.len()], &bytes)
                {
                    return Err(broken(format!(
                        "{what}: when it read on, the body differed from byte {} on",
                        received + at
                    )));
                }
                received += bytes.len();
            }
            Err(ReadError::Closed { .. } | ReadError::Reset { .. }) => break true,
            Err(error) => return Err(broken(format!("{what}: reading on: {error}"))),
        }
    };
    drop(client);
    still_serves(&mut server, "a client that read nothing of its response")?;

    match (closed, cut) {
        (Some(true) | None, true) => {
            check!(
                closed.is_none() || seen + TIMEOUT_EARLY >= asked + timeout,
                "{what} was disconnected {} after its request, before the {} send timeout \
                 could run out",
                seconds(seen - asked),
                seconds(timeout)
            );
            Ok(Outcome::Works)
        }
        (Some(false) | None, false) => Ok(Outcome::Lacks(format!(
            "{what} was still connected {} after its request{}; when it read on, the whole \
             response arrived",
            seconds(seen.max(deadline) - asked),
            dropped_note(&server)
        ))),
        (Some(false), true) => Err(broken(format!(
            "{what} was still connected {} after its request (with --send-timeout 0.5), and \
             once it read on, the response was cut after {received} of {total} bytes",
            seconds(seen - asked)
        ))),
        (Some(true), false) => Err(broken(format!(
            "{what}: the kernel showed the server's end of the connection closed {} after the \
             request, yet the whole response arrived when the client read on; the probe \
             cannot tell what happened",
            seconds(seen - asked)
        ))),
    }
}

/// Reads the 408 a client is owed for a head that did not arrive in time.
fn expect_408(
    client: &mut Client, server: &Server, sent: Instant, timeout: Duration, what: &str,
) -> Result<(), Stop> {
    let response = receive(client, server, false, what)?;
    let took = sent.elapsed();
    expect_status(&response, &[408], what)?;
    check!(response.says_close(), "{what}: the 408 does not say Connection: close");
    check!(
        took + TIMEOUT_EARLY >= timeout,
        "{what}: 408 after only {}, before the {} timeout",
        seconds(took),
        seconds(timeout)
    );
    Ok(())
}

/// [`waits_without_spinning`]: the timeouts it starts the server with and the sleeps it
/// asks for, each due at an odd fraction of a millisecond, and how many turns of its loop
/// and how much CPU time the server may spend while it waits for them. A loop that rounds
/// its wait down to whole milliseconds wakes just before a timer is due, finds nothing to
/// do, and waits 0 ms, again and again until it is: dozens of turns for each timer (a
/// student's first chapter 4 took 180 for three requests; a copy of ours that rounds
/// down, 600 to 1,000 for this check). Ours round up, and take 13 to 40 turns for it.
pub(super) const ODD_TIMEOUT: Duration = Duration::from_micros(1_700_300);
pub(super) const ODD_SLEEPS_MS: [u64; 8] = [1_301, 1_303, 1_305, 1_307, 1_309, 1_311, 1_313, 1_315];
pub(super) const WAIT_TURNS_BOUND: u64 = 100;
pub(super) const WAIT_CPU_BOUND: Duration = Duration::from_millis(300);

// ANCHOR: waits_without_spinning
/// Row 7: a server that waits only on its timers waits in the kernel, not in a loop. It is
/// started with header and keep-alive timeouts of [`ODD_TIMEOUT`]; then clients give it
/// nothing to do but wait: a `GET /sleep` each for [`ODD_SLEEPS_MS`], half a head (its 408
/// is due at the header timeout), and one kept alive after its answer (closed at the
/// keep-alive timeout). Once all are over, `/stats` must count at most
/// [`WAIT_TURNS_BOUND`] more turns of the loop than its own requests take, and the
/// process must have used at most [`WAIT_CPU_BOUND`] of CPU time.
pub fn waits_without_spinning(target: &Target) -> Probed {
    needs_own_server(target)?;
    let odd = flag_seconds(ODD_TIMEOUT);
    let mut server = target.start(Options {
        if_supported: vec![("--header-timeout", odd.clone()), ("--keep-alive-timeout", odd)],
        ..Options::default()
    })?;
    if !server.dropped_flags.is_empty() {
        still_serves(&mut server, "the start without timeouts")?;
        return Ok(Outcome::Lacks(format!(
            "no timers to wait on: it has no timeouts{}",
            dropped_note(&server)
        )));
    }
    let pid = measured(server.pid(), "needs the process id of a server the suite started")?;
    // A `/stats` request takes turns of its own (accept, read, answer): counted once, so
    // that they can be taken off.
    let first = stat(&server, "loop_turns")?;
    let before = stat(&server, "loop_turns")?;
    let per_stats = before.saturating_sub(first);
    let cpu_before = measured(resources::cpu_time(pid), resources::NO_CPU_TIME)?;
    let started = Instant::now();

    let mut sleepers = Vec::new();
    for ms in ODD_SLEEPS_MS {
        let mut sleeper = connect(&server)?;
        sending(&mut sleeper, &get(&format!("/sleep?ms={ms}")), "GET /sleep")?;
        sleepers.push(sleeper);
    }
    let mut halfway = connect(&server)?;
    let what = "a client that sent half a request head and stalled";
    sending(&mut halfway, b"GET /hello HTTP/1.1\r\nHost: suite\r\n", what)?;
    let mut idle = connect(&server)?;
    sending(&mut idle, &get("/hello"), "GET /hello")?;
    expect_status(&receive(&mut idle, &server, false, "GET /hello")?, &[200], "GET /hello")?;

    for (sleeper, ms) in sleepers.iter_mut().zip(ODD_SLEEPS_MS) {
        let what = format!("GET /sleep?ms={ms}");
        expect_status(&receive(sleeper, &server, false, &what)?, &[200], &what)?;
    }
    expect_408(&mut halfway, &server, started, ODD_TIMEOUT, what)?;
    match idle.wait_for_close(started + ODD_TIMEOUT + TIMEOUT_SLACK) {
        Ending::Closed => {}
        _ => check!(
            false,
            "a kept-alive client, idle, was still open {} after its answer: \
            expected it closed at the keep-alive timeout, {}",
            seconds(ODD_TIMEOUT + TIMEOUT_SLACK),
            seconds(ODD_TIMEOUT)
        ),
    }
    let waited = started.elapsed();
    let cpu =
        measured(resources::cpu_time(pid), resources::NO_CPU_TIME)?.saturating_sub(cpu_before);
    let after = stat(&server, "loop_turns")?;
    let turns = after.saturating_sub(before).saturating_sub(per_stats);
    // Shown with `cargo test -p suite waits_without -- --nocapture`: the measurement.
    println!(
        "{}: waiting {} on sleeps and two timeouts: {turns} turns of the loop, {:.1} ms of \
         CPU time",
        server.label,
        seconds(waited),
        cpu.as_secs_f64() * 1000.0
    );
    let spins = "a loop that waits less than the time left (rounding it down to whole \
        milliseconds, say) wakes before its timer is due, and turns again and again until it is";
    check!(
        turns <= WAIT_TURNS_BOUND,
        "waiting {} on nothing but sleeps and two timeouts (each due at an odd fraction of a \
         millisecond), the loop turned {turns} times (by /stats' loop_turns), more than \
         {WAIT_TURNS_BOUND}: {spins}",
        seconds(waited)
    );
    check!(
        cpu <= WAIT_CPU_BOUND,
        "waiting {} on nothing but sleeps and two timeouts, the server used {} of CPU time, \
         more than {}: {spins}",
        seconds(waited),
        seconds(cpu),
        seconds(WAIT_CPU_BOUND)
    );
    Ok(Outcome::Works)
}
// ANCHOR_END: waits_without_spinning

/// Row 7: an idle keep-alive connection is closed after `--keep-alive-timeout`.
pub fn keep_alive_timeout(target: &Target) -> Probed {
    needs_own_server(target)?;
    let timeout = TIMEOUT_UNDER_TEST;
    let server = target.start(Options {
        if_supported: vec![("--keep-alive-timeout", flag_seconds(timeout))],
        ..Options::default()
    })?;
    let mut client = connect(&server)?;
    sending(&mut client, &get("/hello"), "GET /hello")?;
    let response = receive(&mut client, &server, false, "GET /hello")?;
    expect_status(&response, &[200], "GET /hello")?;
    if response.says_close() {
        return Ok(Outcome::Lacks(
            "there is no idle connection to time out: the server said Connection: close and \
             closed right after the response"
                .into(),
        ));
    }
    // A new connection that has sent nothing is not kept alive: it has the header timeout
    // (10 s by default) for its first request, and must outlive the kept-alive one.
    let mut new = connect(&server)?;
    let idle_since = Instant::now();
    match client.wait_for_close(idle_since + timeout + TIMEOUT_SLACK) {
        Ending::Closed => {
            let took = idle_since.elapsed();
            check!(
                took + TIMEOUT_EARLY >= timeout,
                "an idle keep-alive connection was closed after only {}, before the {} timeout",
                seconds(took),
                seconds(timeout)
            );
            check!(
                matches!(new.wait_for_close(Instant::now() + timeout), Ending::StillOpen),
                "a new connection that had sent nothing was closed with the kept-alive one: \
                 it has --header-timeout (10 s) for its first request, not --keep-alive-timeout"
            );
            Ok(Outcome::Works)
        }
        Ending::StillOpen => Ok(Outcome::Lacks(format!(
            "an idle keep-alive connection was still open {} after its response{}",
            seconds(timeout + TIMEOUT_SLACK),
            dropped_note(&server)
        ))),
        Ending::MoreBytes(bytes) => Err(broken(format!(
            "an idle keep-alive connection was sent bytes nobody asked for: {}",
            show(&bytes)
        ))),
    }
}
