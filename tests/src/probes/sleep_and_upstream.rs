//! The row "`/sleep` and a slow upstream do not hold up others" (chapter 4 on): waiting
//! for a timer or another server must not stop the loop.
//!
//! - [`sleep_elsewhere`]: a `GET /hello` while another client's `/sleep` waits.
//! - [`slow_upstream`]: the same while a `GET /upstream/...` waits for a slow upstream.
//! - [`answers_as_ready`]: pipelined sleeps, each answered when it is ready.
//!
//! [`served_while_busy`] is the shape they share, and `slow_disk.rs` shares it too.

use std::thread;
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::Applies::With;
use crate::probes::checklist::{rule, rule_if, secs, Rule, WAITING};
use crate::probes::{
    broken, check, connect, exchange, expect_status, get, receive, seconds, sending, until_read,
    with_upstream, Outcome, Probed, Stop, Target, PATIENCE, PROMPTLY,
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
    probe("sleep_elsewhere", Capability::SleepAndUpstream, sleep_elsewhere),
    probe("slow_upstream", Capability::SleepAndUpstream, slow_upstream),
    probe("answers_as_ready", Capability::SleepAndUpstream, answers_as_ready),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::SleepAndUpstream,
        description: "`/sleep` and a slow upstream do not hold up others",
        chapters: [
            No("ch01 runs /sleep and /upstream/ as blocking calls, so the whole server waits \
                with them."),
            No("ch02's poll loop still runs /sleep and /upstream/ as blocking calls, so every \
                connection waits with them."),
            No("ch03's event loop has no timers yet: /sleep is a thread::sleep and \
                /upstream/ a blocking fetch, both inside the loop."),
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
pub(super) fn served_while_busy(
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

pub(super) fn with_longer_holds(
    mut attempt: impl FnMut(u64) -> Result<Option<Outcome>, Stop>,
) -> Probed {
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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    vec![
        rule("sleep_elsewhere", WAITING, format!(
            "While one client's `GET /sleep?ms={}` waits, another's `GET /hello` is answered at \
             least a third of the sleep before the sleep's answer (tried again with {} ms when \
             the machine is too busy to tell).",
            HOLDS_MS[0], HOLDS_MS[1])),
        rule("slow_upstream", WAITING,
            "The same while a `GET /upstream/...` waits as long for a slow upstream.".to_string()),
        rule_if(With(SleepAndUpstream), "upstream_errors", WAITING, format!(
            "While an upstream sends its endless head, another client's `GET /hello` is \
             answered within {}.",
            secs(PROMPTLY))),
        rule("answers_as_ready", WAITING, format!(
            "{} `GET /sleep?ms={}` pipelined in one write: the first answer arrives when it is \
             ready, after {} and within twice that, not with the others.",
            READY_REQUESTS, READY_SLEEP.as_millis(), secs(READY_SLEEP))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        HOLDS_MS[0].to_string(),
        HOLDS_MS[1].to_string(),
        READY_REQUESTS.to_string(),
        READY_SLEEP.as_millis().to_string(),
        secs(READY_SLEEP),
    ]
}
