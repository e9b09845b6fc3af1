//! The runner's report: what a reader, or a course's grading script, reads after a run.
//!
//! ```text
//! causes shared by several checks, each said once (the checks name it by its letter):
//!   [A] 12 checks: `./server` exited without printing `listening on http://HOST:PORT`
//!       (exit status: 2: a refused command line? ...); its stderr ends: unknown flag --root
//!   [B] 40 checks: it lacks Connection: close, and ch01 (says the manifest) has no ...
//!
//! `./server`        hello                       FAIL: GET /hello HTTP/1.1: answered 200
//!                                               (Hello, world!), but [B]
//! `./server`        files                       FAIL [A]
//! `./server`        upstream_relay              FAIL: GET /upstream/teapot: expected 418, ...
//! `./server`        idle_client                 expected limitation: ch01 serves one ...
//! ...
//! by row of the capability table (what ch01-blocking must show, and so must `./server`):
//!   FAIL  routes, HEAD, ... (expected: has it): 10 of 31 checks fail; broken: files [A], ...
//!   ok    an idle or slow client does not hold up others (expected: lacks it): 3 checks
//!   FAIL  a slow disk (...) (expected: lacks it): 1 of 1 check fails; broken: slow_disk [A]
//!
//! 49 checks: 21 pass, 12 expected limitations, 16 fail, 0 skipped
//! ```
//!
//! A check that was skipped checked nothing, and the summary says why:
//! `58 checks: 40 pass, 12 expected limitations, 0 fail, 6 skipped (needs to start the
//! server)`; the runner's exit status is then [`SKIPPED`], not 0.
//!
//! (A cause, and a check's line, is one line; they are folded here.) Each line begins with
//! whose server it is about: the chapter's name for ours, the command (`--command`, in
//! backquotes) or the address (`--addr`) for a reader's.
//!
//! Three rules keep it short. A cause that several checks share is said once, at the top
//! (a server that refuses `--root` fails every check that passes it, the same way), and
//! wherever a failure would repeat it (the end of a line, the middle of one, a row of the
//! corpus), its letter stands in its place. A long failure (the corpus lists every row it
//! failed) shows its first lines, and says how to see the rest. And the summary line is
//! the last line, where a script finds it (`tail -n 1`).

use std::collections::HashMap;
use std::fmt::Write;

use crate::chapters::Chapter;
use crate::harness::{Failure, Verdict};
use crate::manifest::{Expect, MANIFEST};
use crate::probes::Probe;

/// One check: a probe run against a chapter (or a reader's server held to it).
pub type Checked = (&'static Chapter, &'static Probe, Verdict);

/// A cause is said once at the top when at least this many checks of a chapter share it.
const SHARED_BY: usize = 3;
/// A shared cause is at least this long: shorter common endings ("timed out") say too
/// little to be called the same cause.
const SHORTEST_CAUSE: usize = 20;
/// Where a clause begins in a failure message: a cause is a message's last clauses.
const CLAUSE_STARTS: &[&str] = &[": ", ", but ", "; "];
/// How many lines of one failure the report shows; the rest, when that check runs alone.
const LINES_SHOWN: usize = 6;
/// How wide the first two columns are: the longest chapter's name, and probe's.
const CHAPTER_COLUMN: usize = 17;
const PROBE_COLUMN: usize = 27;

/// How a reader's command begins each line of the report: whole, in backquotes, if it fits
/// in a column of [`COMMAND_COLUMN`]; else by the file name of its first word with a `/`
/// (the program, or the script an interpreter runs). The suite's first line on stderr,
/// `starting ... once`, names it whole.
pub fn command_column(command: &str) -> String {
    if command.len() + 2 <= COMMAND_COLUMN {
        return format!("`{command}`");
    }
    let words = shell_words(command);
    let path = words.iter().find(|word| word.contains('/')).or(words.first());
    let path = path.map_or("", String::as_str);
    format!("`{}`", path.rsplit('/').next().unwrap_or(path))
}
const COMMAND_COLUMN: usize = 36;

