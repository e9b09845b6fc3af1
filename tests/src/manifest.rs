//! The manifest: what each chapter can and cannot do, straight from the contract's
//! capability table, with one sentence of why for every "no".
//!
//! Both columns are asserted. A chapter that lacks a capability must fail that
//! capability's probes in the expected way, and the suite prints the sentence below (the
//! lesson); a chapter that passes a probe it "should" fail is an error, because then this
//! table (and the book's appendix, generated from it) would be lying.

use std::fmt::Write;

use crate::chapters::{Chapter, CHAPTERS};
use crate::probes::{Probe, PROBES};

/// The rows of the contract's capability table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Routes, HEAD, errors, bad input, big files intact.
    Basics,
    /// An idle or slow client does not hold up others.
    IdleClient,
    /// A slow reader of a big response does not hold up others.
    SlowReader,
    /// Keep-alive and pipelining.
    KeepAlive,
    /// A client flooding pipelined requests does not stall the others: a connection that
    /// always has input gets a bounded share of the loop.
    Flood,
    /// Graceful shutdown on SIGTERM.
    GracefulShutdown,
    /// `/sleep` and a slow upstream do not hold up others.
    SleepAndUpstream,
    /// A client that leaves stops costing at once, even mid-wait or mid-pipeline: its
    /// waits are dropped, and nothing more is done (or sent upstream) for it.
    Departure,
    /// Idle, header and send timeouts.
    Timeouts,
    /// Slowloris (hundreds of clients trickling request heads, never finishing them) does
    /// not deny service.
    Slowloris,
    /// A slow disk (`--fs-delay-ms`) does not hold up others.
    SlowDisk,
    /// A big download costs bounded memory: the file is sent a piece at a time, never
    /// held whole.
    BoundedDownload,
    /// 10,000 idle connections do not slow the busy ones: what a turn of the loop costs
    /// does not grow with the connections that have nothing to say.
    TenThousandIdle,
    /// Serves from more than one core: connections are accepted and answered by more than
    /// one thread (one event loop per core), not merely helped by threads that read files.
    MoreThanOneCore,
}

/// What one chapter promises about one capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Yes,
    /// The chapter lacks it, and this sentence says why.
    No(&'static str),
}

/// One row of the table: a capability and what each chapter (column) promises.
#[derive(Debug)]
pub struct Row {
    pub capability: Capability,
    /// The capability as the contract words it.
    pub description: &'static str,
    /// Indexed by chapter number minus one.
    pub chapters: [Expect; CHAPTERS.len()],
    /// What the row's probes cannot check from outside, and where it is checked instead.
    pub note: Option<&'static str>,
}

use Capability::{
    Basics, BoundedDownload, Departure, Flood, GracefulShutdown, IdleClient, KeepAlive,
    MoreThanOneCore, SleepAndUpstream, SlowDisk, SlowReader, Slowloris, TenThousandIdle, Timeouts,
};
use Expect::{No, Yes};

