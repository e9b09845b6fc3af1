//! The probe for the capability table's last row: does the server serve from more than
//! one core?
//!
//! Chapter 9 runs one event loop per thread (`--threads N`), each with a listening socket
//! of its own on the same port (`SO_REUSEPORT`), and the kernel hands every new
//! connection to one of them by a hash of its addresses. Threads alone prove nothing:
//! chapters 6 to 8 have a pool of them, but they only read files, and every connection is
//! still accepted and answered by the one loop thread. So the probe asks two witnesses
//! who answered the clients:
//!
//! - the server itself: chapter 9's `/stats` has a line per loop,
//!   `thread 1 requests_served 15`;
//! - the kernel, where it can be asked (Linux): the CPU time each of the server's threads
//!   used while the clients were served (`/proc/PID/task/*/schedstat`). That needs no
//!   particular `/stats`, and it catches a `/stats` that counts one thing and does another.

use std::time::{Duration, Instant};

use super::{
    broken, connect, dropped_note, expect_status, get, needs_own_server, receive, sending, Outcome,
    Probed, Stop, Target, HELLO, PATIENCE,
};
use crate::client::{show, Client};
use crate::manifest::Expect::{No, Yes};
use crate::manifest::{Capability, Row};
use crate::probes::checklist::Applies::Without;
use crate::probes::checklist::{in_words, leak, rule, rule_if, Rule, LOOPS};
use crate::probes::{probe, Module, Probe};
use crate::resources::{self, ThreadTime};
use crate::server::{Options, Server};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("spread_over_loops", Capability::MoreThanOneCore, spread_over_loops),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::MoreThanOneCore,
        description: "serves from more than one core",
        chapters: [
            No("ch01 runs on one thread: its blocking accept loop takes one client at a time, \
                so one core does all the serving however many the machine has."),
            No("ch02's poll loop runs on one thread, which accepts and answers every \
                connection: one core does all the serving."),
            No("ch03's event loop runs every callback on its one thread, so one core does all \
                the serving."),
            No("ch04's timers fire on the same one loop thread that accepts and answers every \
                connection: one core does all the serving."),
            No("ch05's promises are settled on the one loop thread that accepts and answers \
                every connection: one core does all the serving."),
            No("ch06's pool threads only open and read files; every connection is accepted, \
                parsed and answered by the one loop thread."),
            No("ch07 changes how its one loop waits, not how many loops there are: one thread \
                accepts and answers every connection, and the pool threads only read files."),
            No("ch08's executor runs every connection's task on one thread; its pool threads \
                only read files, so one core does all the serving."),
            Yes,
            Yes,
            Yes,
        ],
        note: Some(leak(format!(
            "The probe starts the server with `--threads {}` and sends `GET /hello` {} times \
            on each of {} connections; the kernel's `SO_REUSEPORT` hash hands each connection \
            to one of the two loops. `/stats` must then show at least two `thread N \
            requests_served M` lines with M above 0, adding up to `requests_served`. On Linux \
            the probe also reads each thread's CPU time in `/proc/PID/task/`: at least two \
            threads must have done a good share of the work.",
            THREADS,
            in_words(REQUESTS_EACH),
            CONNECTIONS,
        ))),
    }
}
// ANCHOR_END: row

/// `--threads` for the chapters that have it.
pub(super) const THREADS: &str = "2";
/// How many connections, and how many `GET /hello` on each. With 32 connections, the
/// chance that the kernel's hash hands them all, or all but three, to one of two loops is
/// about one in a million.
pub(super) const CONNECTIONS: usize = 32;
pub(super) const REQUESTS_EACH: usize = 4;
/// A thread "served" if it used at least this share of the CPU time all the server's
/// threads used while the clients were served. The loops of chapter 9 split the work
/// about evenly (a loop that got a quarter of the connections still has far more than
/// this); a thread that only sleeps, or wakes once a second for its timers, has almost
/// none of it.
pub(super) const SERVING_SHARE: f64 = 0.1;
/// Less CPU time than this in all, and the threads' shares say nothing: the kernel's
/// clock was too coarse, or the machine too fast, to tell them apart.
const ENOUGH_CPU: Duration = Duration::from_millis(1);

