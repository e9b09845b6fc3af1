//! Runs probes and judges their outcomes against the manifest.
//!
//! | the probe saw | manifest says yes | manifest says no |
//! |---|---|---|
//! | it works | pass | **fail**: the table is out of date (or the probe too weak) |
//! | it lacks the capability, as expected | **fail** | pass, and print why: the lesson |
//! | something broken | **fail** | **fail** |
//!
//! A reader's own server (the runner's `--command` and `--addr`) is judged the same way,
//! but one: a server that can do more than the chapter it is held to passes. Our chapters'
//! "no" is part of their lesson; a reader's server is not wrong to be ahead of it.

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

use crate::chapters::{self, Chapter, CHAPTERS};
use crate::manifest::{self, Expect};
use crate::probes::{self, Launch, Outcome, Probe, Probed, Stop, Target};
use crate::server::Program;

/// The judgement on one probe against one chapter.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// A reader's server has a capability the chapter it is held to lacks: a pass, and
    /// `why` the chapter lacks it.
    Ahead {
        why: &'static str,
    },
    /// The chapter lacks the capability, as the manifest says it does.
    ExpectedLimitation {
        why: &'static str,
        seen: String,
    },
    Fail(Failure, String),
    Skipped(String),
}

/// Why a check failed: what a row of the runner's report says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Something no chapter may get wrong: a wrong status, a missing header, a crash.
    Broken,
    /// It lacks a capability the manifest says the chapter has.
    Lacks,
    /// One of our chapters can do what the manifest says it cannot.
    Exceeds,
}

/// Whose server a probe ran against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    /// One of the workbook's chapters, built by the suite.
    Ours,
    /// A reader's (`--command`, `--addr`).
    Readers,
}

// ANCHOR: judge
/// Compares what a probe saw with what the manifest promises.
pub fn judge(chapter: &Chapter, probe: &Probe, probed: Probed, whose: Whose) -> Verdict {
    let description = manifest::row(probe.capability).description;
    match (probed, manifest::expectation(probe.capability, chapter)) {
        (Err(Stop::Skipped(why)), _) => Verdict::Skipped(why.to_string()),
        (Err(Stop::Broken(what)), _) => Verdict::Fail(Failure::Broken, what),
        (Ok(Outcome::Works), Expect::Yes) => Verdict::Pass,
        (Ok(Outcome::Lacks(seen)), Expect::No(why)) => Verdict::ExpectedLimitation { why, seen },
        (Ok(Outcome::Lacks(seen)), Expect::Yes) => {
            // A reader's server is not the chapter: it is held to what the chapter has.
            let who = match whose {
                Whose::Ours => chapter.name.to_string(),
                Whose::Readers => format!("held to {}, it", chapter.name),
            };
            Verdict::Fail(
                Failure::Lacks,
                format!("{who} should have \"{description}\", but {seen}"),
            )
        }
        (Ok(Outcome::Works), Expect::No(why)) if whose == Whose::Readers => Verdict::Ahead { why },
        (Ok(Outcome::Works), Expect::No(why)) => Verdict::Fail(
            Failure::Exceeds,
            format!(
                "{} passed, but the manifest says it lacks \"{description}\" ({why}). If the \
                 chapter really can do this now, change its column in tests/src/manifest.rs \
                 and regenerate book/src/generated/capabilities.md; if not, this probe has \
                 become too weak to see the difference.",
                chapter.name
            ),
        ),
    }
}
// ANCHOR_END: judge

/// Runs `probe` against `chapter`. A panic inside the probe (a bug in the suite) becomes
/// a failure instead of taking the runner down.
pub fn run(chapter: &'static Chapter, probe: &Probe, launch: Launch) -> Verdict {
    let whose = match &launch {
        Launch::Start { program: Program::Binary(_) } => Whose::Ours,
        Launch::Start { program: Program::Shell(_) } | Launch::External { .. } => Whose::Readers,
    };
    // Ours refuse to start where they cannot run: each check says so, and why.
    if whose == Whose::Ours && chapter.needs_linux() && !cfg!(target_os = "linux") {
        let refusal = shared::system::refusal(chapter.number, "io_uring");
        return Verdict::Skipped(format!("{refusal}: the suite cannot check it here"));
    }
    let target = Target { chapter, launch };
    let probed =
        panic::catch_unwind(AssertUnwindSafe(|| (probe.run)(&target))).unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            Err(Stop::Broken(format!("the probe panicked: {message}")))
        });
    judge(chapter, probe, probed, whose)
}

/// One line for the verdict, as the runner and the tests print it.
pub fn describe(chapter: &Chapter, probe: &Probe, verdict: &Verdict) -> String {
    let label = format!("{} {}", chapter.name, probe.name);
    match verdict {
        Verdict::Pass => format!("{label}: pass"),
        Verdict::Ahead { why } => format!("{label}: pass, ahead of the chapter ({why})"),
        Verdict::ExpectedLimitation { why, seen } => {
            format!("{label}: expected limitation: {why}\n    seen: {seen}")
        }
        Verdict::Fail(_, what) => format!("{label}: FAIL: {what}"),
        Verdict::Skipped(why) => format!("{label}: skipped: {why}"),
    }
}

