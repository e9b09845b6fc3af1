//! The row "10,000 idle connections do not slow the busy ones" (chapter 7 on), and the
//! idle-client row's check that 10,000 fit at all: both open 10,000 connections, and take
//! turns to (this process may not hold twice as many).
//!
//! - [`ten_thousand_idle`] (idle-client row): 10,000 connections that say nothing: do
//!   they fit, in how much memory, and is everyone else still served?
//! - [`ten_thousand_idle_slowdown`]: and how much slower is a busy client served while
//!   they are there? With `poll(2)`, every turn of the loop walks all of them.

use std::net::TcpStream;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::client::{show, Client};
use crate::kernel;
use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{count, leak, rule, secs, size, Rule, CONNECTIONS_TOPIC};
use crate::probes::{
    broken, check, connect, exchange, expect_status, finish_hello, get, hello_meanwhile, measured,
    needs_own_server, receive, seconds, sending, stats_value, until_accepted, Meanwhile, Outcome,
    Probed, Stop, Target, HELLO, PATIENCE, PROMPTLY,
};
use crate::probes::{pid, wait_for_descriptors};
use crate::probes::{probe, Module, Probe};
use crate::resources::{self, mebibytes};
use crate::server::{Options, Server};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("ten_thousand_idle", Capability::IdleClient, ten_thousand_idle),
    probe("ten_thousand_idle_slowdown", Capability::TenThousandIdle, ten_thousand_idle_slowdown),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::TenThousandIdle,
            description: "10,000 idle connections do not slow the busy ones",
            chapters: [
                No("ch01 serves one client at a time: a single idle client holds it entirely, so \
                    the busy client is not served at all while idle ones are connected."),
                No("ch02 waits with `poll(2)`, which walks every open descriptor on every turn, so \
                    each turn costs time in proportion to all open connections, idle ones \
                    included."),
                No("ch03's event loop waits with `poll(2)`, which walks every open descriptor on \
                    every turn, so each turn costs time in proportion to all open connections."),
                No("ch04's timers do not change how the loop waits: `poll(2)` walks every open \
                    descriptor on every turn, so each turn costs time in proportion to all open \
                    connections."),
                No("ch05's promises do not change how the loop waits: `poll(2)` walks every open \
                    descriptor on every turn, so each turn costs time in proportion to all open \
                    connections."),
                No("ch06's thread pool takes file work off the loop, not the waiting: `poll(2)` \
                    walks every open descriptor on every turn, so each turn costs time in \
                    proportion to all open connections."),
                Yes,
                Yes,
                Yes,
                Yes,
                Yes,
            ],
            note: Some(leak(format!(
                "The probe times `GET /hello` after `GET /hello` on one connection, first with no \
                other client connected and then with {} idle ones, and compares the two: \
                with epoll the second run takes at most about twice as long, with `poll(2)` a \
                hundred times as long and more. Chapter 7 is also run with `--backend poll`, which must show the \
                slowdown, or the probe could not tell the two apart.",
                count(IDLE_CLIENTS),
            ))),
    }
}
// ANCHOR_END: row

/// How many idle connections [`ten_thousand_idle`] and [`ten_thousand_idle_slowdown`]
/// open, and the most memory the server may then use in all.
pub(super) const IDLE_CLIENTS: usize = 10_000;
pub(super) const IDLE_MEMORY_BOUND: u64 = 64 << 20;
/// How many they open before they check that others are still served: enough for a
/// one-at-a-time chapter to show, few enough to find out quickly.
pub(super) const IDLE_FIRST: usize = 100;
/// How many they open before they wait for the server to take them in: the kernel queues
/// only 1024 connections the server has not accepted yet.
pub(super) const IDLE_BATCH: usize = 1000;

/// This process needs 10,000 descriptors for each of those two probes, and the usual limit
/// is 20,000: two at once would not fit beside the other tests. So they take turns.
static TEN_THOUSAND: Mutex<()> = Mutex::new(());