// ANCHOR: manifest
pub const MANIFEST: &[Row] = &[
    Row {
        capability: Capability::Basics,
        description: "routes, HEAD, errors, bad input, big files intact",
        chapters: [Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes],
        note: Some(
            "A callback that panics (chapter 3 on) cannot be provoked from outside, since no \
            route panics. The event loop catches the panic and closes only that callback's \
            connection; each chapter's own unit test \
            `a_panicking_callback_costs_only_its_own_registration` (in `event_loop.rs`) \
            checks it. Two probes stop the server (SIGSTOP) while clients send, so that it \
            finds them all at once when it goes on (SIGCONT): in `idle_after_a_burst`, 2,000 \
            idle kept-alive clients each send a 12 KiB `POST /echo`, and once they are idle \
            again the server's resident memory must be within 4 MiB of what it was before; \
            in `burst_of_clients`, 200 new clients each send `GET /hello`, and `/stats` must \
            count at most 50 turns of the loop until all are answered (one client let in a \
            turn is 200).",
        ),
    },
    Row {
        capability: Capability::IdleClient,
        description: "an idle or slow client does not hold up others",
        chapters: [
            No("ch01 serves one client at a time: an idle client holds the accept loop, and \
                everyone else waits in the kernel's backlog."),
            Yes,
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
    },
    Row {
        capability: Capability::SlowReader,
        description: "a slow reader of a big response does not hold up others",
        chapters: [
            No("ch01 writes each response with a blocking write_all: a client that stops \
                reading stops the whole server."),
            Yes,
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
    },
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
    },
    Row {
        capability: Capability::Flood,
        description: "a client flooding pipelined requests does not stall the others",
        chapters: [
            No("ch01 answers one request per connection and closes it, so a client has no \
                pipeline to flood: its next request needs a new connection, and waits its \
                turn like everyone else's."),
            No("ch02 still answers one request per connection and closes it, so there is no \
                pipeline to flood: the requests behind the first are dropped with the \
                connection."),
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
        note: Some(
            "The probe has one client write `GET /hello` after `GET /hello` on one \
            connection for about two seconds while it reads the answers, and meanwhile \
            sends `GET /hello` eight times from new connections: each must be answered \
            within 1 s (a loop that gives each connection a bounded share of its turn \
            answers in a millisecond or two), and the flooding client must go on being \
            answered too. Chapter 9 runs with `--threads 1` for it: with two loops, a \
            client that lands on the loop the flood leaves alone is served by luck. \
            `flood_behind_a_wait` has one client pipeline 1 MiB of `GET /hello`, twice as it \
            is and twice behind a `GET /sleep?ms=100`, and compares the server's CPU time per \
            request (from `/proc`): behind the wait it may be at most twice as much. A server \
            that moves the piled-up megabyte for every request answered pays four to five \
            times as much in a debug build (the suite's), sixteen to eighteen times in a \
            release build, while everyone else waits; a cost, not the others' wait, because in a debug build a loop \
            that answers the whole megabyte in one turn keeps them waiting almost as long.",
        ),
    },
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
        note: Some(
            "`graceful_shutdown` holds a big response in flight after SIGTERM (its client \
            reads none of it), and meanwhile a new client connects every 0.2 s: from 1 s \
            after the signal on, each must be refused, and before, one let in must be \
            answered. Chapters 9 and 10 run with `--threads 2` for it: every loop must stop \
            accepting, not only the one the signal reached.",
        ),
    },
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
    },
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
        note: Some(
            "The probe has clients leave with a reset at five awkward moments: five during \
            `GET /sleep?ms=4000` (`/stats` must stop counting them within 1 s); one with \
            1.25 MiB of pipelined `GET /hello` behind a `GET /sleep?ms=5000`, more than the \
            server buffers (`/stats` must stop counting it within 1 s too); one that \
            pipelined twenty slow `/upstream/` requests, while the first is being fetched \
            (the upstream must get no second one); thirty that each pipelined 16 KiB of `GET \
            /sleep?ms=10000` (the server must give their descriptors back within 1.5 s); and, \
            where the server has `--upstream-limit`, five waiting in line for the upstream \
            (a client that comes after them must not wait for their turns).",
        ),
    },
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
    },
    Row {
        capability: Capability::Slowloris,
        description: "slowloris does not deny service",
        chapters: [
            No("ch01 serves one client at a time: the first client that trickles its request \
                head holds the accept loop for as long as it keeps trickling."),
            No("ch02 has no timers, so nothing ever closes a client that trickles its head: \
                a few hundred of them hold every file descriptor, and new clients wait in the \
                backlog."),
            No("ch03 has no timers yet: trickling clients keep their descriptors for as long \
                as they like, and once all are taken nobody new is accepted."),
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
    },
    Row {
        capability: Capability::SlowDisk,
        description: "a slow disk (`--fs-delay-ms`) does not hold up others",
        chapters: [
            No("ch01 reads files with blocking calls: a slow disk stops the whole server."),
            No("ch02 reads files with blocking calls inside its poll loop: a slow disk \
                stalls every connection."),
            No("ch03 reads files with blocking calls inside its event loop: a slow disk \
                stalls every connection."),
            No("ch04's timers don't help with files: a file read still blocks the loop \
                thread."),
            No("ch05's promises change how callbacks are written, not where the work runs: \
                a file read still blocks the loop thread."),
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
        ],
        note: None,
    },
    Row {
        capability: Capability::BoundedDownload,
        description: "a big download costs bounded memory",
        chapters: [
            No("ch01 reads a file whole into memory before sending it: a download costs the \
                whole file, so files over 64 MiB are refused."),
            No("ch02 reads a file whole into memory before sending it: every download in \
                flight holds its whole file, so files over 64 MiB are refused."),
            No("ch03 reads a file whole into memory before sending it: the file waits in the \
                connection's output buffer for as long as the client takes to read it."),
            No("ch04 reads a file whole into memory before sending it: timers change when \
                the loop waits, not how much a download holds."),
            No("ch05 reads a file whole into memory before sending it: its promise of a \
                file's contents is a promise of all of them at once."),
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
        ],
        note: None,
    },
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
        note: Some(
            "The probe times `GET /hello` after `GET /hello` on one connection, first with no \
            other client connected and then with 10,000 idle ones, and compares the two: \
            with epoll the second run takes at most about twice as long, with `poll(2)` a \
            hundred times as long and more. Chapter 7 is also run with `--backend poll`, which must show the \
            slowdown, or the probe could not tell the two apart.",
        ),
    },
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
        note: Some(
            "The probe starts the server with `--threads 2` and sends `GET /hello` four times \
            on each of 32 connections; the kernel's `SO_REUSEPORT` hash hands each connection \
            to one of the two loops. `/stats` must then show at least two `thread N \
            requests_served M` lines with M above 0, adding up to `requests_served`. On Linux \
            the probe also reads each thread's CPU time in `/proc/PID/task/`: at least two \
            threads must have done a good share of the work.",
        ),
    },
];
// ANCHOR_END: manifest