// ANCHOR: spread_over_loops
/// Row 12: starts the server with `--threads 2`, serves `GET /hello` four times on each of
/// 32 connections, and asks `/stats` and the kernel which threads did the serving. At
/// least two must have: two `thread N requests_served M` lines with M above 0 (adding up
/// to `requests_served`), and, where `/proc` shows it, two threads with a good share of
/// the CPU time. A chapter without `--threads` is started without it, and must show one
/// thread doing all the work: no per-thread lines in `/stats`, one busy thread in `/proc`.
pub fn spread_over_loops(target: &Target) -> Probed {
    needs_own_server(target)?;
    let server = target.start(Options {
        if_supported: vec![("--threads", THREADS.into())],
        ..Options::default()
    })?;
    let pid = server.pid();
    let before = pid.and_then(resources::thread_cpu_times);
    let served = serve_hellos(&server)?;
    let after = pid.and_then(resources::thread_cpu_times);
    let busy = pid
        .zip(before.zip(after))
        .and_then(|(pid, (before, after))| busy_threads(pid, &before, &after));
    let stats = wait_for_counts(&server, served)?;
    let started = if server.dropped_flags.is_empty() {
        format!(" (started with --threads {THREADS})")
    } else {
        dropped_note(&server)
    };
    let what = format!("after {served} GET /hello on {CONNECTIONS} connections{started}");
    let cpu_note = match &busy {
        Some(busy) => format!("; by /proc, {busy}"),
        None => String::new(),
    };
    let loops_that_served = stats.threads.iter().filter(|(_, served)| *served > 0).count();
    match stats.threads.len() {
        0 => {
            if let Some(busy) = busy.as_ref().filter(|busy| busy.serving.len() >= 2) {
                return Err(broken(format!(
                    "{what}, /stats has no `thread N requests_served M` lines, yet by /proc \
                     {busy}: say in /stats what each loop served, a line each"
                )));
            }
            Ok(Outcome::Lacks(format!(
                "{what}, /stats has no `thread N requests_served M` lines{cpu_note}"
            )))
        }
        1 => Err(broken(format!(
            "{what}, /stats has a single `thread N requests_served M` line: with --threads \
             {THREADS}, there should be one for each of the {THREADS} loops{cpu_note}"
        ))),
        _ if loops_that_served < 2 => Err(broken(format!(
            "{what}, /stats says only one loop served them ({}): does each loop have its \
             own listening socket on the port, with SO_REUSEPORT?{cpu_note}",
            stats.thread_lines()
        ))),
        _ => {
            let sum: u64 = stats.threads.iter().map(|(_, served)| served).sum();
            // The `/stats` requests themselves may be counted on either side of the sum.
            let slack = stats.stats_requests as u64;
            if sum.abs_diff(stats.total) > slack {
                return Err(broken(format!(
                    "{what}, /stats says requests_served {} but its thread lines add up to \
                     {sum} ({})",
                    stats.total,
                    stats.thread_lines()
                )));
            }
            if let Some(busy) = busy.as_ref().filter(|busy| busy.serving.len() < 2) {
                return Err(broken(format!(
                    "{what}, /stats says {loops_that_served} loops served them ({}), but by \
                     /proc {busy}",
                    stats.thread_lines()
                )));
            }
            // Shown with `cargo test -p suite spread_over_loops -- --nocapture`.
            println!("{}: {what}: {}{cpu_note}", server.label, stats.thread_lines());
            Ok(Outcome::Works)
        }
    }
}
// ANCHOR_END: spread_over_loops

