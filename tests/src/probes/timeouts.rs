//! The row "idle, header and send timeouts" (chapter 4 on). Each is tested with a short
//! timeout passed on the command line ([`TIMEOUT_UNDER_TEST`]), not the defaults.
//!
//! - [`header_timeout`]: a head that stops halfway gets a 408.
//! - [`keep_alive_timeout`]: an idle kept-alive connection is closed.
//! - [`send_timeout`]: a client that reads none of its answer is disconnected.
//! - [`waits_without_spinning`]: waiting for timers costs no turns and no CPU.
//!
//! Chapters 1 to 3 have no timers: nothing times out, the expected lack.

use std::thread;
use std::time::{Duration, Instant};

use crate::client::{show, Client, Ending, ReadError};
use crate::kernel;
use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{rule, secs, Rule, TIMEOUTS};
use crate::probes::{
    broken, check, connect, dropped_note, expect_status, get, make_site, needs_own_server, receive,
    seconds, sending, start_big_download, still_serves, Outcome, Probed, Stop, Target, PATIENCE,
};
use crate::probes::{measured, stat};
use crate::probes::{probe, Module, Probe};
use crate::resources;
use crate::server::{Options, Server};
use crate::site::{self, first_difference};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("header_timeout", Capability::Timeouts, header_timeout),
    probe("keep_alive_timeout", Capability::Timeouts, keep_alive_timeout),
    probe("send_timeout", Capability::Timeouts, send_timeout),
    probe("waits_without_spinning", Capability::Timeouts, waits_without_spinning),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::Timeouts,
        description: "idle, header and send timeouts",
        chapters: [
            No("ch01 has no timers: it waits forever for a half-sent request head or for a \
                client that stops reading its response, and it has no keep-alive to time out."),
            No("ch02 has no timers: a half-sent request head or a response nobody reads keeps \
                its connection open forever, and there is no keep-alive to time out."),
            No("ch03 has no timers yet: idle keep-alive connections, half-sent heads and \
                responses nobody reads stay open forever."),
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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    let timeout = TIMEOUT_UNDER_TEST;
    let too_early = secs(timeout - TIMEOUT_EARLY);
    let too_late = secs(timeout + TIMEOUT_SLACK);
    vec![
        rule("header_timeout", TIMEOUTS, format!(
            "Started with `--header-timeout {}` (and `--keep-alive-timeout {}`): a client that \
             sent part of a head and stalls gets a 408 with `Connection: close`, no sooner than \
             {} and within {}; so does a kept-alive client that sent part of its second head.",
            flag_seconds(timeout), flag_seconds(HEADER_PROBE_KEEP_ALIVE), too_early, too_late)),
        rule("header_timeout", TIMEOUTS, format!(
            "The header timeout counts from the first byte of a head, not from the last answer: \
             a kept-alive client idle for {} that then sends a head in two writes, {} apart, \
             gets its 200.",
            secs(timeout * 2), secs(timeout / 5))),
        rule("header_timeout", TIMEOUTS, format!(
            "A client that connects and sends nothing gets a 408, or is closed without a word, \
             within {}.",
            too_late)),
        rule("waits_without_spinning", TIMEOUTS, format!(
            "Started with `--header-timeout {}` and `--keep-alive-timeout {}`, and given nothing \
             to do but wait ({} clients each asking a `GET /sleep` of {} ms, one that sent half \
             a head, one kept alive after its answer), the server answers and times them out \
             with at most {} more turns of its loop than `/stats` itself takes (`loop_turns`), \
             and at most {} of CPU time. Wait in the kernel for the whole time left: a wait \
             rounded down to whole milliseconds wakes before its timer is due, and spins.",
            flag_seconds(ODD_TIMEOUT), flag_seconds(ODD_TIMEOUT), ODD_SLEEPS_MS.len(),
            ODD_SLEEPS_MS.map(|ms| ms.to_string()).join(", "), WAIT_TURNS_BOUND,
            secs(WAIT_CPU_BOUND))),
        rule("keep_alive_timeout", TIMEOUTS, format!(
            "Started with `--keep-alive-timeout {}`: a connection idle after its answer is \
             closed without a word (no 408), no sooner than {} and within {}. A new connection \
             that has sent nothing is not kept alive yet: it has the header timeout, and is \
             still open {} after the idle one closed.",
            flag_seconds(timeout), too_early, too_late, secs(timeout))),
        rule("send_timeout", TIMEOUTS, format!(
            "Started with `--send-timeout {}`: a client that asked for a file bigger than the \
             socket buffers hold and reads none of it is disconnected, its answer cut short, no \
             sooner than {} after its request and within {}.",
            flag_seconds(timeout), too_early, too_late)),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        flag_seconds(TIMEOUT_UNDER_TEST),
        flag_seconds(HEADER_PROBE_KEEP_ALIVE),
        secs(TIMEOUT_UNDER_TEST),
        secs(TIMEOUT_UNDER_TEST - TIMEOUT_EARLY),
        secs(TIMEOUT_UNDER_TEST + TIMEOUT_SLACK),
        secs(TIMEOUT_UNDER_TEST * 2),
        secs(TIMEOUT_UNDER_TEST / 5),
        flag_seconds(ODD_TIMEOUT),
        ODD_SLEEPS_MS.len().to_string(),
        ODD_SLEEPS_MS.map(|ms| ms.to_string()).join(", "),
        WAIT_TURNS_BOUND.to_string(),
        secs(WAIT_CPU_BOUND),
    ]
}
