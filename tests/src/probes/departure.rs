//! Departures: clients that leave while the server still has work in hand for them.
//!
//! A client can go at any moment: its program crashes, its user closes the tab, its
//! network drops. TCP tells the server (here with a reset), but only a server that is
//! *looking at* the socket hears it. One that stops watching a connection while its request
//! waits (for a timer, the upstream, a place in a line), or while it works through a
//! pipeline of requests, hears only when it next writes an answer. Until then it goes on
//! paying for a client that is gone: a descriptor, a line in `/stats`, fetches from the
//! upstream, a place in the line for one. A thousand such clients, a tenth of a second of
//! work for an attacker, then fill a server's descriptor table for an hour.
//!
//! The contract: from chapter 4 on, a client that leaves stops costing at once. Chapters
//! 1-3 block in `/sleep` and `/upstream/`, and nothing at all happens while they wait,
//! noticing a departure included: [`departing_clients`] shows that first, and stops there.

use std::thread;
use std::time::{Duration, Instant};

use super::basics::command_line::usage;
use super::basics::exhaustion::LAZY_DESCRIPTORS;
use super::measured;
use super::pid;
use super::{
    broken, check, connect, expect_status, get, needs_own_server, receive, reset, seconds, sending,
    still_serves, until_read, with_upstream, Outcome, Probed, Stop, Target, PATIENCE,
};
use crate::kernel;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::{Capability, Row};
use crate::probes::checklist::{in_words, leak, rule, secs, size, Rule, DEPARTURES};
use crate::probes::{probe, Module, Probe};
use crate::resources;
use crate::server::{Options, Server};
use crate::upstream::{self, Upstream};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &["departing_clients"], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("departing_clients", Capability::Departure, departing_clients),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::Departure,
        description: "a client that leaves stops costing at once, even mid-wait or mid-pipeline",
        chapters: [
            No("ch01 runs /sleep and /upstream/ as blocking calls: while it waits for a client \
                that has left, nothing else happens, not even noticing that it left."),
            No("ch02's poll loop blocks in /sleep and /upstream/ as well: the loop does not \
                turn while it waits, so a client that left is noticed only when the wait is \
                over."),
            No("ch03's event loop blocks in /sleep and /upstream/ too: no turn runs while it \
                waits, so nothing can notice that the client has gone until the wait ends."),
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
            "The probe has clients leave with a reset at five awkward moments: {} during \
            `GET /sleep?ms={}` (`/stats` must stop counting them within {}); one with \
            {} MiB of pipelined `GET /hello` behind a `GET /sleep?ms={}`, more than the \
            server buffers (`/stats` must stop counting it within {} too); one that \
            pipelined {} slow `/upstream/` requests, while the first is being fetched \
            (the upstream must get no second one); thirty that each pipelined {} of `GET \
            /sleep?ms={}` (the server must give their descriptors back within {}); and, \
            where the server has `--upstream-limit`, {} waiting in line for the upstream \
            (a client that comes after them must not wait for their turns).",
            in_words(SLEEPERS),
            SLEEPERS_SLEEP.as_millis(),
            secs(GONE_WITHIN),
            FULL_PIPELINE_BYTES as f64 / f64::from(1 << 20),
            FULL_SLEEP_MS,
            secs(GONE_WITHIN),
            in_words(PIPELINED_FETCHES),
            size(PIPELINE_BYTES as u64),
            PIPELINED_SLEEP_MS,
            secs(DESCRIPTORS_BACK_WITHIN),
            in_words(IN_LINE),
        ))),
    }
}
// ANCHOR_END: row

