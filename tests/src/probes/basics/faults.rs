//! Faults: things that go wrong around one connection, which must cost that connection at
//! most, never the server.
//!
//! | fault | where it is checked |
//! |---|---|
//! | a client resets mid-response | `client_resets_mid_response` (bad_input.rs) |
//! | a client half-closes after its request | [`half_close`]: it is still answered |
//! | a client sends a byte of urgent data | [`urgent_byte`]: it is still answered |
//! | the file being served is removed | [`file_removed_mid_response`] |
//! | signals that stop, continue or are ignored | [`stray_signals`] |
//! | nobody reads the server's stderr any more | [`closed_stderr`] |
//! | nobody reads the server's stderr *for now*: the pipe fills | [`unread_stderr`] |
//! | SIGTERM while `poll` waits (EINTR) | `graceful_shutdown` (graceful_shutdown.rs), chapters 3 on |
//! | a callback that panics | not from outside, as no route panics: see below |
//!
//! About EINTR: only a signal with a *handler* interrupts a waiting system call. Chapters
//! 1 and 2 install none, so no signal can make their `accept`, `read` or `poll` fail with
//! EINTR: a signal either kills them (SIGTERM, SIGINT) or does nothing to the call
//! (ignored ones like SIGWINCH; SIGSTOP and SIGCONT, after which the kernel restarts the
//! call itself). [`stray_signals`] sends those, mid-wait, to every chapter. Chapters 3 on
//! handle SIGINT and SIGTERM, and `graceful_shutdown` sends both while the loop sits in
//! `poll`: the call returns EINTR, and the loop must turn again and shut down.
//!
//! About panics: a callback that panics (chapters 3 on) would be a bug in the server, and
//! no request can make one happen on purpose, so there is nothing to send. The event loop
//! catches the panic and closes only that callback's connection; each chapter's unit test
//! `a_panicking_callback_costs_only_its_own_registration` (in its `event_loop.rs`) checks
//! that. The manifest says so under the first row of the capability table.

use std::fs;
use std::net::Shutdown;
use std::time::{Duration, Instant};

use crate::client::{show, Ending, ReadError};
use crate::manifest::{self, Capability, Expect};
use crate::probes::checklist::Applies::With;
use crate::probes::checklist::{count, listed, rule, rule_if, secs, Rule, FAULTS, SHUTDOWN};
use crate::probes::{
    broken, check, connect, drain, exchange, expect_status, first_line, get, needs_own_server,
    post, receive, seconds, sending, start_big_download, still_serves, until_read, with_site,
    Outcome, Probed, Stop, Target, HELLO, PATIENCE, WHOLE_BODY_WITHIN,
};
use crate::probes::{probe, Module, Probe};
use crate::server::{Options, Server};
use crate::site::{self, first_difference};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(crate) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("half_close", Capability::Basics, half_close),
    probe("urgent_byte", Capability::Basics, urgent_byte),
    probe("file_removed_mid_response", Capability::Basics, file_removed_mid_response),
    probe("stray_signals", Capability::Basics, stray_signals),
    probe("closed_stderr", Capability::Basics, closed_stderr),
    probe("unread_stderr", Capability::Basics, unread_stderr),
];

