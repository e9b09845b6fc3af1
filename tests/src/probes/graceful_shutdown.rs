//! The row "graceful shutdown on SIGTERM" (chapter 3 on).
//!
//! - [`graceful_shutdown`]: SIGTERM while a big download is in flight: the download
//!   finishes, newcomers are refused, the process exits 0.
//! - [`prompt_shutdown`]: and it exits as soon as nothing is in flight, not when idle
//!   clients leave or the grace period ends.
//!
//! Chapters 1 and 2 have no signal handler: SIGTERM kills them, the expected lack.

use std::os::unix::process::ExitStatusExt;
use std::thread;
use std::time::{Duration, Instant};

use super::timeouts::TIMEOUT_SLACK;
use super::WHOLE_BODY_WITHIN;
use crate::client::{Client, ReadError};
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::manifest::{self, Capability, Expect};
use crate::probes::checklist::Applies::{With, Without};
use crate::probes::checklist::{leak, rule, rule_if, secs, Rule, SHUTDOWN};
use crate::probes::{
    broken, check, connect, drain, expect_status, get, make_site, needs_own_server, receive,
    request_and_close, seconds, sending, start_big_download, until_accepted, until_read, Outcome,
    Probed, Stop, Target, PATIENCE,
};
use crate::probes::{probe, Module, Probe};
use crate::server::{Options, Server};
use crate::site;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("graceful_shutdown", Capability::GracefulShutdown, graceful_shutdown),
    probe("prompt_shutdown", Capability::GracefulShutdown, prompt_shutdown),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::GracefulShutdown,
        description: "graceful shutdown on SIGTERM",
        chapters: [
            No("ch01 installs no signal handler, so SIGTERM kills it mid-response instead of \
                letting the response finish."),
            No("ch02 installs no signal handler either: SIGTERM kills the process, and the \
                responses in flight with it."),
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
        note: Some(leak(format!(
            "`graceful_shutdown` holds a big response in flight after SIGTERM (its client \
            reads none of it), and meanwhile a new client connects every {}: from {} \
            after the signal on, each must be refused, and before, one let in must be \
            answered. Chapters 9 and 10 run with `--threads {}` for it: every loop must stop \
            accepting, not only the one the signal reached.",
            secs(NEWCOMERS_EVERY),
            secs(REFUSED_WITHIN),
            LOOPS,
        ))),
    }
}
// ANCHOR_END: row

/// How many clients try to connect after SIGTERM in [`graceful_shutdown`], how far apart,
/// how soon one that gets in must have an answer (a server that answers at all answers a
/// `GET /hello` in a millisecond), and from when on each must be refused: at once, in
/// fact (our chapters refuse the first, 0.2 s after the signal); the margin is for a busy
/// machine, where the signal may take a while to reach the loops.
/// How many loops [`graceful_shutdown`] asks for (`--threads`, where a chapter has it):
/// more than one, so that every loop must stop accepting, not only the signal's.
pub(super) const LOOPS: &str = "2";
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
        if_supported: vec![("--threads", LOOPS.into())],
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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    vec![
        rule_if(Without(GracefulShutdown), "graceful_shutdown", SHUTDOWN,
            "SIGTERM either kills the process (the default: it dies of the signal), or stops \
             it gracefully, as chapter 3 on must, within the same bounds and with exit status \
             0. Ending any other way (exit status 1 or 143, say) fails.".to_string()),
        rule("graceful_shutdown", SHUTDOWN, format!(
            "After that SIGTERM, while the download goes on, {} new clients try to connect, {} \
             apart: from {} after the signal, every one is refused (the listener closed, on \
             every loop: `--threads {}` where accepted); one that gets in before must be \
             answered within {}.",
            NEWCOMERS, secs(NEWCOMERS_EVERY), secs(REFUSED_WITHIN), LOOPS, secs(NEWCOMER_ANSWERED_WITHIN))),
        rule("graceful_shutdown", SHUTDOWN, format!(
            "SIGTERM while a big download is in flight: stop accepting, send the rest of the \
             answer whole, and exit with status 0 within {} of the client having it all. \
             SIGINT to an idle server: exit 0 within {}. The grace period, {}, counts from the \
             signal, not from the last progress: past it, what is still in flight may be cut \
             and the process exit 0 (the chapters do). No check tests that limit: this client \
             reads the rest at full speed, and allows it {} from the signal.",
            secs(PATIENCE), secs(PATIENCE), secs(GRACE_PERIOD), secs(WHOLE_BODY_WITHIN))),
        rule("prompt_shutdown", SHUTDOWN, format!(
            "After SIGTERM, exit 0 as soon as nothing is in flight, within {}: with only idle \
             clients connected (one that sent nothing, one kept alive after its answer), or \
             with one client that has its last answer (it asked for `Connection: close`) and \
             keeps its socket open. Wait neither for idle connections nor for the grace \
             period, {}, which only bounds answers in flight.",
            secs(PROMPT_EXIT), secs(GRACE_PERIOD))),
        rule_if(With(SleepAndUpstream), "prompt_shutdown", SHUTDOWN, format!(
            "SIGTERM while a `GET /sleep?ms={}` waits: the sleep is answered in full, with \
             `Connection: close`, and the process exits 0 within {} of the signal.",
            SLEEP_AT_SHUTDOWN.as_millis(), secs(SLEEP_AT_SHUTDOWN + TIMEOUT_SLACK))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        NEWCOMERS.to_string(),
        secs(NEWCOMERS_EVERY),
        secs(REFUSED_WITHIN),
        secs(NEWCOMER_ANSWERED_WITHIN),
        LOOPS.to_string(),
        secs(GRACE_PERIOD),
        secs(PROMPT_EXIT),
        SLEEP_AT_SHUTDOWN.as_millis().to_string(),
        secs(SLEEP_AT_SHUTDOWN + TIMEOUT_SLACK),
    ]
}