/// How soon a departure must show. A server that watches its sockets sees a reset in its
/// next turn, a millisecond later; one that does not, only when the wait it is in ends,
/// seconds later. One second leaves a wide margin on both sides for a busy machine.
pub(super) const GONE_WITHIN: Duration = Duration::from_secs(1);
/// The sleep of the first departure, which tells a chapter that blocks in it from the
/// others: a `/stats` asked as it began is answered before its end, or the server sat in
/// it. Long enough for a busy machine's margin, yet short, because chapters 1-3 wait it out.
pub(super) const FIRST_SLEEP: Duration = Duration::from_millis(2000);
/// The clients that leave mid-sleep, and their sleep: long, so that a server that lets go
/// of them only when their sleeps end is far past [`GONE_WITHIN`].
pub(super) const SLEEPERS: usize = 5;
pub(super) const SLEEPERS_SLEEP: Duration = Duration::from_millis(4000);
/// The slow upstream requests of the pipeline and line steps: each takes this long to
/// answer.
pub(super) const FETCH: Duration = Duration::from_millis(1000);
/// How many slow upstream requests the departing client pipelines.
pub(super) const PIPELINED_FETCHES: usize = 20;
/// How long we watch the upstream once that client has left: a server that goes on with
/// its pipeline fetches the second request after one [`FETCH`], the third after two.
pub(super) const UPSTREAM_WATCH: Duration = Duration::from_millis(2500);
/// The clients that write a pipeline of long sleeps and leave, and how much each writes.
/// Each write is over three hundred `/sleep?ms=10000` requests: an hour of waiting for a
/// server that works through them all for a client that has gone.
pub(super) const PIPELINERS: usize = 30;
pub(super) const PIPELINE_BYTES: usize = 16 * 1024;
pub(super) const PIPELINED_SLEEP_MS: u64 = 10_000;
/// How soon their descriptors must be back. A server that reads on while a request waits
/// reads the reset at once; one that does not holds each for its first sleep at least.
pub(super) const DESCRIPTORS_BACK_WITHIN: Duration = Duration::from_millis(1500);
/// The clients that wait in line for the upstream (`--upstream-limit 1`) and leave, and
/// how many slow requests each has pipelined.
/// The `--upstream-limit` step 4 starts its server with: one fetch at a time.
const UPSTREAM_LIMIT: &str = "1";
pub(super) const IN_LINE: usize = 5;
pub(super) const IN_LINE_PIPELINED: usize = 4;
/// How long a client that comes after them may wait for its own fetch. The fetch under way
/// when they left may run to its end (one [`FETCH`]) before the permit is free; any more
/// is time spent on clients that have gone. Well under the upstream timeout of 5 s, after
/// which a server gives up with 504.
pub(super) const AFTER_THE_LINE_WITHIN: Duration = Duration::from_millis(2500);
/// The contract's upstream timeout: a fetch that takes longer is answered 504.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);
/// The client that leaves with a full buffer behind a wait: its wait, and how much it
/// pipelines behind it. More than the 1 MiB a server buffers behind a wait (ours stop
/// reading past it, and so hear nothing more from the socket until the wait ends), so the
/// server is made to stop reading; long enough that a server that notices only when the
/// wait ends is far past [`GONE_WITHIN`].
pub(super) const FULL_SLEEP_MS: u64 = 5000;
pub(super) const FULL_PIPELINE_BYTES: usize = (1 << 20) + (256 << 10);
/// How much of it the server must have read before the client leaves: the megabyte a
/// server buffers behind a wait.
pub(super) const FULL_READ: u64 = 1 << 20;