/// Sends `request`, shuts the sending side (a "half-close": the client says it will send
/// nothing more, and waits for the answer), and expects `answers` in order, then the end
/// of the connection. A chapter without keep-alive answers only the first, saying
/// `Connection: close`; that ends the list early.
fn ask_and_half_close(
    server: &Server, request: &[u8], answers: &[&[u8]], what: &str,
) -> Result<(), Stop> {
    let mut client = connect(server)?;
    sending(&mut client, request, what)?;
    client
        .stream()
        .shutdown(Shutdown::Write)
        .map_err(|error| broken(format!("{what}: cannot half-close: {error}")))?;
    // A big file takes a moment to read; the deadline only ends a wait that has failed.
    let deadline = Instant::now() + WHOLE_BODY_WITHIN;
    for (index, body) in answers.iter().enumerate() {
        let what = format!("{what}, answer {} of {}", index + 1, answers.len());
        let response = client
            .read_response(deadline, false)
            .map_err(|error| broken(format!("{what}: {error}{}", server.stderr_note())))?;
        expect_status(&response, &[200], &what)?;
        if let Some(difference) = site::difference(body, &response.body) {
            return Err(broken(format!("{what}: {difference}")));
        }
        if response.says_close() {
            break;
        }
    }
    // Everything is answered and the client has said it is done: the server must close,
    // or the connection would stay open for nobody.
    match client.wait_for_close(Instant::now() + PATIENCE) {
        Ending::Closed => Ok(()),
        Ending::StillOpen => Err(broken(format!(
            "{what}: after the answers, the connection was still open {} s later",
            PATIENCE.as_secs()
        ))),
        Ending::MoreBytes(bytes) => {
            Err(broken(format!("{what}: after the answers came more bytes: {}", show(&bytes))))
        }
    }
}

// ANCHOR: half_close
/// A client that shuts its sending side right after its request (`shutdown(SHUT_WR)`,
/// what `nc -N` and some HTTP/1.0 clients do) has not left: it waits for its answer. End of
/// file on a read means "no more requests", not "nobody is listening".
///
/// Checked with answers that are ready at once and with a file (which chapter 6 reads on
/// its thread pool, and still answers). From chapter 4 on, a request that waits (for
/// `/sleep`, the upstream, the disk) is answered after a half-close too: the loop cannot
/// tell a client that half-closed from one that left, so it answers, and a client that
/// left makes that write fail.
pub fn half_close(target: &Target) -> Probed {
    // Bigger than the socket buffers start out, so the answer is still being written
    // long after the end of file arrived.
    let (mut server, site) = with_site(target, 4 << 20)?;
    ask_and_half_close(&server, &get("/hello"), &[HELLO], "GET /hello, then a half-close")?;
    // The end of file arrives right behind a body the server is still reading.
    let body = site::pattern(256 * 1024);
    ask_and_half_close(
        &server,
        &post("/echo", &body),
        &[&body],
        "POST /echo with 256 KiB, then a half-close",
    )?;
    ask_and_half_close(
        &server,
        &get("/files/big.bin"),
        &[&site.big],
        "GET /files/big.bin (4 MiB), then a half-close",
    )?;
    // Two pipelined requests, then the end of file: a keep-alive chapter answers both.
    let mut two = get("/hello");
    two.extend(post("/echo", b"second"));
    ask_and_half_close(
        &server,
        &two,
        &[HELLO, b"second"],
        "two pipelined requests, then a half-close",
    )?;
    still_serves(&mut server, "clients that half-closed")?;
    Ok(Outcome::Works)
}
// ANCHOR_END: half_close