/// Waits for this probe's turn to open 10,000 connections, or skips, loudly, where this
/// process may not open that many.
fn ten_thousand_turn() -> Result<MutexGuard<'static, ()>, Stop> {
    if resources::own_descriptor_limits()
        .is_some_and(|limits| limits.soft < 2 * IDLE_CLIENTS as u64)
    {
        return Err(Stop::Skipped(
            "needs `ulimit -n` of 20000: 10,000 connections, and the other tests' own",
        ));
    }
    Ok(TEN_THOUSAND.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The header and keep-alive timeouts of a server for 10,000 idle connections: longer
/// than the probe, because chapter 4 on would otherwise close the idle clients while we
/// count them.
pub(super) const TEN_THOUSAND_TIMEOUTS: Duration = Duration::from_secs(60);

/// A server for 10,000 idle connections, with `extra` flags if the chapter knows them, and
/// no timeout that could close them while we count ([`TEN_THOUSAND_TIMEOUTS`]).
pub(super) fn ten_thousand_server(
    target: &Target, extra: &[(&'static str, &str)],
) -> Result<Server, Stop> {
    let long = crate::probes::timeouts::flag_seconds(TEN_THOUSAND_TIMEOUTS);
    let mut if_supported = vec![("--header-timeout", long.clone()), ("--keep-alive-timeout", long)];
    if_supported.extend(extra.iter().map(|(flag, value)| (*flag, value.to_string())));
    target.start(Options { if_supported, ..Options::default() })
}

/// What became of 10,000 clients that connected and said nothing.
enum Crowd {
    /// The server took in every one of them (and `/stats` counts them); they stay
    /// connected until this is dropped.
    Held(Vec<TcpStream>),
    /// With the first [`IDLE_FIRST`] of them connected, a `GET /hello` from another client
    /// went unanswered (it was answered once they left): what was seen.
    Stuck(String),
}

/// What the kernel says of the connections the server has not taken, for a message: still
/// queued (the server stopped calling `accept`), half done (its queue overflowed), or none
/// (it accepted them all, and closed some).
fn not_accepted_note(server: &Server) -> String {
    match kernel::not_accepted(server.address) {
        Some((queued, half_open)) => format!(
            " (the kernel holds {queued} connections waiting for `accept` and {half_open} \
             handshakes not finished)"
        ),
        None => String::new(),
    }
}

/// Connects [`IDLE_CLIENTS`] clients that say nothing to `server` (process `pid`, which
/// held `at_rest` descriptors before anyone connected), and waits until it has accepted
/// them all.
fn crowd(server: &Server, pid: u32, at_rest: usize) -> Result<Crowd, Stop> {
    let mut idle = Vec::with_capacity(IDLE_CLIENTS);
    let open_idle = |idle: &mut Vec<TcpStream>| -> Result<(), Stop> {
        let stream = TcpStream::connect_timeout(&server.address, Duration::from_secs(2)).map_err(
            |error| broken(format!("connecting idle client number {}: {error}", idle.len() + 1)),
        )?;
        idle.push(stream);
        Ok(())
    };
    for _ in 0..IDLE_FIRST {
        open_idle(&mut idle)?;
    }
    if let Meanwhile::Waiting { client, sent } = hello_meanwhile(server)? {
        let left = Instant::now();
        drop(idle);
        finish_hello(server, client, sent)?;
        return Ok(Crowd::Stuck(format!(
            "with {IDLE_FIRST} idle clients connected, GET /hello got no answer within {}; \
             it was answered {} after they left",
            seconds(PROMPTLY),
            seconds(left.elapsed())
        )));
    }
    while idle.len() < IDLE_CLIENTS {
        let batch = (IDLE_CLIENTS - idle.len()).min(IDLE_BATCH);
        for _ in 0..batch {
            open_idle(&mut idle)?;
        }
        // Let the server take them in before the next thousand, or the kernel's queue of
        // connections not yet accepted overflows and connecting fails.
        let wanted = at_rest + idle.len();
        let most = wait_for_descriptors(pid, wanted, PATIENCE)?;
        check!(
            most >= wanted,
            "with {} idle clients connected, the server held only {} descriptors ({at_rest} \
             at rest): it stopped accepting{}",
            idle.len(),
            most,
            not_accepted_note(server)
        );
    }
    // The count of descriptors may include a few that are not idle clients (a busy
    // client's, one closed but not yet let go): the kernel's queue says whether any of
    // the idle ones still waits to be accepted.
    until_accepted(server, &format!("the last of {IDLE_CLIENTS} idle connections"))?;
    let stats = exchange(server, &get("/stats"))?;
    let open = stats_value(&stats, "connections_open");
    check!(
        open.is_some_and(|open| open >= IDLE_CLIENTS as u64),
        "with {IDLE_CLIENTS} idle clients connected, /stats says connections_open {open:?}"
    );
    Ok(Crowd::Held(idle))
}

// ANCHOR: ten_thousand_idle
/// 10,000 clients connect and say nothing. The server must hold them all (at a few
/// hundred bytes each, not kilobytes: 64 MiB for all of them is generous) and still
/// answer a `GET /hello` at once. Chapter 1 holds one connection at a time: with the
/// first hundred connected it is stuck already.
pub fn ten_thousand_idle(target: &Target) -> Probed {
    needs_own_server(target)?;
    let _turn = ten_thousand_turn()?;
    let server = ten_thousand_server(target, &[])?;
    let pid = pid(&server)?;
    // Counted before any client has connected: a closed connection's descriptor may
    // linger in the server for a moment after the client has gone.
    let at_rest = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
    // Memory after one request, so that what the first request allocates counts as rest.
    expect_status(&exchange(&server, &get("/hello"))?, &[200], "GET /hello")?;
    let at_rest_memory = measured(resources::memory(pid), resources::NO_MEMORY)?;

    // Held to the end of the probe: the memory below is measured with them connected.
    let _idle = match crowd(&server, pid, at_rest)? {
        Crowd::Held(idle) => idle,
        Crowd::Stuck(seen) => return Ok(Outcome::Lacks(seen)),
    };
    if let Meanwhile::Waiting { .. } = hello_meanwhile(&server)? {
        return Err(broken(format!(
            "with {IDLE_CLIENTS} idle clients connected, GET /hello got no answer within {}",
            seconds(PROMPTLY)
        )));
    }
    let loaded = measured(resources::memory(pid), resources::NO_MEMORY)?;
    let per_connection =
        loaded.resident.saturating_sub(at_rest_memory.resident) / IDLE_CLIENTS as u64;
    check!(
        loaded.resident < IDLE_MEMORY_BOUND,
        "with {IDLE_CLIENTS} idle clients connected, the server uses {} ({} at rest, about \
         {per_connection} bytes per connection); the bound is {}",
        mebibytes(loaded.resident),
        mebibytes(at_rest_memory.resident),
        mebibytes(IDLE_MEMORY_BOUND)
    );
    // Shown with `cargo test -p suite ten_thousand -- --nocapture`: the measurement.
    println!(
        "{}: {IDLE_CLIENTS} idle connections: {} resident ({} at rest, about \
         {per_connection} bytes per connection)",
        server.label,
        mebibytes(loaded.resident),
        mebibytes(at_rest_memory.resident)
    );
    Ok(Outcome::Works)
}
// ANCHOR_END: ten_thousand_idle

/// One timed round of [`ten_thousand_idle_slowdown`]: this many `GET /hello` in a row,
/// after [`BUSY_WARM_UP`] that are not timed. The fastest round counts: at least
/// [`BUSY_ROUNDS`] of them, and more while [`BUSY_TIME`] lasts (up to [`BUSY_MAX_ROUNDS`]),
/// so that a moment when other work holds the machine is not all the probe sees.
pub(super) const BUSY_ROUND: usize = 100;
const BUSY_WARM_UP: usize = 20;
const BUSY_ROUNDS: usize = 3;
const BUSY_TIME: Duration = Duration::from_millis(300);
const BUSY_MAX_ROUNDS: usize = 50;
/// The longest a round may take; one that has not ended by then is cut short, and counted
/// at the pace it kept. A round takes a few milliseconds where the loop waits with epoll;
/// with `poll(2)` and 10,000 connections a request takes milliseconds, and this many of
/// them show its pace as well as a hundred would.
pub(super) const ROUND_LIMIT: Duration = Duration::from_millis(200);
/// How much slower a round may be with 10,000 idle connections open than with none.
/// Measured on debug builds: 1x to 2.5x where the loop waits with epoll, a hundred times
/// and more where it waits with `poll(2)`. The bound sits well away from both, and a
/// ratio of two rounds on one machine stays put when a busy machine slows both.
pub(super) const SLOWDOWN_BOUND: f64 = 12.0;

/// The busy client of [`ten_thousand_idle_slowdown`]: `GET /hello` after `GET /hello`, on
/// one keep-alive connection (on a new one whenever the server closes it: chapters 1 and
/// 2 answer one request per connection).
struct Busy<'a> {
    server: &'a Server,
    connection: Option<Client>,
}

impl Busy<'_> {
    /// One `GET /hello`, answered in full and checked.
    fn hello(&mut self) -> Result<(), Stop> {
        let what = "GET /hello from the busy client";
        let mut client = match self.connection.take() {
            Some(client) => client,
            None => connect(self.server)?,
        };
        sending(&mut client, &get("/hello"), what)?;
        let response = receive(&mut client, self.server, false, what)?;
        expect_status(&response, &[200], what)?;
        check!(response.body == HELLO, "{what}: the body is {}", show(&response.body));
        if !response.says_close() {
            self.connection = Some(client);
        }
        Ok(())
    }

    /// Warms up, then times rounds: the fastest, and how many there were. Other work on
    /// the machine can only make a round slower, so the fastest is the truest.
    fn fastest_round(&mut self) -> Result<Timed, Stop> {
        for _ in 0..BUSY_WARM_UP {
            self.hello()?;
        }
        let began = Instant::now();
        let mut timed = Timed { fastest: Duration::MAX, rounds: 0 };
        while timed.rounds < BUSY_ROUNDS
            || (began.elapsed() < BUSY_TIME && timed.rounds < BUSY_MAX_ROUNDS)
        {
            let started = Instant::now();
            let mut done = 0;
            while done < BUSY_ROUND && (done == 0 || started.elapsed() < ROUND_LIMIT) {
                self.hello()?;
                done += 1;
            }
            // `done` is at least 1 and at most BUSY_ROUND, so neither cast can truncate.
            let took = started.elapsed() * BUSY_ROUND as u32 / done as u32;
            timed = Timed { fastest: timed.fastest.min(took), rounds: timed.rounds + 1 };
        }
        Ok(timed)
    }
}

/// The fastest of `rounds` rounds of [`BUSY_ROUND`] requests.
#[derive(Clone, Copy)]
struct Timed {
    fastest: Duration,
    rounds: usize,
}

/// What one server of [`ten_thousand_idle_slowdown`] showed.
enum Slowdown {
    /// The rounds without idle connections (`quiet`), and with 10,000 (`crowded`).
    Measured { quiet: Timed, crowded: Timed },
    /// The busy client could not be served at all while idle clients were connected.
    Stuck(String),
}

impl Slowdown {
    /// The rounds on `server`: without idle connections, then with 10,000 of them.
    fn measure(server: &Server) -> Result<Slowdown, Stop> {
        let pid = pid(server)?;
        // Before any client connects, as in `ten_thousand_idle`.
        let at_rest = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
        let mut busy = Busy { server, connection: None };
        let quiet = busy.fastest_round()?;
        let idle = match crowd(server, pid, at_rest)? {
            Crowd::Held(idle) => idle,
            Crowd::Stuck(seen) => return Ok(Slowdown::Stuck(seen)),
        };
        let crowded = busy.fastest_round()?;
        drop(idle);
        Ok(Slowdown::Measured { quiet, crowded })
    }
}

/// How much slower the fastest crowded round was than the fastest quiet one.
fn ratio(quiet: Timed, crowded: Timed) -> f64 {
    crowded.fastest.as_secs_f64() / quiet.fastest.as_secs_f64().max(1e-9)
}

/// "100 GET /hello in a row took 3.5 ms with no idle connections open, 7.0 ms with
/// 10000 (the fastest of 50 and of 50 rounds): 2.0x", for messages.
fn rounds(quiet: Timed, crowded: Timed) -> String {
    let ms = |timed: Timed| format!("{:.1} ms", timed.fastest.as_secs_f64() * 1000.0);
    format!(
        "{BUSY_ROUND} GET /hello in a row took {} with no idle connections open, {} with \
         {IDLE_CLIENTS} (the fastest of {} and of {} rounds): {:.1}x",
        ms(quiet),
        ms(crowded),
        quiet.rounds,
        crowded.rounds,
        ratio(quiet, crowded)
    )
}

// ANCHOR: ten_thousand_idle_slowdown
/// Does a busy client pay for the idle ones? It sends `GET /hello` after `GET /hello`,
/// timed, first with no other client connected and then with 10,000 that say nothing.
/// A loop that waits with `poll(2)` hands the kernel the whole list of descriptors on
/// every turn, and the kernel walks all of it, so every turn, and every request, costs time
/// in proportion to the connections open. epoll keeps the list in the kernel and hands
/// back only the ready ones: the second run must take at most [`SLOWDOWN_BOUND`] times
/// the first. A ratio, not a time, so that a slow machine does not decide.
///
/// A chapter that can also wait with `poll(2)` (chapter 7's `--backend poll`) is then
/// measured that way too, and must be slowed down past the bound: otherwise this probe
/// could not tell the two apart, and the chapter's pass would prove nothing.
pub fn ten_thousand_idle_slowdown(target: &Target) -> Probed {
    needs_own_server(target)?;
    let _turn = ten_thousand_turn()?;
    let server = ten_thousand_server(target, &[])?;
    let (quiet, crowded) = match Slowdown::measure(&server)? {
        Slowdown::Measured { quiet, crowded } => (quiet, crowded),
        Slowdown::Stuck(seen) => {
            return Ok(Outcome::Lacks(format!(
                "the busy client could not be served at all: {seen}"
            )))
        }
    };
    let measured = rounds(quiet, crowded);
    if ratio(quiet, crowded) > SLOWDOWN_BOUND {
        return Ok(Outcome::Lacks(format!("{measured}; the bound is {SLOWDOWN_BOUND}x")));
    }
    // One server of 10,000 connections at a time.
    drop(server);

    let poll = ten_thousand_server(target, &[("--backend", "poll")])?;
    if poll.dropped_flags.contains(&"--backend") {
        // Shown with `cargo test -p suite ten_thousand -- --nocapture`: the measurement.
        println!("{}: {measured} (it has no --backend flag)", poll.label);
        return Ok(Outcome::Works);
    }
    let stats = exchange(&poll, &get("/stats"))?;
    let text = stats.text();
    let backend = text.lines().find(|line| line.starts_with("backend "));
    check!(
        backend.is_none_or(|line| line.trim_end() == "backend poll"),
        "started with --backend poll, /stats says {backend:?}"
    );
    let (quiet, crowded) = match Slowdown::measure(&poll)? {
        Slowdown::Measured { quiet, crowded } => (quiet, crowded),
        Slowdown::Stuck(seen) => {
            return Err(broken(format!(
                "with --backend poll, the busy client could not be served at all: {seen}"
            )))
        }
    };
    let measured_on_poll = rounds(quiet, crowded);
    if ratio(quiet, crowded) <= SLOWDOWN_BOUND {
        return Err(broken(format!(
            "with the default backend, {measured}; but with --backend poll too, \
             {measured_on_poll}, within the bound of {SLOWDOWN_BOUND}x: poll(2) should be \
             far slower, so the probe cannot tell the backends apart"
        )));
    }
    println!("{}: default backend: {measured}; --backend poll: {measured_on_poll}", poll.label);
    Ok(Outcome::Works)
}
// ANCHOR_END: ten_thousand_idle_slowdown

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("ten_thousand_idle", CONNECTIONS_TOPIC, format!(
            "{} clients connect and send nothing, opened {} at a time (the check waits up to {} \
             for the server to accept each batch): the server accepts every one, `/stats` says \
             `connections_open` {} or more, `GET /hello` is answered within {}, and the \
             process's resident memory, all of it, is under {}. The timeouts are passed as {}, \
             so none fires. (Skipped unless the suite may open {} files, `ulimit -n`; your \
             server inherits that limit.)",
            count(IDLE_CLIENTS), count(IDLE_BATCH), secs(PATIENCE), count(IDLE_CLIENTS), secs(PROMPTLY), size(IDLE_MEMORY_BOUND), secs(TEN_THOUSAND_TIMEOUTS), count(2 * IDLE_CLIENTS))),
        rule("ten_thousand_idle_slowdown", CONNECTIONS_TOPIC, format!(
            "{} `GET /hello` in a row on one connection (or as many as {} allows, counted at \
             their pace), timed with no other client and then with {} idle ones: the second \
             time is at most {}× the first (the fastest of several rounds counts). A server \
             that accepts `--backend poll` is timed that way too, and must then be slower \
             than that; a `backend` line in its `/stats`, if any, says `backend poll`.",
            BUSY_ROUND, secs(ROUND_LIMIT), count(IDLE_CLIENTS), SLOWDOWN_BOUND)),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        count(IDLE_CLIENTS),
        count(IDLE_BATCH),
        size(IDLE_MEMORY_BOUND),
        secs(TEN_THOUSAND_TIMEOUTS),
        count(2 * IDLE_CLIENTS),
        BUSY_ROUND.to_string(),
        secs(ROUND_LIMIT),
        SLOWDOWN_BOUND.to_string(),
    ]
}