// ANCHOR: departing_clients
/// Clients leave, with a reset, at five awkward moments, and each time the server must let
/// go of them at once:
///
/// 1. Five clients leave while their `GET /sleep?ms=4000` waits. Within [`GONE_WITHIN`],
///    `/stats` must count them no more (before that, one client's shorter sleep tells a
///    chapter that blocks in it: its `/stats` comes only when the sleep is over, and the
///    probe stops there with the chapter's lack).
/// 2. A client pipelines twenty `GET /upstream/slow?ms=1000` and leaves while the first is
///    fetched. The upstream must get none of the other nineteen.
/// 3. Thirty clients each write 16 KiB of pipelined `GET /sleep?ms=10000` and leave. The
///    server must be back at its resting count of descriptors within
///    [`DESCRIPTORS_BACK_WITHIN`], and serving.
/// 4. Where the server has `--upstream-limit`, with a limit of 1: five clients pipeline
///    four slow upstream requests each and leave while one of them is fetched. A client
///    that comes after them must have its fetch within [`AFTER_THE_LINE_WITHIN`], not wait
///    for the turns of clients who have gone (or get a 504 after 5 s).
/// 5. A client sends `GET /sleep?ms=5000` and 1.25 MiB of pipelined `GET /hello` behind
///    it, more than a server buffers behind a wait, and leaves once the server has read a
///    megabyte of it. Within [`GONE_WITHIN`], `/stats` must count it no more: a server that
///    stops reading when its buffer is full must still watch the socket for a departure.
///
/// A server that only notices a departure when it next writes (it does not read while a
/// request waits, or answers a pipeline as a batch) fails each of them in its own way. All
/// five run, so that the outcome says which of them a chapter gets wrong.
pub fn departing_clients(target: &Target) -> Probed {
    needs_own_server(target)?;
    let server = target.server()?;
    let at_rest = connections_open(&server)?;
    if let Some(seen) = blocked_by_a_departure(&server)? {
        return Ok(Outcome::Lacks(seen));
    }
    // That client's connection must not count in the next step: wait until it is let go
    // (by a server that is slow to notice, when its sleep is over).
    let (open, down) = wait_for_open(&server, at_rest, Instant::now() + FIRST_SLEEP + PATIENCE)?;
    check!(
        down,
        "a client that reset while its GET /sleep?ms={} waited still counted in /stats \
         connections_open ({open}, {at_rest} at rest) {} s after its sleep was over: a \
         connection leak?",
        FIRST_SLEEP.as_millis(),
        PATIENCE.as_secs()
    );

    let mut costly = Vec::new();
    costly.extend(sleepers_leave(&server, at_rest)?);
    costly.extend(full_pipeline_leaves(&server, at_rest)?);
    drop(server);
    costly.extend(pipeline_leaves_the_upstream(target)?);
    costly.extend(pipelines_leave(target)?);
    costly.extend(line_leaves(target)?);
    Ok(match costly.len() {
        0 => Outcome::Works,
        1 => Outcome::Lacks(costly.remove(0)),
        count => {
            let each: Vec<String> = costly
                .iter()
                .enumerate()
                .map(|(index, seen)| format!("({}) {seen}", index + 1))
                .collect();
            Outcome::Lacks(format!(
                "{count} of 5 kinds of departed clients went on costing: {}",
                each.join("; ")
            ))
        }
    })
}
// ANCHOR_END: departing_clients

/// What `/stats` says of `connections_open`, asked on a new connection (which counts
/// itself).
fn connections_open(server: &Server) -> Result<u64, Stop> {
    super::stat(server, "connections_open")
}

/// Asks `/stats` until `connections_open` is down to `count` or `deadline` passes. Returns
/// the last count, and whether it was down. (The connection that asked before may still
/// count for a moment: the server has yet to read that it closed. Asking again sees it
/// gone.)
fn wait_for_open(server: &Server, count: u64, deadline: Instant) -> Result<(u64, bool), Stop> {
    loop {
        let open = connections_open(server)?;
        if open <= count {
            return Ok((open, true));
        }
        if Instant::now() >= deadline {
            return Ok((open, false));
        }
        // The server cannot tell us when a connection goes; we ask again shortly.
        thread::sleep(Duration::from_millis(20));
    }
}