/// The sleep of [`urgent_byte`], and how soon after its end the answer must come: at once,
/// in fact; the margin is for a busy machine.
pub(crate) const URGENT_SLEEP_MS: u64 = 300;
pub(crate) const URGENT_ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// Nothing a client sends can make its answer wait past the timeouts (the contract), an
/// urgent byte included. One byte of TCP urgent data (`send` with `MSG_OOB`, what telnet
/// sends for an interrupt) is not part of the stream: a server that reads normally never
/// gets it, and must go on as if it had not come. But while it is unread, the socket polls
/// as readable (and `POLLPRI`) though a normal read finds nothing: a server that then
/// waits in that read, and no longer for the request's own wait, hangs until the client
/// sends more. The client sends `GET /sleep?ms=300`, then (once the server has read it)
/// the urgent byte; the answer must come within [`URGENT_ANSWER_WITHIN`] of the request.
pub fn urgent_byte(target: &Target) -> Probed {
    let mut server = target.server()?;
    let what = format!("GET /sleep?ms={URGENT_SLEEP_MS}, then one byte of urgent data (MSG_OOB)");
    let mut client = connect(&server)?;
    sending(&mut client, &get(&format!("/sleep?ms={URGENT_SLEEP_MS}")), &what)?;
    let sent = Instant::now();
    until_read(&client, &what)?;
    socket2::SockRef::from(client.stream())
        .send_out_of_band(b"!")
        .map_err(|error| broken(format!("{what}: cannot send the urgent byte: {error}")))?;
    match client.wait_for_bytes(sent + URGENT_ANSWER_WITHIN) {
        Ok(()) => {}
        Err(ReadError::TimedOut { .. }) => {
            return Err(broken(format!(
                "{what}: no answer {} after the request, though the sleep was over long \
                 before: the urgent byte hung the connection (it makes the socket poll \
                 readable while a normal read finds nothing: does the server wait in that \
                 read, and no longer for the sleep?){}",
                seconds(URGENT_ANSWER_WITHIN),
                server.stderr_note()
            )));
        }
        Err(error) => return Err(broken(format!("{what}: {error}{}", server.stderr_note()))),
    }
    let response = receive(&mut client, &server, false, &what)?;
    expect_status(&response, &[200], &what)?;
    let expected = format!("slept {URGENT_SLEEP_MS} ms\n");
    check!(
        response.text() == expected,
        "{what}: body {:?}, expected {expected:?}",
        response.text()
    );
    drop(client);
    still_serves(&mut server, "a client that sent a byte of urgent data")?;
    Ok(Outcome::Works)
}

// ANCHOR: file_removed
/// The file being sent is removed, and another takes its name, while a slow client is
/// still reading it. The client must get the original, byte for byte, or a clean early
/// close; never a mixture, never the newcomer's bytes. The server must not notice more
/// than that: the next request for the name gets the new file.
pub fn file_removed_mid_response(target: &Target) -> Probed {
    let (mut server, site) = with_site(target, site::stuck_response_size())?;
    // The response is in flight, and bigger than the kernel can buffer: the server is
    // still sending (or still reading the file) while we do this.
    let (mut client, mut already) = start_big_download(&server, &site)?;
    let path = site.root.join("big.bin");
    fs::remove_file(&path).map_err(|error| broken(format!("cannot remove big.bin: {error}")))?;
    let replacement = b"a new file under the old name\n";
    fs::write(&path, replacement)
        .map_err(|error| broken(format!("cannot write the new big.bin: {error}")))?;

    let what = "GET /files/big.bin, removed and replaced while it was sent";
    let deadline = Instant::now() + WHOLE_BODY_WITHIN;
    while already < site.big.len() {
        match client.read_some(site.big.len() - already, deadline) {
            Ok(bytes) => {
                let expected = &site.big[already..already + bytes.len()];
                if let Some(at) = first_difference(expected, &bytes) {
                    return Err(broken(format!(
                        "{what}: the body differs from the original from byte {} on",
                        already + at
                    )));
                }
                already += bytes.len();
            }
            // A clean close before the end: the client can tell from Content-Length that
            // it did not get the whole file. Allowed; a server that streams from disk
            // might have to.
            Err(ReadError::Closed { .. } | ReadError::Reset { .. }) => break,
            Err(error) => return Err(broken(format!("{what}: {error}"))),
        }
    }
    drop(client);

    let response = exchange(&server, &get("/files/big.bin"))?;
    expect_status(&response, &[200], "GET /files/big.bin after it was replaced")?;
    check!(
        response.body == replacement,
        "GET /files/big.bin after it was replaced: got {} bytes that are not the new file",
        response.body.len()
    );
    fs::remove_file(&path).map_err(|error| broken(format!("cannot remove big.bin: {error}")))?;
    let response = exchange(&server, &get("/files/big.bin"))?;
    expect_status(&response, &[404], "GET /files/big.bin after it was removed")?;
    still_serves(&mut server, "a file removed while it was being sent")?;
    Ok(Outcome::Works)
}
// ANCHOR_END: file_removed