/// A command's words as the shell reads them, enough to find a path with a space in it:
/// quotes ('...', "...") and backslashes keep what they hold in one word.
fn shell_words(command: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut in_word) = (Vec::new(), String::new(), None, false);
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some('"') | None, '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() => {
                if std::mem::take(&mut in_word) {
                    words.push(std::mem::take(&mut word));
                }
                continue;
            }
            (None, c) => word.push(c),
        }
        in_word = true;
    }
    words.extend(in_word.then_some(word));
    words
}

/// The whole report, ending with the summary line (and a newline). `readers` names a
/// reader's server (its command in backquotes, or its address), which begins every line in
/// place of the chapter's name; `None` for ours.
pub fn render(checked: &[Checked], readers: Option<&str>) -> String {
    // Each failure's message, with what differs from check to check for no reason of the
    // server's (ports, temporary folders) made the same.
    let failures: Vec<Option<String>> = checked
        .iter()
        .map(|(.., verdict)| match verdict {
            Verdict::Fail(_, what) => Some(steady(what)),
            _ => None,
        })
        .collect();
    // The same without the command line a reader's server was started with, `(ran ...)`:
    // what a check passed it differs (`--header-timeout 0.5` or `60`), while the cause,
    // a refused flag say, is the same. A check that names no shared cause shows it all.
    let without_command_lines: Vec<Option<String>> =
        failures.iter().map(|failure| failure.as_deref().map(without_command_line)).collect();
    let causes = SharedCauses::find(checked, &without_command_lines);
    // Writing into a String cannot fail, so the results of writeln! are ignored.
    let mut out = String::new();
    if !causes.list.is_empty() {
        out.push_str(
            "causes shared by several checks, each said once (the checks name it by its \
             letter):\n",
        );
        for (letter, cause) in causes.list.iter().enumerate() {
            let count = causes.named.iter().filter(|named| named.contains(&letter)).count();
            let _ = writeln!(
                out,
                "  [{}] {}: {}",
                letter_of(letter),
                plural(count, "check"),
                cause.text
            );
        }
        out.push('\n');
    }
    // The first column: the chapter's name, or the reader's server's, as wide as it is.
    let width = readers.map_or(CHAPTER_COLUMN, |name| name.len().max(CHAPTER_COLUMN));
    let alone = checked.len() == 1;
    for (index, (chapter, probe, verdict)) in checked.iter().enumerate() {
        let label = match verdict {
            Verdict::Pass => "pass".to_string(),
            Verdict::Ahead { why } => {
                format!("pass, and ahead of {}: it lacks this ({why})", chapter.short_name())
            }
            Verdict::ExpectedLimitation { why, seen } => {
                let indent = width + 1 + PROBE_COLUMN + 1;
                format!("expected limitation: {why}\n{:indent$}seen: {seen}", "")
            }
            Verdict::Fail(..) => match (&causes.lettered[index], causes.named[index].as_slice()) {
                // Nothing but a shared cause: its letter says it all.
                (Some(lettered), [letter]) if *lettered == format!("[{}]", letter_of(*letter)) => {
                    format!("FAIL {lettered}")
                }
                // What failed, with each shared cause it names by its letter.
                (Some(lettered), _) => format!("FAIL: {}", cut(lettered, probe, alone)),
                (None, _) => {
                    format!("FAIL: {}", cut(failures[index].as_deref().unwrap_or(""), probe, alone))
                }
            },
            Verdict::Skipped(why) => format!("skipped: {why}"),
        };
        let whose = readers.unwrap_or(chapter.name);
        let _ = writeln!(out, "{whose:<width$} {:<PROBE_COLUMN$} {label}", probe.name);
    }
    if let [(chapter, ..), rest @ ..] = checked {
        if rest.iter().all(|(other, ..)| other.number == chapter.number) {
            rows(&mut out, chapter, readers, checked, &causes);
        }
    }
    let _ = writeln!(out, "\n{}", summary_line(checked));
    out
}

/// The report's last line: `N checks: P pass, L expected limitations, F fail, S skipped`,
/// with why when S is not 0 (see [`skipped_why`]).
pub fn summary_line(checked: &[Checked]) -> String {
    let count = |wanted: fn(&Verdict) -> bool| checked.iter().filter(|(.., v)| wanted(v)).count();
    let pass = count(|v| matches!(v, Verdict::Pass | Verdict::Ahead { .. }));
    let limited = count(|v| matches!(v, Verdict::ExpectedLimitation { .. }));
    let fail = count(|v| matches!(v, Verdict::Fail(..)));
    format!(
        "{}: {pass} pass, {}, {fail} fail, {}",
        plural(checked.len(), "check"),
        plural(limited, "expected limitation"),
        skipped_why(checked)
    )
}