/// Sends [`REQUESTS_EACH`] `GET /hello` on each of [`CONNECTIONS`] connections, one
/// connection after another (and a new connection whenever the server closes one, as
/// chapters 1 and 2 do after every answer). Returns how many were answered: all of them.
fn serve_hellos(server: &Server) -> Result<usize, Stop> {
    let mut served = 0;
    for connection in 1..=CONNECTIONS {
        let mut client: Option<Client> = None;
        for request in 1..=REQUESTS_EACH {
            let what = format!("GET /hello number {request} on connection {connection}");
            let mut open = match client.take() {
                Some(open) => open,
                None => connect(server)?,
            };
            sending(&mut open, &get("/hello"), &what)?;
            let response = receive(&mut open, server, false, &what)?;
            expect_status(&response, &[200], &what)?;
            if response.body != HELLO {
                return Err(broken(format!("{what}: the body is {}", show(&response.body))));
            }
            served += 1;
            if !response.says_close() {
                client = Some(open);
            }
        }
    }
    Ok(served)
}

/// What `/stats` said, once it counted every request the probe had sent.
struct Counts {
    /// `requests_served`.
    total: u64,
    /// The `thread N requests_served M` lines, as (N, M).
    threads: Vec<(u64, u64)>,
    /// How many `/stats` requests it took (each may count itself).
    stats_requests: usize,
}

impl Counts {
    /// "thread 0 requests_served 17, thread 1 requests_served 15", for messages.
    fn thread_lines(&self) -> String {
        let lines: Vec<String> = self
            .threads
            .iter()
            .map(|(index, served)| format!("thread {index} requests_served {served}"))
            .collect();
        lines.join(", ")
    }
}

/// Reads `/stats` until it counts the `served` requests the probe sent (at once, where a
/// server counts a request before it sends the answer; a moment later where it counts
/// after), or [`PATIENCE`] runs out.
fn wait_for_counts(server: &Server, served: usize) -> Result<Counts, Stop> {
    let deadline = Instant::now() + PATIENCE;
    let mut stats_requests = 0;
    loop {
        let what = "GET /stats";
        let mut client = connect(server)?;
        sending(&mut client, &get("/stats"), what)?;
        let response = receive(&mut client, server, false, what)?;
        expect_status(&response, &[200], what)?;
        stats_requests += 1;
        let text = response.text();
        let total = super::stats_value(&response, "requests_served").ok_or_else(|| {
            broken(format!("{what}: no `requests_served N` line in {:?}", text.trim_end()))
        })?;
        let threads = thread_lines(&text).map_err(|line| {
            broken(format!(
                "{what}: the line {line:?} is not of the form `thread N requests_served M`"
            ))
        })?;
        let counted = threads.iter().map(|(_, served)| served).sum::<u64>();
        let done = total >= served as u64 && (threads.is_empty() || counted >= served as u64);
        if done || Instant::now() >= deadline {
            return Ok(Counts { total, threads, stats_requests });
        }
        // A server cannot tell us when its counters move; we ask again shortly.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The `thread N requests_served M` lines of a `/stats` body, as (N, M); a line that
/// begins with `thread ` but has another form is returned as the error.
fn thread_lines(stats: &str) -> Result<Vec<(u64, u64)>, String> {
    stats
        .lines()
        .filter(|line| line.starts_with("thread "))
        .map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["thread", index, "requests_served", served] => {
                Ok((index.parse().map_err(|_| line)?, served.parse().map_err(|_| line)?))
            }
            _ => Err(line),
        })
        .map(|parsed| parsed.map_err(str::to_string))
        .collect()
}

/// Which threads used CPU time while the clients were served.
struct Busy {
    /// The threads with at least [`SERVING_SHARE`] of it, and their share: ("loop-1", 0.45).
    /// The first thread of the process (whose id is the process's) is "main".
    serving: Vec<(String, f64)>,
    /// How many threads the server had.
    threads: usize,
}

impl std::fmt::Display for Busy {
    /// "2 of its 10 threads used CPU time while they were served: main 55%, loop-1 44%".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shares: Vec<String> = self
            .serving
            .iter()
            .map(|(name, share)| format!("{name} {:.0}%", share * 100.0))
            .collect();
        write!(
            f,
            "{} of its {} threads used CPU time while they were served: {}",
            self.serving.len(),
            self.threads,
            shares.join(", ")
        )
    }
}

