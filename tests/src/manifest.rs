//! The manifest: what each chapter can and cannot do, straight from the contract's
//! capability table, with one sentence of why for every "no".
//!
//! Both columns are asserted. A chapter that lacks a capability must fail that
//! capability's probes in the expected way, and the suite prints the sentence below (the
//! lesson); a chapter that passes a probe it "should" fail is an error, because then this
//! table (and the book's appendix, generated from it) would be lying.

use std::fmt::Write;
use std::sync::OnceLock;

use crate::chapters::{Chapter, CHAPTERS};
use crate::probes::{self, Gathered, Probe, PROBES};

/// The rows of the contract's capability table, in its order (which `Ord` follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
/// The table, one row from each module of probes (`tests/src/probes/`), which words its
/// "no" sentences and its note with its own constants.
pub const MANIFEST: &Gathered<Row> = &Gathered(|| {
    static ALL: OnceLock<Vec<Row>> = OnceLock::new();
    ALL.get_or_init(probes::rows)
});
// ANCHOR_END: manifest

/// What one chapter's sketch (`chapters/NN-name/examples/chNN-sketch.rs`, the chapter's
/// idea and nothing else) is graded on: rows of the table above, each with every one of its
/// checks, only some, or none, the row declared left out (see [`Graded::only`]).
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
    /// row's other checks need more than the sketch's idea, and `why` says what. No checks
    /// at all: the row is left out of the sketch (its chapter has it), and `why` says where.
    pub only: Option<(&'static [&'static str], &'static str)>,
}

impl Graded {
    /// Whether the sketch is graded on none of the row's checks: the row is left out.
    pub fn is_left_out(&self) -> bool {
        self.only.is_some_and(|(checks, _)| checks.is_empty())
    }
}

const fn all(capability: Capability) -> Graded {
    Graded { capability, only: None }
}

const fn only(
    capability: Capability, checks: &'static [&'static str], why: &'static str,
) -> Graded {
    Graded { capability, only: Some((checks, why)) }
}

/// A row the chapter turns to "yes" whose every check needs more than the sketch's idea.
const fn left_out(capability: Capability, why: &'static str) -> Graded {
    Graded { capability, only: Some((&[], why)) }
}

/// Why the sketches of chapters 4 and 5 are graded on `sleep_elsewhere` alone of their row.
const ONE_REQUEST: &str = "it answers one request a connection, keep-alive being sketch 3's, \
    so there is nothing to pipeline; and its `/upstream/` still blocks, where the chapter's \
    `upstream.rs` does not.";

/// Why the sketch of chapter 4 is graded on two of the timeouts.
const HEADER_TIMEOUT_ONLY: &str = "it keeps no connection alive to time out, and leaves the send \
    timeout to the chapter's `connection.rs`.";

/// Why the sketch of chapter 6 is not graded on a big download's memory.
const WHOLE_FILE: &str = "a worker reads the whole file and the answer goes out whole; a \
    download in bounded memory, a piece at a time, is chapter 6's `connection/download.rs`.";

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
    Sketch { chapter: 6, rows: &[all(SlowDisk), left_out(BoundedDownload, WHOLE_FILE)] },
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
                    Some((_, why)) if graded.is_left_out() => {
                        format!("{description} (not graded: {})", why.trim_end_matches('.'))
                    }
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

    /// A row graded on only some of its checks names checks of that row, fewer than all
    /// (none: the row is left out), and says why in one sentence.
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
                assert!(checks.len() < of_row.len(), "{checks:?}");
                assert!(checks.iter().all(|check| of_row.contains(check)), "{checks:?}");
                assert!(why.ends_with('.') && !why.contains("  "), "{why}");
            }
        }
        let four = sketch(4).expect("sketch 4").checks();
        let names: Vec<&str> = four.iter().map(|probe| probe.name).collect();
        assert!(names.contains(&"departing_clients") && !names.contains(&"slow_upstream"));
        assert_eq!(sketch(1).expect("sketch 1").checks().len(), row_checks(Basics));
        let six = sketch(6).expect("sketch 6");
        let names: Vec<&str> = six.checks().iter().map(|probe| probe.name).collect();
        assert_eq!(names, ["slow_disk"], "sketch 6 leaves the bounded download out");
        assert!(six.rows.iter().any(|graded| graded.is_left_out()));
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