/// What one chapter's sketch (`chapters/NN-name/examples/chNN-sketch.rs`, the chapter's
/// idea and nothing else) is graded on: rows of the table above, each with every one of its
/// checks, or only some (see [`Graded::only`]).
#[derive(Debug)]
pub struct Sketch {
    /// The chapter, by number.
    pub chapter: u8,
    pub rows: &'static [Graded],
}

/// One row a sketch is graded on.
#[derive(Debug)]
pub struct Graded {
    pub capability: Capability,
    /// `None`: every check of the row. `Some((checks, why))`: only these, because the
    /// row's other checks need more than the sketch's idea, and `why` says what.
    pub only: Option<(&'static [&'static str], &'static str)>,
}

const fn all(capability: Capability) -> Graded {
    Graded { capability, only: None }
}

const fn only(
    capability: Capability, checks: &'static [&'static str], why: &'static str,
) -> Graded {
    Graded { capability, only: Some((checks, why)) }
}

/// Why the sketches of chapters 4 and 5 are graded on `sleep_elsewhere` alone of their row.
const ONE_REQUEST: &str = "it answers one request a connection, keep-alive being sketch 3's, \
    so there is nothing to pipeline; and its `/upstream/` still blocks, where the chapter's \
    `upstream.rs` does not.";

/// Why the sketch of chapter 4 is graded on two of the timeouts.
const HEADER_TIMEOUT_ONLY: &str = "it keeps no connection alive to time out, and leaves the send \
    timeout to the chapter's `connection.rs`.";

/// Why the sketch of chapter 8 is not graded on `slow_upstream` (its `/upstream/` is a 501).
const UPSTREAM_AWAITED: &str = "the upstream is one more wait of the same kind: chapter 8's \
    `upstream.rs`.";

// ANCHOR: sketches
/// Every chapter's sketch and what it is graded on, in the runner's `--sketch` and in
/// `cargo test` (tests/sketches.rs): the rows its chapter turns to "yes" (a test checks
/// that), or, for a chapter that adds none the suite can see, the row its idea serves.
#[rustfmt::skip] // a table: one sketch per line
pub const SKETCHES: &[Sketch] = &[
    Sketch { chapter: 1, rows: &[all(Basics)] },
    Sketch { chapter: 2, rows: &[all(IdleClient), all(SlowReader)] },
    Sketch { chapter: 3, rows: &[all(KeepAlive), all(Flood), all(GracefulShutdown)] },
    Sketch { chapter: 4, rows: &[
        only(SleepAndUpstream, &["sleep_elsewhere"], ONE_REQUEST), all(Departure),
        only(Timeouts, &["header_timeout", "waits_without_spinning"], HEADER_TIMEOUT_ONLY),
        all(Slowloris),
    ] },
    // Promises change how the waits are written, which the suite cannot see: chapter 4's.
    Sketch { chapter: 5, rows: &[only(SleepAndUpstream, &["sleep_elsewhere"], ONE_REQUEST)] },
    Sketch { chapter: 6, rows: &[all(SlowDisk), all(BoundedDownload)] },
    Sketch { chapter: 7, rows: &[all(TenThousandIdle)] },
    // async/await changes how the waits are written: chapter 4's row again.
    Sketch { chapter: 8, rows: &[
        only(SleepAndUpstream, &["sleep_elsewhere", "answers_as_ready"], UPSTREAM_AWAITED),
    ] },
    Sketch { chapter: 9, rows: &[all(MoreThanOneCore)] },
    // The ring changes how the loop talks to the kernel: the row of a connection's life.
    Sketch { chapter: 10, rows: &[all(KeepAlive)] },
    Sketch { chapter: 11, rows: &[all(KeepAlive)] },
];
// ANCHOR_END: sketches