/// Compares two readings of the server's threads' CPU times. `None` if too little CPU time
/// passed in all to tell the threads apart (see [`ENOUGH_CPU`]).
fn busy_threads(process: u32, before: &[ThreadTime], after: &[ThreadTime]) -> Option<Busy> {
    // A thread born in between started from nothing.
    let used: Vec<(&str, Duration)> = after
        .iter()
        .map(|thread| {
            let earlier = before.iter().find(|earlier| earlier.id == thread.id);
            let start = earlier.map_or(Duration::ZERO, |earlier| earlier.cpu);
            // The main thread bears the program's name, cut to 15 bytes by the kernel.
            let name = if thread.id == process { "main" } else { thread.name.as_str() };
            (name, thread.cpu.saturating_sub(start))
        })
        .collect();
    let total: Duration = used.iter().map(|(_, cpu)| *cpu).sum();
    if total < ENOUGH_CPU {
        return None;
    }
    let mut serving: Vec<(String, f64)> = used
        .iter()
        .map(|(name, cpu)| (name.to_string(), cpu.as_secs_f64() / total.as_secs_f64()))
        .filter(|(_, share)| *share >= SERVING_SHARE)
        .collect();
    serving.sort_by(|a, b| b.1.total_cmp(&a.1));
    Some(Busy { serving, threads: after.len() })
}

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    vec![
        rule_if(Without(MoreThanOneCore), "spread_over_loops", LOOPS,
            "A server that spreads its clients over threads says so in `/stats`: if `/proc` \
             shows two of its threads each doing a good share of the serving, `/stats` must \
             have the `thread N requests_served M` lines of chapter 9. A single such line \
             fails anyway.".to_string()),
        rule("spread_over_loops", LOOPS, format!(
            "Started with `--threads {}`: after {} connections of {} `GET /hello` each, \
             `/stats` has a line `thread N requests_served M` for each loop, at least two with \
             M above 0, adding up to `requests_served`; and by `/proc`, at least two threads \
             each did {}% or more of the work (CPU time).",
            THREADS, CONNECTIONS, REQUESTS_EACH, (SERVING_SHARE * 100.0).round())),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        THREADS.to_string(),
        CONNECTIONS.to_string(),
        REQUESTS_EACH.to_string(),
        format!("{}", (SERVING_SHARE * 100.0).round()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(id: u32, name: &str, ms: u64) -> ThreadTime {
        ThreadTime { id, name: name.into(), cpu: Duration::from_millis(ms) }
    }

    #[test]
    fn reads_thread_lines() {
        let stats = "requests_served 5\nthread 0 requests_served 3\nthread 1 requests_served 2\n";
        assert_eq!(thread_lines(stats), Ok(vec![(0, 3), (1, 2)]));
        assert_eq!(thread_lines("requests_served 5\n"), Ok(vec![]));
        let odd = "thread 0 served 3";
        assert_eq!(thread_lines(odd), Err(odd.to_string()));
    }

    #[test]
    fn tells_serving_threads_from_sleeping_ones() {
        let before = [thread(1, "ch09-multicore", 5), thread(2, "loop-1", 3), thread(3, "pool", 1)];
        let after =
            [thread(1, "ch09-multicore", 15), thread(2, "loop-1", 10), thread(3, "pool", 1)];
        let busy = busy_threads(1, &before, &after).expect("17 ms in all");
        let names: Vec<&str> = busy.serving.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["main", "loop-1"]);
        // One thread did it all: one serving thread.
        let after = [thread(1, "ch09-multicore", 25), thread(2, "loop-1", 3), thread(3, "pool", 1)];
        assert_eq!(busy_threads(1, &before, &after).expect("20 ms").serving.len(), 1);
        // Too little to tell.
        assert!(busy_threads(1, &before, &before).is_none());
    }
}