/// A client leaves while its `GET /sleep?ms=2000` waits, and another asks `GET /stats` at
/// once. A chapter that blocks in the sleep answers only when it is over: what was seen.
fn blocked_by_a_departure(server: &Server) -> Result<Option<String>, Stop> {
    let what = format!("a client's GET /sleep?ms={}", FIRST_SLEEP.as_millis());
    let mut sleeper = connect(server)?;
    sending(&mut sleeper, &get(&format!("/sleep?ms={}", FIRST_SLEEP.as_millis())), &what)?;
    let asked = Instant::now();
    // Be sure the server is in the sleep before the client leaves.
    until_read(&sleeper, &what)?;
    reset(sleeper, &what)?;
    let left = Instant::now();
    let what = "a GET /stats asked right after that client left";
    let mut client = connect(server)?;
    sending(&mut client, &get("/stats"), what)?;
    let response = receive(&mut client, server, false, what)?;
    expect_status(&response, &[200], what)?;
    // Answered before the departed client's sleep would have ended: the server was not
    // sitting in it. Measured from when the sleep began, not from the departure, which a
    // busy machine may see late. (A server that watches its sockets answers in a
    // millisecond; one that sits in the sleep, only at its end.)
    if Instant::now() < asked + FIRST_SLEEP {
        return Ok(None);
    }
    Ok(Some(format!(
        "a client left (reset its connection) while its GET /sleep?ms={} waited, and {what} \
         was answered only {} after the client left, {} after the sleep began: the server \
         sat in the departed client's wait, and noticed nothing until it was over",
        FIRST_SLEEP.as_millis(),
        seconds(left.elapsed()),
        seconds(asked.elapsed())
    )))
}

/// Step 1: five clients leave while their `GET /sleep?ms=4000` waits; within
/// [`GONE_WITHIN`], `/stats` must be back at `at_rest` connections open.
fn sleepers_leave(server: &Server, at_rest: u64) -> Result<Option<String>, Stop> {
    let what = format!("GET /sleep?ms={}", SLEEPERS_SLEEP.as_millis());
    let mut sleepers = Vec::with_capacity(SLEEPERS);
    for _ in 0..SLEEPERS {
        let mut sleeper = connect(server)?;
        sending(&mut sleeper, &get(&format!("/sleep?ms={}", SLEEPERS_SLEEP.as_millis())), &what)?;
        sleepers.push(sleeper);
    }
    for sleeper in &sleepers {
        until_read(sleeper, &what)?;
    }
    for sleeper in sleepers {
        reset(sleeper, &what)?;
    }
    let left = Instant::now();
    let (open, down) = wait_for_open(server, at_rest, left + GONE_WITHIN)?;
    if down {
        return Ok(None);
    }
    // How long, then? A server that lets go of them when their sleeps end does at 4 s.
    let (_, later) = wait_for_open(server, at_rest, left + SLEEPERS_SLEEP + GONE_WITHIN)?;
    let then = if later {
        format!("the count came down only {} after they left", seconds(left.elapsed()))
    } else {
        format!("it was still up {} after they left", seconds(left.elapsed()))
    };
    Ok(Some(format!(
        "{SLEEPERS} clients left (reset their connections) while their {what} waited, and \
         {} later /stats still said connections_open {open} ({at_rest} at rest, the asking \
         connection included); {then}",
        seconds(GONE_WITHIN)
    )))
}