/// Writes `line` to stderr past the test harness's output capture. `cargo test` captures
/// what `println!` and `eprintln!` print (and shows it only for a failing test), but not
/// what is written to the stderr handle directly. A test that passes without checking
/// anything must say so where it is seen.
pub fn print_uncaptured(line: &str) {
    // Nothing sensible to do if stderr itself is gone.
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Says once per process and chapter, past the test harness's output capture, that a
/// chapter's tests are skipped because it has not been written yet.
fn announce_missing(chapter: &Chapter) {
    static ANNOUNCED: [Once; CHAPTERS.len()] = [const { Once::new() }; CHAPTERS.len()];
    ANNOUNCED[usize::from(chapter.number - 1)].call_once(|| {
        print_uncaptured(&format!(
            "suite: SKIPPING {}: chapters/{} does not exist yet, so its {} tests pass \
             without running",
            chapter.name,
            chapter.directory,
            probes::PROBES.len()
        ));
    });
}

// ANCHOR: cargo_test
/// The whole of one `cargo test` case: probe `probe_name` against chapter `number`,
/// building the chapter's program first if needed (into `build_dir`). Panics, failing
/// the test, on anything but a pass or an expected limitation.
pub fn test(number: u8, probe_name: &str, build_dir: &Path) {
    let chapter = chapters::chapter(number).unwrap_or_else(|| panic!("no chapter {number}"));
    let probe = probes::find(probe_name).unwrap_or_else(|| panic!("no probe {probe_name}"));
    if !chapter.is_present() {
        announce_missing(chapter);
        return;
    }
    let binary = chapter
        .binary(build_dir)
        .unwrap_or_else(|error| panic!("cannot build {}: {error}", chapter.name));
    let verdict = run(chapter, probe, Launch::Start { program: Program::Binary(binary) });
    match verdict {
        // Printed, so `cargo test -- --nocapture` shows each lesson.
        Verdict::ExpectedLimitation { .. } => println!("{}", describe(chapter, probe, &verdict)),
        // A skipped probe passes its test without having checked anything: said on every
        // run, not only with --nocapture, so that nobody takes it for a pass.
        Verdict::Skipped(why) => print_uncaptured(&skipped_line(chapter, probe, &why)),
        Verdict::Pass | Verdict::Ahead { .. } => {}
        Verdict::Fail(..) => panic!("{}", describe(chapter, probe, &verdict)),
    }
}
// ANCHOR_END: cargo_test

/// What `cargo test` prints, past its capture, for a check that skipped.
pub fn skipped_line(chapter: &Chapter, probe: &Probe, why: &str) -> String {
    format!("suite: SKIPPED {} on {}: {why}", probe.name, chapter.name)
}

// ANCHOR: sketch_test
/// A chapter's sketch as the suite starts it: through the shell, as a reader's server is
/// started (`--command`), so that it is judged as one. Its `Server` header may say
/// anything; it is held to its chapter's column.
pub fn sketch_program(binary: &Path) -> Program {
    Program::Shell(format!("'{}'", binary.display().to_string().replace('\'', r"'\''")))
}

/// The whole of one `cargo test` case of tests/sketches.rs: chapter `number`'s sketch,
/// built first if need be (into `build_dir`), graded on the check `probe_name`, one of
/// those its chapter declares (`manifest::SKETCHES`). Panics, failing the test, on anything
/// but a pass; a sketch not written yet is skipped, and says so past the test's capture.
pub fn test_sketch(number: u8, probe_name: &str, build_dir: &Path) {
    let chapter = chapters::chapter(number).unwrap_or_else(|| panic!("no chapter {number}"));
    let probe = probes::find(probe_name).unwrap_or_else(|| panic!("no probe {probe_name}"));
    let sketch = manifest::sketch(number).unwrap_or_else(|| panic!("no sketch {number}"));
    let graded = sketch.checks().iter().any(|check| check.name == probe.name);
    assert!(graded, "sketch {number} is not graded on {probe_name} (see manifest::SKETCHES)");
    if !chapter.has_sketch() {
        announce_missing_sketch(chapter);
        return;
    }
    let binary = chapter
        .sketch_binary(build_dir)
        .unwrap_or_else(|error| panic!("cannot build {}: {error}", chapter.sketch_name()));
    let launch = Launch::Start { program: sketch_program(&binary) };
    let label = format!("{} {} (held to {})", chapter.sketch_name(), probe.name, chapter.name);
    match run(chapter, probe, launch) {
        Verdict::Pass | Verdict::Ahead { .. } => {}
        Verdict::Skipped(why) => print_uncaptured(&format!("suite: SKIPPED {label}: {why}")),
        Verdict::ExpectedLimitation { why, seen } => {
            panic!("{label}: lacks it ({why}); seen: {seen}")
        }
        Verdict::Fail(_, what) => panic!("{label}: FAIL: {what}"),
    }
}
// ANCHOR_END: sketch_test

/// Says once per process and chapter, past the capture, that a sketch's tests are skipped.
fn announce_missing_sketch(chapter: &Chapter) {
    static ANNOUNCED: [Once; CHAPTERS.len()] = [const { Once::new() }; CHAPTERS.len()];
    ANNOUNCED[usize::from(chapter.number - 1)].call_once(|| {
        let checks = manifest::sketch(chapter.number).map_or(0, |sketch| sketch.checks().len());
        print_uncaptured(&format!(
            "suite: SKIPPING the sketch of {}: {} does not exist yet, so its {} pass \
             without running",
            chapter.name,
            chapter.sketch_path().display(),
            crate::report::plural(checks, "test")
        ));
    });
}