/// The exit status of a run: [`FAILED`] if a check failed; else [`SKIPPED`] if one was
/// skipped (it checked nothing, so it is no pass), unless `allow_skips`; else 0.
pub fn exit_status(checked: &[Checked], allow_skips: bool) -> i32 {
    let any = |wanted: fn(&Verdict) -> bool| checked.iter().any(|(.., verdict)| wanted(verdict));
    if any(|verdict| matches!(verdict, Verdict::Fail(..))) {
        FAILED
    } else if any(|verdict| matches!(verdict, Verdict::Skipped(_))) && !allow_skips {
        SKIPPED
    } else {
        0
    }
}

/// The runner's exit status when a check failed.
pub const FAILED: i32 = 1;
/// The runner's exit status when nothing failed but something was skipped.
pub const SKIPPED: i32 = 3;

/// Why checks were skipped: each reason once, with how many checks it skipped, in the
/// order they first appear.
pub fn skip_reasons(checked: &[Checked]) -> Vec<(&str, usize)> {
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for (.., verdict) in checked {
        let Verdict::Skipped(why) = verdict else { continue };
        match reasons.iter_mut().find(|(reason, _)| reason == why) {
            Some((_, count)) => *count += 1,
            None => reasons.push((why, 1)),
        }
    }
    reasons
}

/// The summary line's end: `0 skipped`, `3 skipped (needs to start the server)`, or with
/// several reasons, how many each: `5 skipped (3: needs to start the server; 2: ...)`.
pub fn skipped_why(checked: &[Checked]) -> String {
    let skipped = checked.iter().filter(|(.., v)| matches!(v, Verdict::Skipped(_))).count();
    match skipped {
        0 => "0 skipped".to_string(),
        _ => format!("{skipped} skipped ({})", why_skipped(checked)),
    }
}

/// Why checks were skipped, in a few words: the one reason, or each with its count
/// (`3: needs to start the server; 2: ...`).
pub fn why_skipped(checked: &[Checked]) -> String {
    match skip_reasons(checked).as_slice() {
        [(why, _)] => why.to_string(),
        several => {
            let each: Vec<String> =
                several.iter().map(|(why, count)| format!("{count}: {why}")).collect();
            each.join("; ")
        }
    }
}

/// "1 check", "2 checks".
pub fn plural(count: usize, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        _ => format!("{count} {noun}s"),
    }
}

/// `message` with what differs from check to check for no reason of the server's made the
/// same: the port a server or an upstream was given (`127.0.0.1:PORT`), the name of a
/// check's temporary site (`suite-site-N`).
fn steady(message: &str) -> String {
    const MARKERS: [(&str, &str); 2] = [("127.0.0.1:", "PORT"), ("suite-site-", "N")];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    loop {
        let next = MARKERS
            .iter()
            .filter_map(|(marker, stands_for)| Some((rest.find(marker)?, *marker, *stands_for)))
            .min();
        let Some((at, marker, stands_for)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        // A port is digits; a site's name digits and dashes.
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || (c == '-' && stands_for == "N")))
            .unwrap_or(rest.len());
        if end > 0 {
            out.push_str(stands_for);
        }
        rest = &rest[end..];
    }
}

/// `message` without the ` (ran `...`)` with which a message about a reader's server
/// that did not start says how it was started (see `Program::typed`).
fn without_command_line(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(" (ran `") {
        out.push_str(&rest[..at]);
        rest = &rest[at + " (ran `".len()..];
        rest = rest.find("`)").map_or("", |end| &rest[end + "`)".len()..]);
    }
    out.push_str(rest);
    out
}

/// "A" for the first shared cause, "B" for the second...
fn letter_of(index: usize) -> String {
    match u8::try_from(index) {
        Ok(index @ 0..26) => char::from(b'A' + index).to_string(),
        _ => format!("{}", index + 1),
    }
}