/// Step 5 (run second, on the same server): a client sends `GET /sleep?ms=5000` and more
/// pipelined `GET /hello` behind it than a server buffers behind a wait, and leaves once
/// the server has read a megabyte of it; within [`GONE_WITHIN`], `/stats` must be back at
/// `at_rest` connections open.
fn full_pipeline_leaves(server: &Server, at_rest: u64) -> Result<Option<String>, Stop> {
    let mut request = get(&format!("/sleep?ms={FULL_SLEEP_MS}"));
    let hellos = FULL_PIPELINE_BYTES / get("/hello").len();
    request.extend(get("/hello").repeat(hellos));
    let what = format!(
        "GET /sleep?ms={FULL_SLEEP_MS} with {} KiB of pipelined GET /hello behind it",
        FULL_PIPELINE_BYTES >> 10
    );
    super::needs_socket_queues()?;
    let mut client = connect(server)?;
    sending(&mut client, &request, &what)?;
    // The server has read the sleep and a megabyte behind it: its buffer is full, and a
    // server that stops reading then is not reading this socket any more.
    let read = kernel::wait_until_unread_at_most(
        client.stream(),
        request.len() as u64 - FULL_READ,
        PATIENCE,
    );
    check!(
        read != Some(false),
        "{what}: the server had not read 1 MiB of it {} s later, by the kernel's count",
        PATIENCE.as_secs()
    );
    reset(client, &what)?;
    let left = Instant::now();
    let (open, down) = wait_for_open(server, at_rest, left + GONE_WITHIN)?;
    if down {
        return Ok(None);
    }
    let sleep = Duration::from_millis(FULL_SLEEP_MS);
    let (_, later) = wait_for_open(server, at_rest, left + sleep + GONE_WITHIN)?;
    let then = if later {
        format!("the count came down only {} after it left", seconds(left.elapsed()))
    } else {
        format!("it was still up {} after it left", seconds(left.elapsed()))
    };
    Ok(Some(format!(
        "a client sent {what}, and left (reset its connection) once the server had read 1 MiB \
         of it; {} later /stats still said connections_open {open} ({at_rest} at rest, the \
         asking connection included); {then}: with its buffer full behind the wait, the \
         server no longer watched the socket",
        seconds(GONE_WITHIN)
    )))
}

/// Step 2: a client pipelines twenty slow upstream requests and leaves while the first is
/// fetched; the upstream must get none of the others.
fn pipeline_leaves_the_upstream(target: &Target) -> Result<Option<String>, Stop> {
    let (server, upstream) = with_upstream(target)?;
    let request = get(&format!("/upstream/slow?ms={}", FETCH.as_millis()));
    let what = format!(
        "{PIPELINED_FETCHES} pipelined GET /upstream/slow?ms={} (each a {} fetch)",
        FETCH.as_millis(),
        seconds(FETCH)
    );
    let mut client = connect(&server)?;
    sending(&mut client, &request.repeat(PIPELINED_FETCHES), &what)?;
    check!(
        upstream.wait_for_request(PATIENCE).is_some(),
        "{what}: the server sent the upstream (its --upstream) no request within {} s",
        PATIENCE.as_secs()
    );
    reset(client, &what)?;
    let left = Instant::now();
    let watch_ends = left + UPSTREAM_WATCH;
    let mut more = 0;
    while upstream.wait_for_request(watch_ends.saturating_duration_since(Instant::now())).is_some()
    {
        more += 1;
    }
    drop(server);
    if more == 0 {
        return Ok(None);
    }
    Ok(Some(format!(
        "a client wrote {what} and left (reset its connection) while the first was fetched, \
         and in the {} after it left the server sent the upstream {more} more of them, for a \
         client that was gone (it should send none)",
        seconds(UPSTREAM_WATCH)
    )))
}