/// Signals that do not end a process: ignored by default (WINCH, CHLD, URG; PIPE, which
/// Rust programs ignore), and a stop and continue (STOP, then CONT).
pub(crate) const STRAY: [&str; 6] = ["WINCH", "CHLD", "URG", "PIPE", "STOP", "CONT"];

fn pester(server: &mut Server, moment: &str) -> Result<(), Stop> {
    for name in STRAY {
        server.signal(name).map_err(broken)?;
    }
    if let Some(status) = server.exit_status() {
        return Err(broken(format!(
            "SIGWINCH, SIGCHLD, SIGURG, SIGPIPE, SIGSTOP and SIGCONT {moment} ended the \
             process ({status}){}",
            server.stderr_note()
        )));
    }
    Ok(())
}

// ANCHOR: stray_signals
/// Signals arriving while the server waits, at each place it can wait: for a client, in
/// the middle of a request's effect (`/sleep`), for the rest of a request head, and for
/// room to write a big response. None of them may lose the request in flight.
pub fn stray_signals(target: &Target) -> Probed {
    let (mut server, site) = with_site(target, site::stuck_response_size())?;

    // Waiting for a client (in accept or poll).
    pester(&mut server, "while it waited for clients")?;
    still_serves(&mut server, "signals while it waited for clients")?;

    // In the middle of an effect.
    let what = "GET /sleep?ms=300, pestered with signals while it slept";
    let mut client = connect(&server)?;
    sending(&mut client, &get("/sleep?ms=300"), what)?;
    until_read(&client, what)?;
    pester(&mut server, "during a /sleep")?;
    let response = receive(&mut client, &server, false, what)?;
    expect_status(&response, &[200], what)?;
    check!(response.body == b"slept 300 ms\n", "{what}: body {:?}", response.text());

    // Waiting for the rest of a request head.
    let what = "a request head, pestered with signals half-way";
    let mut client = connect(&server)?;
    sending(&mut client, b"GET /hello HTTP/1.1\r\nHo", what)?;
    until_read(&client, what)?;
    pester(&mut server, "half-way through a request head")?;
    sending(&mut client, b"st: suite\r\n\r\n", what)?;
    let response = receive(&mut client, &server, false, what)?;
    expect_status(&response, &[200], what)?;

    // Waiting for room to write.
    let (mut client, already) = start_big_download(&server, &site)?;
    pester(&mut server, "while it waited to write a big response")?;
    drain(&mut client, &site, already, "a big response, pestered with signals while it was sent")?;
    drop(client);
    still_serves(&mut server, "stray signals")?;
    Ok(Outcome::Works)
}
// ANCHOR_END: stray_signals