/// The first [`LINES_SHOWN`] lines of a failure, and how to see the rest (unless this is
/// the only check of the run: then all of it).
fn cut(text: &str, probe: &Probe, alone: bool) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if alone || lines.len() <= LINES_SHOWN {
        return text.to_string();
    }
    format!(
        "{}\n  ... and {} more lines (`--only {}` shows them all)",
        lines[..LINES_SHOWN].join("\n"),
        lines.len() - LINES_SHOWN,
        probe.name
    )
}

/// A cause shared by several checks.
struct Cause {
    chapter: u8,
    /// How it reads at the top of the report: the messages' common last clauses.
    text: String,
}

/// The causes shared by several failing checks, and which check names which.
struct SharedCauses {
    list: Vec<Cause>,
    /// For each check, in the report's order: the causes its message names (their indexes
    /// in `list`), in order.
    named: Vec<Vec<usize>>,
    /// For each check that names a cause: its message, with each cause it names replaced by
    /// the cause's letter, `[A]`, wherever it is said (a corpus row, a clause in the middle).
    lettered: Vec<Option<String>>,
}

impl SharedCauses {
    /// Finds them: a cause is an ending (from a clause on) that the first lines of at
    /// least [`SHARED_BY`] failures of one chapter have in common. Each failure takes the
    /// ending it shares with the most others, and of those the longest: for 40 answers
    /// that "lack Connection: close", the whole of that clause, not the endings that only
    /// the 10 answers to `GET /hello` share. Then every failure of the chapter names the
    /// causes it says, wherever it says them.
    fn find(checked: &[Checked], failures: &[Option<String>]) -> SharedCauses {
        let first_lines: Vec<Option<(u8, &str)>> = checked
            .iter()
            .zip(failures)
            .map(|((chapter, ..), failure)| {
                Some((chapter.number, failure.as_ref()?.lines().next()?))
            })
            .collect();
        let mut counts: HashMap<(u8, &str), usize> = HashMap::new();
        for (chapter, line) in first_lines.iter().flatten() {
            for start in cause_starts(line) {
                *counts.entry((*chapter, &line[start..])).or_default() += 1;
            }
        }
        let mut list: Vec<Cause> = Vec::new();
        for first_line in &first_lines {
            let best = first_line.and_then(|(chapter, line)| {
                cause_starts(line)
                    .into_iter()
                    .map(|start| (counts[&(chapter, &line[start..])], line.len() - start, start))
                    .filter(|(count, ..)| *count >= SHARED_BY)
                    .max()
                    .map(|(.., start)| (chapter, &line[start..]))
            });
            if let Some((chapter, text)) = best {
                if !list.iter().any(|cause| cause.chapter == chapter && cause.text == text) {
                    list.push(Cause { chapter, text: text.to_string() });
                }
            }
        }
        let (mut named, mut lettered) = (Vec::new(), Vec::new());
        for ((chapter, ..), failure) in checked.iter().zip(failures) {
            let found = failure.as_deref().map(|failure| letter(failure, chapter.number, &list));
            let (letters, text) = found.unwrap_or_default();
            lettered.push((!letters.is_empty()).then_some(text));
            named.push(letters);
        }
        SharedCauses { list, named, lettered }
    }
}