/// Step 3: thirty clients each write 16 KiB of pipelined `GET /sleep?ms=10000` and leave;
/// the server must be back at its resting count of descriptors within
/// [`DESCRIPTORS_BACK_WITHIN`], and serve `/hello`.
fn pipelines_leave(target: &Target) -> Result<Option<String>, Stop> {
    let mut server = target.server()?;
    let pid = pid(&server)?;
    let at_rest = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
    let request = get(&format!("/sleep?ms={PIPELINED_SLEEP_MS}"));
    let count = PIPELINE_BYTES / request.len();
    let what = format!(
        "{} KiB of pipelined GET /sleep?ms={PIPELINED_SLEEP_MS} ({count} requests) in one write",
        PIPELINE_BYTES >> 10
    );
    super::needs_socket_queues()?;
    let mut clients = Vec::with_capacity(PIPELINERS);
    for _ in 0..PIPELINERS {
        let mut client = connect(&server)?;
        sending(&mut client, &request.repeat(count), &what)?;
        clients.push(client);
    }
    // Wait until the server has begun on them: one that leaves every byte in the kernel is
    // not working for these clients yet. Begun, not read to the end: a server may rightly
    // stop reading a long pipeline while its first request waits.
    for client in &clients {
        let begun = kernel::wait_until_unread_at_most(
            client.stream(),
            (request.len() * count - 1) as u64,
            PATIENCE,
        );
        check!(
            begun != Some(false),
            "{what}: the server had read none of it {} s later, by the kernel's count",
            PATIENCE.as_secs()
        );
    }
    for client in clients {
        reset(client, &what)?;
    }
    let left = Instant::now();
    let open = loop {
        let open = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
        if open <= at_rest + LAZY_DESCRIPTORS || left.elapsed() >= DESCRIPTORS_BACK_WITHIN {
            break open;
        }
        // The kernel cannot tell us when a descriptor closes; we look again shortly.
        thread::sleep(Duration::from_millis(10));
    };
    still_serves(&mut server, &format!("{PIPELINERS} clients that wrote {what} and left"))?;
    if open <= at_rest + LAZY_DESCRIPTORS {
        return Ok(None);
    }
    Ok(Some(format!(
        "{PIPELINERS} clients each wrote {what} and left (reset their connections), and {} \
         later the server still held {open} descriptors ({at_rest} at rest): it keeps a \
         departed client's connection while it works through the requests it left behind \
         (about {} minutes of sleeps each)",
        seconds(DESCRIPTORS_BACK_WITHIN),
        count as u64 * PIPELINED_SLEEP_MS / 60_000
    )))
}