// ANCHOR: closed_stderr
/// Logging never stops the server (the contract), not even once nobody reads its stderr:
/// a reader pipes `--trace` into `head`, which exits after ten lines, or the terminal that
/// started it is gone. Every line written after that fails (EPIPE), and `eprintln!`
/// panics on the first ("failed printing to stderr"), taking the server with it.
///
/// The server is started with `--trace`, so every step of it writes a line, and the suite
/// closes its end of the stderr pipe as soon as the server listens. Then requests that
/// log: a good one, a bad one, a missing file, a `/sleep`. Each must be answered. Chapters
/// with a graceful shutdown (3 on) log on their way out too: SIGTERM must still end in
/// exit status 0.
pub fn closed_stderr(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server =
        target.start(Options { trace: true, close_stderr: true, ..Options::default() })?;
    let requests: [(&[u8], u16, &str); 4] = [
        (b"GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n", 200, ""),
        // No Host: a 400, and (where the chapter logs bad requests) a line about it.
        (b"GET /hello HTTP/1.1\r\n\r\n", 400, " without a Host header"),
        (b"GET /files/missing.txt HTTP/1.1\r\nHost: suite\r\n\r\n", 404, ""),
        (b"GET /sleep?ms=10 HTTP/1.1\r\nHost: suite\r\n\r\n", 200, ""),
    ];
    for (request, status, note) in requests {
        let what = format!("{}{note}, with stderr closed", first_line(request));
        let response = match exchange(&server, request) {
            Ok(response) => response,
            Err(Stop::Broken(error)) => {
                // Did the process die? It may still be on its way out: give it a moment.
                let ended = server.wait_for_exit(Instant::now() + Duration::from_secs(1));
                return Err(broken(match ended {
                    Some(status) => format!(
                        "{error}, with stderr closed; the process had ended ({status}; 101 is \
                         a panic): a failed write to stderr stopped it?"
                    ),
                    None => format!("{error}, with stderr closed"),
                }));
            }
            Err(skipped) => return Err(skipped),
        };
        expect_status(&response, &[status], &what)?;
    }
    still_serves(&mut server, "requests logged to a closed stderr")?;

    if manifest::expectation(Capability::GracefulShutdown, target.chapter) != Expect::Yes {
        // SIGTERM would kill it anyway: nothing more to see.
        return Ok(Outcome::Works);
    }
    server.signal("TERM").map_err(broken)?;
    match server.wait_for_exit(Instant::now() + PATIENCE) {
        Some(status) => check!(
            status.code() == Some(0),
            "after SIGTERM, with stderr closed, the process ended with {status}, expected exit \
             status 0 (a failed write to stderr on the way out? 101 is a panic)"
        ),
        None => {
            return Err(broken(format!(
                "with stderr closed, the process was still running {} s after SIGTERM",
                PATIENCE.as_secs()
            )))
        }
    }
    Ok(Outcome::Works)
}
// ANCHOR_END: closed_stderr

/// How many `GET /hello` [`unread_stderr`] asks: with `--trace`, each writes a few lines of
/// trace, so many times the 64 KiB a pipe holds before its writer must wait.
pub const UNREAD_STDERR_REQUESTS: usize = 2_000;