/// What chapter `number`'s sketch is graded on.
pub fn sketch(number: u8) -> Option<&'static Sketch> {
    SKETCHES.iter().find(|sketch| sketch.chapter == number)
}

impl Sketch {
    /// The checks the sketch is graded on, in the order of `PROBES`.
    pub fn checks(&self) -> Vec<&'static Probe> {
        PROBES
            .iter()
            .filter(|probe| {
                self.rows.iter().any(|graded| {
                    graded.capability == probe.capability
                        && graded.only.is_none_or(|(checks, _)| checks.contains(&probe.name))
                })
            })
            .collect()
    }
}

/// The manifest's row for `capability`.
pub fn row(capability: Capability) -> &'static Row {
    MANIFEST
        .iter()
        .find(|row| row.capability == capability)
        // Every Capability has a row: the test `every_capability_has_one_row` checks.
        .expect("every capability has a row in MANIFEST")
}

/// What `chapter` promises about `capability`.
pub fn expectation(capability: Capability, chapter: &Chapter) -> Expect {
    row(capability).chapters[usize::from(chapter.number - 1)]
}

/// The capability table as Markdown, for the book's appendix
/// (`cargo run -p suite -- --capability-table`).
pub fn capability_table() -> String {
    let mut out = String::new();
    // Writing into a String cannot fail, so the results are ignored.
    let _ = writeln!(
        out,
        "<!-- Generated from tests/src/manifest.rs by `cargo run -p suite -- \
         --capability-table`.\n     Do not edit: a test fails when this file and the \
         manifest disagree. -->\n"
    );
    // Ten chapter columns fit the book's 880 px column only under short heads: the number
    // (the name on hover), and the names in a line under the table.
    let _ = write!(out, "| capability |");
    for chapter in CHAPTERS {
        let _ = write!(out, " <abbr title=\"{}\">{}</abbr> |", chapter.name, chapter.number);
    }
    let _ = write!(out, "\n|---|");
    for _ in CHAPTERS {
        let _ = write!(out, ":-:|");
    }
    out.push('\n');
    for row in MANIFEST {
        let _ = write!(out, "| {} |", row.description);
        for expect in &row.chapters {
            let cell = match expect {
                Yes => "yes",
                No(_) => "no",
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    let names: Vec<String> =
        CHAPTERS.iter().map(|chapter| format!("{} `{}`", chapter.number, chapter.name)).collect();
    let _ = writeln!(out, "\nThe columns are the chapters: {}.", names.join(", "));

    let _ = writeln!(
        out,
        "\nEvery \"no\" is tested too: the chapter must fail that capability's checks in \
         the way\nthe sentence below describes, or the suite fails.\n"
    );
    for row in MANIFEST {
        let probes: Vec<String> = PROBES
            .iter()
            .filter(|probe| probe.capability == row.capability)
            .map(|probe| format!("`{}`", probe.name))
            .collect();
        let _ = writeln!(out, "**{}**", row.description);
        let _ = writeln!(out, "(checked by {}):\n", probes.join(", "));
        let reasons: Vec<(&Chapter, &str)> = CHAPTERS
            .iter()
            .zip(&row.chapters)
            .filter_map(|(chapter, expect)| match expect {
                No(why) => Some((chapter, *why)),
                Yes => None,
            })
            .collect();
        if reasons.is_empty() {
            let _ = writeln!(out, "Every chapter has this.\n");
        } else {
            for (chapter, why) in reasons {
                let _ = writeln!(out, "- {}: {why}", chapter.name);
            }
            out.push('\n');
        }
        if let Some(note) = row.note {
            let _ = writeln!(out, "{note}\n");
        }
    }
    out.push_str(&sketch_table());
    // One newline at the end of the file, not two.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The sketches' part of the appendix: what each is graded on.
fn sketch_table() -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**What each chapter's sketch is graded on**\n\nEach chapter has a sketch, \
         `chapters/NN-name/examples/chNN-sketch.rs`: its idea and nothing else, in one small\n\
         program. The suite grades it as it grades a reader's server held to the chapter's \
         column,\non the rows its idea is about (`cargo run -p suite -- --sketch --chapter N`): \
         the rows the\nchapter turns to \"yes\", or, for a chapter that adds none the suite \
         can see, the row its\nidea serves.\n"
    );
    for sketch in SKETCHES {
        let rows: Vec<String> = sketch
            .rows
            .iter()
            .map(|graded| {
                let quoted = |names: Vec<&str>| {
                    let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
                    match names.split_last() {
                        Some((last, [])) => last.clone(),
                        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                        None => String::new(),
                    }
                };
                let of_row: Vec<&str> = PROBES
                    .iter()
                    .filter(|probe| probe.capability == graded.capability)
                    .map(|probe| probe.name)
                    .collect();
                let description = row(graded.capability).description;
                match graded.only {
                    None if of_row.len() > 4 => {
                        format!("{description} (all {} of its checks)", of_row.len())
                    }
                    None => format!("{description} ({})", quoted(of_row)),
                    Some((checks, why)) => {
                        let left: Vec<&str> =
                            of_row.into_iter().filter(|name| !checks.contains(name)).collect();
                        let why = why.trim_end_matches('.');
                        format!(
                            "{description} ({} only; not {}: {why})",
                            quoted(checks.to_vec()),
                            quoted(left)
                        )
                    }
                }
            })
            .collect();
        let _ = writeln!(out, "- sketch {}: {}.", sketch.chapter, rows.join("; "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_has_one_row() {
        for (index, row) in MANIFEST.iter().enumerate() {
            let count = MANIFEST.iter().filter(|other| other.capability == row.capability).count();
            assert_eq!(count, 1, "row {index} ({:?}) is duplicated", row.capability);
        }
    }

    #[test]
    fn every_no_names_its_chapter() {
        // The sentences are printed on their own, so each must say which chapter it is
        // about ("ch02 ...") and be one sentence.
        for row in MANIFEST {
            for (chapter, expect) in CHAPTERS.iter().zip(&row.chapters) {
                if let No(why) = expect {
                    assert!(why.starts_with(chapter.short_name()), "{why}");
                    assert!(why.ends_with('.') && !why.contains("  "), "{why}");
                }
            }
        }
    }

    /// A sketch is graded on the rows its chapter turns to "yes" (chapter 1: all it has);
    /// a chapter that turns none declares the rows its idea serves, which it must have.
    #[test]
    fn every_sketch_is_graded_on_its_chapters_new_rows() {
        let numbers: Vec<u8> = SKETCHES.iter().map(|sketch| sketch.chapter).collect();
        let chapters: Vec<u8> = CHAPTERS.iter().map(|chapter| chapter.number).collect();
        assert_eq!(numbers, chapters, "one sketch per chapter, in order");
        for sketch in SKETCHES {
            let index = usize::from(sketch.chapter - 1);
            let new: Vec<Capability> = MANIFEST
                .iter()
                .filter(|row| {
                    row.chapters[index] == Yes && (index == 0 || row.chapters[index - 1] != Yes)
                })
                .map(|row| row.capability)
                .collect();
            let declared: Vec<Capability> = sketch.rows.iter().map(|g| g.capability).collect();
            if new.is_empty() {
                assert!(!declared.is_empty(), "sketch {} is graded on nothing", sketch.chapter);
                for capability in &declared {
                    assert_eq!(row(*capability).chapters[index], Yes, "sketch {}", sketch.chapter);
                }
            } else {
                assert_eq!(declared, new, "sketch {}: its chapter's new rows", sketch.chapter);
            }
        }
    }

    /// A row graded on only some of its checks names checks of that row, fewer than all,
    /// and says why in one sentence.
    #[test]
    fn a_sketch_graded_on_some_checks_says_why() {
        for sketch in SKETCHES {
            for graded in sketch.rows {
                let Some((checks, why)) = graded.only else { continue };
                let of_row: Vec<&str> = PROBES
                    .iter()
                    .filter(|probe| probe.capability == graded.capability)
                    .map(|probe| probe.name)
                    .collect();
                assert!(!checks.is_empty() && checks.len() < of_row.len(), "{checks:?}");
                assert!(checks.iter().all(|check| of_row.contains(check)), "{checks:?}");
                assert!(why.ends_with('.') && !why.contains("  "), "{why}");
            }
        }
        let four = sketch(4).expect("sketch 4").checks();
        let names: Vec<&str> = four.iter().map(|probe| probe.name).collect();
        assert!(names.contains(&"departing_clients") && !names.contains(&"slow_upstream"));
        assert_eq!(sketch(1).expect("sketch 1").checks().len(), row_checks(Basics));
    }

    fn row_checks(capability: Capability) -> usize {
        PROBES.iter().filter(|probe| probe.capability == capability).count()
    }

    #[test]
    fn every_capability_has_a_probe() {
        for row in MANIFEST {
            assert!(
                PROBES.iter().any(|probe| probe.capability == row.capability),
                "nothing checks {:?}",
                row.capability
            );
        }
    }
}