/// Step 4: with `--upstream-limit 1`, five clients that wait in line for the upstream
/// leave; a client that comes after them must not wait for their turns. Nothing to check
/// on a server whose `--help` has no such flag: it has no line. One with `--threads`
/// (chapter 9) runs one loop, so that everyone is in the same line.
fn line_leaves(target: &Target) -> Result<Option<String>, Stop> {
    let usage = usage(target)?;
    if !usage.contains("--upstream-limit") {
        return Ok(None);
    }
    let mut flags = vec![("--upstream-limit", UPSTREAM_LIMIT.to_string())];
    if usage.contains("--threads") {
        flags.push(("--threads", "1".to_string()));
    }
    let upstream =
        Upstream::start().map_err(|error| broken(format!("cannot start the upstream: {error}")))?;
    let server = target.start(Options {
        upstream: Some(upstream.address),
        if_supported: flags,
        ..Options::default()
    })?;
    check!(
        server.dropped_flags.is_empty(),
        "its --help lists --upstream-limit, but it refused {}",
        server.dropped_flags.join(" and ")
    );
    let request = get(&format!("/upstream/slow?ms={}", FETCH.as_millis()));
    let what = format!(
        "{IN_LINE_PIPELINED} pipelined GET /upstream/slow?ms={} (with --upstream-limit 1)",
        FETCH.as_millis()
    );
    let mut clients = Vec::with_capacity(IN_LINE);
    for _ in 0..IN_LINE {
        let mut client = connect(&server)?;
        sending(&mut client, &request.repeat(IN_LINE_PIPELINED), &what)?;
        clients.push(client);
    }
    // One fetch is under way; the other clients wait for the permit.
    check!(
        upstream.wait_for_request(PATIENCE).is_some(),
        "{what}, from {IN_LINE} clients: the server sent the upstream no request within {} s",
        PATIENCE.as_secs()
    );
    for client in &clients {
        until_read(client, &what)?;
    }
    for client in clients {
        reset(client, &what)?;
    }

    let after = "a GET /upstream/x sent right after they left";
    let mut client = connect(&server)?;
    sending(&mut client, &get("/upstream/x"), after)?;
    let sent = Instant::now();
    let response = client
        .read_response(sent + UPSTREAM_TIMEOUT + PATIENCE, false)
        .map_err(|error| broken(format!("{after}: {error}{}", server.stderr_note())))?;
    let took = sent.elapsed();
    expect_status(&response, &[200, 504], after)?;
    if response.status == 200 && took <= AFTER_THE_LINE_WITHIN {
        check!(
            response.body == upstream::HELLO.as_bytes(),
            "{after}: body {:?}, expected the upstream's {:?}",
            response.text(),
            upstream::HELLO
        );
        return Ok(None);
    }
    Ok(Some(format!(
        "{IN_LINE} clients each wrote {what} and left (reset their connections) while one \
         fetch was under way, and {after} got {} only {} later (the bound is {}): the \
         departed clients kept their places in the line for the upstream",
        response.summary(),
        seconds(took),
        seconds(AFTER_THE_LINE_WITHIN)
    )))
}

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("departing_clients", DEPARTURES, format!(
            "A client resets its connection while its `GET /sleep?ms={}` waits: a `GET /stats` \
             from another client is answered before that sleep would have ended.",
            FIRST_SLEEP.as_millis())),
        rule("departing_clients", DEPARTURES, format!(
            "{} clients reset while their `GET /sleep?ms={}` wait: within {}, `/stats` says \
             `connections_open` is back where it was before they came. Watch every connection \
             for a reset while its request waits.",
            SLEEPERS, SLEEPERS_SLEEP.as_millis(), secs(GONE_WITHIN))),
        rule("departing_clients", DEPARTURES, format!(
            "A client pipelines {} `GET /upstream/slow?ms={}` and resets while the first is \
             fetched: in the {} after, the upstream is sent none of the others.",
            PIPELINED_FETCHES, FETCH.as_millis(), secs(UPSTREAM_WATCH))),
        rule("departing_clients", DEPARTURES, format!(
            "{} clients each write {} of pipelined `GET /sleep?ms={}` and reset: the server has \
             begun reading each within {}, and within {} of the resets holds no more \
             descriptors than at rest (or at most {} more).",
            PIPELINERS, size(PIPELINE_BYTES as u64), PIPELINED_SLEEP_MS, secs(PATIENCE), secs(DESCRIPTORS_BACK_WITHIN), LAZY_DESCRIPTORS)),
        rule("departing_clients", DEPARTURES, format!(
            "A client sends `GET /sleep?ms={}` with {} of pipelined `GET /hello` behind it, and \
             resets once the server has read {} of it: within {}, `/stats` no longer counts it. \
             A connection whose queue is too full to read more of must still hear a reset.",
            FULL_SLEEP_MS, size(FULL_PIPELINE_BYTES as u64), size(FULL_READ), secs(GONE_WITHIN))),
        rule("departing_clients", DEPARTURES, format!(
            "Only where `--help` lists `--upstream-limit` (a flag nobody must have): started \
             with `--upstream-limit {}`, {} clients each pipeline {} slow upstream requests and \
             reset while one is fetched; a client that comes after them has its fetch within \
             {}.",
            UPSTREAM_LIMIT, IN_LINE, IN_LINE_PIPELINED, secs(AFTER_THE_LINE_WITHIN))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        FIRST_SLEEP.as_millis().to_string(),
        SLEEPERS.to_string(),
        SLEEPERS_SLEEP.as_millis().to_string(),
        secs(GONE_WITHIN),
        PIPELINED_FETCHES.to_string(),
        FETCH.as_millis().to_string(),
        secs(UPSTREAM_WATCH),
        PIPELINERS.to_string(),
        size(PIPELINE_BYTES as u64),
        PIPELINED_SLEEP_MS.to_string(),
        secs(DESCRIPTORS_BACK_WITHIN),
        LAZY_DESCRIPTORS.to_string(),
        FULL_SLEEP_MS.to_string(),
        size(FULL_PIPELINE_BYTES as u64),
        (FULL_PIPELINE_BYTES as f64 / f64::from(1 << 20)).to_string(),
        size(FULL_READ),
        UPSTREAM_LIMIT.to_string(),
        IN_LINE.to_string(),
        IN_LINE_PIPELINED.to_string(),
        secs(AFTER_THE_LINE_WITHIN),
    ]
}