// ANCHOR: unread_stderr
/// Logging never stops the server, not even when stderr is a pipe whose reader has stopped
/// reading without going away (a pager the reader walked away from, a stalled supervisor).
/// Nothing fails then: once the pipe's buffer is full, a write *waits* until someone reads,
/// and a loop waiting in a write to stderr serves no one, ever again.
///
/// The server is started with `--trace`, its stderr a pipe the suite holds open and never
/// reads, and asked [`UNREAD_STDERR_REQUESTS`] `GET /hello` (on one kept-alive connection
/// where the chapter has keep-alive, else one connection each). Each must be answered
/// within the usual patience; then the server must still serve, and (chapter 3 on) SIGTERM
/// must still end it with exit status 0, though its goodbye cannot be written.
pub fn unread_stderr(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server =
        target.start(Options { trace: true, unread_stderr: true, ..Options::default() })?;
    let keeps_alive = manifest::expectation(Capability::KeepAlive, target.chapter) == Expect::Yes;
    let mut kept = None;
    for index in 1..=UNREAD_STDERR_REQUESTS {
        let what = format!(
            "GET /hello number {index} of {UNREAD_STDERR_REQUESTS}, with --trace and a stderr \
             pipe nobody reads (a write to a full pipe waits until someone reads)"
        );
        let client = match kept.take() {
            Some(client) => client,
            None => connect(&server)?,
        };
        let mut client = client;
        sending(&mut client, &get("/hello"), &what)?;
        let response = receive(&mut client, &server, false, &what)?;
        expect_status(&response, &[200], &what)?;
        if keeps_alive && !response.says_close() {
            kept = Some(client);
        }
    }
    drop(kept);
    still_serves(&mut server, "requests traced to a full stderr pipe")?;

    if manifest::expectation(Capability::GracefulShutdown, target.chapter) != Expect::Yes {
        return Ok(Outcome::Works);
    }
    server.signal("TERM").map_err(broken)?;
    match server.wait_for_exit(Instant::now() + PATIENCE) {
        Some(status) => check!(
            status.code() == Some(0),
            "after SIGTERM, with its stderr a full pipe, the process ended with {status}, \
             expected exit status 0"
        ),
        None => {
            return Err(broken(format!(
                "with its stderr a full pipe, the process was still running {} s after SIGTERM \
                 (waiting to write its goodbye?)",
                PATIENCE.as_secs()
            )))
        }
    }
    Ok(Outcome::Works)
}
// ANCHOR_END: unread_stderr

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    let stray: Vec<String> = STRAY.iter().map(|name| format!("SIG{name}")).collect();
    vec![
        rule("half_close", FAULTS, format!(
            "A client that shuts its sending side after its request (a half-close) still gets \
             its whole answer: `GET /hello`, a big `POST /echo`, a file bigger than the socket \
             buffers. End of file means no more requests, not that nobody is listening. Once \
             the answers are sent, the server closes within {}.",
            secs(PATIENCE))),
        rule_if(With(KeepAlive), "half_close", FAULTS,
            "Two requests pipelined before the half-close both get their answers.".to_string()),
        rule("file_removed_mid_response", FAULTS,
            "A file removed, and another written under its name, while a slow client downloads \
             it: that client gets the original bytes, or a clean early close, never a mixture. \
             The next request for the name gets the new file, and once that is removed, a 404: \
             keep no file contents between requests.".to_string()),
        rule("stray_signals", FAULTS, format!(
            "{}, sent while the server waits for clients, sleeps in a `/sleep`, waits for the \
             rest of a head, and waits to write a big answer: the process lives, and every \
             request in flight is answered. (Ignore SIGPIPE; a call interrupted with EINTR is \
             tried again.)",
            listed(&stray).replace("`SIGSTOP` and `SIGCONT`", "`SIGSTOP` then `SIGCONT`"))),
        rule("urgent_byte", FAULTS, format!(
            "`GET /sleep?ms={}`, then one byte of TCP urgent data (`MSG_OOB`): the answer still \
             comes within {}, and the server still serves. An urgent byte can make a socket \
             poll readable with nothing for a plain read: a read that waits there must not \
             hold the answer.",
            URGENT_SLEEP_MS, secs(URGENT_ANSWER_WITHIN))),
        rule("closed_stderr", FAULTS,
            "Started with `--trace`, and with nobody reading its standard error any more (every \
             write to it fails: EPIPE), the server goes on: `GET /hello` 200, one without \
             `Host` 400, a missing file 404, a `/sleep` 200. Logging never stops the server.".to_string()),
        rule("unread_stderr", FAULTS, format!(
            "Started with `--trace`, and with its standard error a pipe that is never read (once \
             the pipe's buffer is full, a write to it waits until someone reads), the server \
             answers {} `GET /hello` one after the other, each within {}, and still serves. A \
             line that cannot be written at once is dropped (and counted), never waited for.",
            count(UNREAD_STDERR_REQUESTS), secs(PATIENCE))),
        rule_if(With(GracefulShutdown), "closed_stderr", SHUTDOWN, format!(
            "With standard error closed, SIGTERM still ends the process with exit status 0, \
             within {}: a write or flush that fails on the way out must not change the exit \
             status.",
            secs(PATIENCE))),
        rule_if(With(GracefulShutdown), "unread_stderr", SHUTDOWN, format!(
            "With standard error a full pipe nobody reads, SIGTERM still ends the process with \
             exit status 0 within {}: the goodbye that cannot be written is dropped.",
            secs(PATIENCE))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![URGENT_SLEEP_MS.to_string(), secs(URGENT_ANSWER_WITHIN), count(UNREAD_STDERR_REQUESTS)]
}