/// `message` with each of `chapter`'s causes that it says replaced by the cause's letter,
/// and which those are. A cause counts where a clause of the message begins with it (at
/// the start of a line, or after ": ", ", but ", "; ") and ends with it; the longer causes
/// are looked for first, so that a cause that ends another never takes a piece of it.
fn letter(message: &str, chapter: u8, causes: &[Cause]) -> (Vec<usize>, String) {
    let mut order: Vec<usize> =
        (0..causes.len()).filter(|&index| causes[index].chapter == chapter).collect();
    order.sort_by_key(|&index| std::cmp::Reverse(causes[index].text.len()));
    let mut text = message.to_string();
    let mut letters = Vec::new();
    for index in order {
        let cause = causes[index].text.as_str();
        let mut out = String::with_capacity(text.len());
        let mut from = 0; // how much of `text` has been looked at
        while let Some(found) = text[from..].find(cause) {
            let (at, end) = (from + found, from + found + cause.len());
            let before = &text[..at];
            let begins = before.is_empty()
                || before.ends_with('\n')
                || CLAUSE_STARTS.iter().any(|separator| before.ends_with(separator));
            let ends = !text[end..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
            out.push_str(&text[from..at]);
            if begins && ends {
                let _ = write!(out, "[{}]", letter_of(index));
                letters.push(index);
            } else {
                out.push_str(cause);
            }
            from = end;
        }
        out.push_str(&text[from..]);
        text = out;
    }
    letters.sort_unstable();
    letters.dedup();
    (letters, text)
}

/// Where a cause may begin in `line`: at its start, or where a clause begins; never so
/// late that what is left is too short to mean much, nor at "its stderr ends: ...", which
/// a server that always prints the same thing would make common to every failure.
fn cause_starts(line: &str) -> Vec<usize> {
    let mut starts = vec![0];
    for separator in CLAUSE_STARTS {
        starts.extend(line.match_indices(separator).map(|(at, _)| at + separator.len()));
    }
    starts.retain(|&start| {
        line.len() - start >= SHORTEST_CAUSE && !line[start..].starts_with("its stderr ends")
    });
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// One line per row of the capability table, for a run on one chapter: what a course
/// grades a stage by. Each says what the table expects of the chapter, and for a row
/// that fails, why each of its checks failed: broken (wrong in a way no chapter may be),
/// lacking what the chapter should have, or (one of ours) having what it should lack.
fn rows(
    out: &mut String, chapter: &Chapter, readers: Option<&str>, checked: &[Checked],
    causes: &SharedCauses,
) {
    let and_so = readers.map(|name| format!(", and so must {name}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "\nby row of the capability table (what {} must show{and_so}):",
        chapter.name
    );
    for row in MANIFEST {
        let checks: Vec<(usize, &Probe, &Verdict)> = checked
            .iter()
            .enumerate()
            .filter(|(_, (_, probe, _))| probe.capability == row.capability)
            .map(|(index, (_, probe, verdict))| (index, *probe, verdict))
            .collect();
        if checks.is_empty() {
            continue; // left out by --only
        }
        let expected = match row.chapters[usize::from(chapter.number - 1)] {
            Expect::Yes => "expected: has it",
            Expect::No(_) => "expected: lacks it",
        };
        // The failed checks of one kind, each with the letters of the shared causes it names.
        let named = |wanted: &dyn Fn(&Verdict) -> bool| -> Vec<String> {
            checks
                .iter()
                .filter(|(_, _, verdict)| wanted(verdict))
                .map(|(index, probe, _)| match causes.named[*index].as_slice() {
                    [] => probe.name.to_string(),
                    letters => {
                        let letters: Vec<String> = letters.iter().map(|&l| letter_of(l)).collect();
                        format!("{} [{}]", probe.name, letters.join(", "))
                    }
                })
                .collect()
        };
        let mut kinds = Vec::new();
        for (failure, says) in [
            (Failure::Broken, "broken"),
            (Failure::Lacks, "lacks it"),
            (Failure::Exceeds, "has it anyway"),
        ] {
            let names =
                named(&|verdict| matches!(verdict, Verdict::Fail(kind, _) if *kind == failure));
            if !names.is_empty() {
                kinds.push(format!("{says}: {}", names.join(", ")));
            }
        }
        let failed = checks.iter().filter(|(.., v)| matches!(v, Verdict::Fail(..))).count();
        let skipped = checks.iter().filter(|(.., v)| matches!(v, Verdict::Skipped(_))).count();
        let ahead = named(&|verdict| matches!(verdict, Verdict::Ahead { .. }));
        let checked = plural(checks.len(), "check");
        let (label, detail) = if failed > 0 {
            // "1 of 3 checks fails", "2 of 3 checks fail".
            let verb = if failed == 1 { "fails" } else { "fail" };
            ("FAIL", format!("{failed} of {checked} {verb}; {}", kinds.join("; ")))
        } else if skipped == checks.len() {
            ("skip", format!("{checked}, all skipped"))
        } else {
            let mut detail = checked;
            if skipped > 0 {
                detail.push_str(&format!(", {skipped} skipped"));
            }
            if !ahead.is_empty() {
                detail.push_str(&format!(", ahead of the chapter in {}", ahead.join(", ")));
            }
            ("ok", detail)
        };
        let _ = writeln!(out, "  {label:<5} {} ({expected}): {detail}", row.description);
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
