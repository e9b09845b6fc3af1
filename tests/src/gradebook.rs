//! The runner's report for a program to read: `--format json`, for a course's own scripts,
//! and `--format junit`, the JUnit XML that GitHub Actions' test reporters and GitHub
//! Classroom read.
//!
//! Both say, for each check, its name, its row of the capability table (as the table
//! words it, and by its short name), its verdict in one word ([`verdict_word`]), how long
//! it took, and its message; and for the run, the counts, the chapter, whose server it
//! was, and the exit status. Written by hand (the suite's dependencies are the standard
//! library's and two crates'), so the escaping is ours too: [`json_string`] and
//! [`xml_text`] / [`xml_attribute`].
//!
//! ```text
//! {"checks": [
//!   {"chapter": "ch03-event-loop", "name": "hello", "row": "routes, HEAD, ...", "row_name": "basics", "verdict": "pass", "seconds": 0.021, "message": ""},
//!   ...
//! ],
//! "summary": {"checks": 2, "pass": 1, ..., "exit_status": 1, "line": "2 checks: 1 pass, ..."}}
//! ```

use std::fmt::Write;
use std::time::Duration;

use crate::chapters::Chapter;
use crate::harness::{Failure, Verdict};
use crate::manifest::{self, Expect, Row, MANIFEST};
use crate::report::{self, Checked};
use crate::selection::row_name;

/// Every verdict's word, in the order the summary counts them.
pub const VERDICTS: [&str; 7] =
    ["pass", "ahead", "expected", "fail-broken", "fail-lacks", "fail-exceeds", "skipped"];

/// A verdict in one word: `pass`; `ahead` (a reader's server has what its chapter lacks: a
/// pass); `expected` (the chapter lacks it, and so did the server: a pass); `fail-broken`
/// (wrong in a way no chapter may be), `fail-lacks` (it lacks what the chapter has),
/// `fail-exceeds` (one of our chapters has what the table says it lacks); `skipped`.
pub fn verdict_word(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Ahead { .. } => "ahead",
        Verdict::ExpectedLimitation { .. } => "expected",
        Verdict::Fail(Failure::Broken, _) => "fail-broken",
        Verdict::Fail(Failure::Lacks, _) => "fail-lacks",
        Verdict::Fail(Failure::Exceeds, _) => "fail-exceeds",
        Verdict::Skipped(_) => "skipped",
    }
}

/// What a verdict says beyond its word: a failure's message, why a chapter lacks what it
/// lacks (and what was seen), why a check was skipped; nothing for a pass.
pub fn message(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Pass => String::new(),
        Verdict::Ahead { why } => format!("ahead of the chapter, which lacks this: {why}"),
        Verdict::ExpectedLimitation { why, seen } => format!("{why}\nseen: {seen}"),
        Verdict::Fail(_, what) => what.clone(),
        Verdict::Skipped(why) => why.clone(),
    }
}

/// A run, as a gradebook sees it: the checks, and what is said of them all.
pub struct Run<'a> {
    pub checked: &'a [Checked],
    /// How long each check took, in the order of `checked`.
    pub took: &'a [Duration],
    /// The chapter the run held its server to; `None` for a run of every chapter.
    pub chapter: Option<&'static Chapter>,
    /// Whose server it was: a reader's command or address, or our chapter's name.
    pub server: &'a str,
    /// How long the whole run took.
    pub elapsed: Duration,
    pub exit_status: i32,
}

/// `--format json`: one document, an object with `checks` (one object per check, one a
/// line) and `summary`.
pub fn json(run: &Run) -> String {
    // Writing into a String cannot fail, so the results of write! are ignored.
    let mut out = String::from("{\"checks\": [\n");
    for (index, ((chapter, probe, verdict), took)) in run.checked.iter().zip(run.took).enumerate() {
        let comma = if index + 1 < run.checked.len() { "," } else { "" };
        let _ = writeln!(
            out,
            "  {{\"chapter\": {}, \"name\": {}, \"row\": {}, \"row_name\": {}, \"verdict\": {}, \
             \"seconds\": {}, \"message\": {}}}{comma}",
            json_string(chapter.name),
            json_string(probe.name),
            json_string(manifest::row(probe.capability).description),
            json_string(&row_name(probe.capability)),
            json_string(verdict_word(verdict)),
            seconds(*took),
            json_string(&message(verdict)),
        );
    }
    out.push_str("],\n\"summary\": {");
    let _ = write!(out, "\"checks\": {}", run.checked.len());
    for word in VERDICTS {
        let count = run.checked.iter().filter(|(.., v)| verdict_word(v) == word).count();
        let _ = write!(out, ", {}: {count}", json_string(word));
    }
    let failed = run.checked.iter().filter(|(.., v)| matches!(v, Verdict::Fail(..))).count();
    let _ = write!(out, ", \"fail\": {failed}, \"skipped_why\": [");
    for (index, (why, count)) in report::skip_reasons(run.checked).into_iter().enumerate() {
        let comma = if index > 0 { ", " } else { "" };
        let _ = write!(out, "{comma}{{\"why\": {}, \"checks\": {count}}}", json_string(why));
    }
    let (number, name) = match run.chapter {
        Some(chapter) => (chapter.number.to_string(), json_string(chapter.name)),
        None => ("null".to_string(), "null".to_string()),
    };
    let _ = writeln!(
        out,
        "], \"chapter\": {number}, \"chapter_name\": {name}, \"server\": {}, \"seconds\": {}, \
         \"exit_status\": {}, \"line\": {}}}}}",
        json_string(run.server),
        seconds(run.elapsed),
        run.exit_status,
        json_string(&report::summary_line(run.checked)),
    );
    out
}

/// `--format junit`: a `<testsuite>` per row of the capability table (in the table's
/// order, and per chapter in a run of several), a `<testcase>` per check, with a
/// `<failure>` for a fail and a `<skipped>` for a skip, each with its message. An expected
/// limitation, or a reader's server ahead of its chapter, passes, and says so in its
/// `<system-out>`. (The exit status is the runner's own; the XML has no place for it.)
pub fn junit(run: &Run) -> String {
    let all: Vec<(&Checked, Duration)> = run.checked.iter().zip(run.took.iter().copied()).collect();
    let mut chapters: Vec<&Chapter> = run.checked.iter().map(|(chapter, ..)| *chapter).collect();
    chapters.dedup_by_key(|chapter| chapter.number);
    let several_chapters = chapters.len() > 1;

    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let held_to = run.chapter.map(|chapter| format!(" held to {}", chapter.name));
    let _ = writeln!(
        out,
        "<testsuites name={} {}>",
        xml_attribute(&format!("suite: {}{}", run.server, held_to.unwrap_or_default())),
        tally(&all, run.elapsed),
    );
    for chapter in chapters {
        for row in MANIFEST {
            let checks: Vec<(&Checked, Duration)> = all
                .iter()
                .filter(|((of, probe, _), _)| {
                    of.number == chapter.number && probe.capability == row.capability
                })
                .copied()
                .collect();
            // A row none of whose checks ran (--only, --row) is left out.
            if !checks.is_empty() {
                testsuite(&mut out, chapter, row, &checks, several_chapters);
            }
        }
    }
    out.push_str("</testsuites>\n");
    out
}

/// One row's `<testsuite>`: named by the row's words (and the chapter's name, in a run of
/// several), with the row's short name, the chapter and what the table expects of it as
/// properties.
fn testsuite(
    out: &mut String, chapter: &Chapter, row: &Row, checks: &[(&Checked, Duration)],
    several_chapters: bool,
) {
    let short = row_name(row.capability);
    let (name, classname) = match several_chapters {
        true => {
            (format!("{}: {}", chapter.name, row.description), format!("{}.{short}", chapter.name))
        }
        false => (row.description.to_string(), short.clone()),
    };
    let expected = match manifest::expectation(row.capability, chapter) {
        Expect::Yes => "has it",
        Expect::No(_) => "lacks it",
    };
    // The checks ran at the same time, so a row's time is theirs added up.
    let time = checks.iter().map(|(_, took)| *took).sum();
    let _ = writeln!(out, "  <testsuite name={} {}>", xml_attribute(&name), tally(checks, time));
    let _ = writeln!(out, "    <properties>");
    for (property, value) in
        [("row", short.as_str()), ("chapter", chapter.name), ("expected", expected)]
    {
        let _ =
            writeln!(out, "      <property name=\"{property}\" value={}/>", xml_attribute(value));
    }
    let _ = writeln!(out, "    </properties>");
    for ((_, probe, verdict), took) in checks {
        let case = format!(
            "<testcase name={} classname={} time=\"{}\"",
            xml_attribute(probe.name),
            xml_attribute(&classname),
            seconds(*took)
        );
        let said = message(verdict);
        let word = verdict_word(verdict);
        let _ = match verdict {
            Verdict::Pass => writeln!(out, "    {case}/>"),
            // The message attribute is its first line: a test reporter shows it as a title.
            Verdict::Fail(..) => writeln!(
                out,
                "    {case}>\n      <failure message={} type=\"{word}\">{}</failure>\n    \
                 </testcase>",
                xml_attribute(said.lines().next().unwrap_or_default()),
                xml_text(&said)
            ),
            Verdict::Skipped(_) => writeln!(
                out,
                "    {case}>\n      <skipped message={}/>\n    </testcase>",
                xml_attribute(&said)
            ),
            Verdict::Ahead { .. } | Verdict::ExpectedLimitation { .. } => writeln!(
                out,
                "    {case}>\n      <system-out>{word}: {}</system-out>\n    </testcase>",
                xml_text(&said)
            ),
        };
    }
    let _ = writeln!(out, "  </testsuite>");
}

/// A `<testsuites>`' or `<testsuite>`'s counts, and its `time`.
fn tally(checks: &[(&Checked, Duration)], time: Duration) -> String {
    let failures = checks.iter().filter(|((.., v), _)| matches!(v, Verdict::Fail(..))).count();
    let skipped = checks.iter().filter(|((.., v), _)| matches!(v, Verdict::Skipped(_))).count();
    format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{}\"",
        checks.len(),
        seconds(time)
    )
}

/// Seconds, to the millisecond: `0.021`.
fn seconds(took: Duration) -> String {
    format!("{:.3}", took.as_secs_f64())
}

/// `text` as a JSON string, in quotes: a quote and a backslash escaped, and every control
/// character (which JSON forbids raw) as `\n`, `\r`, `\t` or `\u00XX`.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` as XML character data: `&`, `<` and `>` escaped. A character XML 1.0 cannot
/// hold at all, even escaped (a control character but tab, newline and carriage return; a
/// server's stderr may end with one), is written out as Rust would, `\u{1b}`.
pub fn xml_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if u32::from(c) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as an XML attribute's value, in quotes: as [`xml_text`], and quotes escaped,
/// and tab, newline and carriage return as character references (a parser would read
/// them raw as spaces).
pub fn xml_attribute(text: &str) -> String {
    let mut out = String::from("\"");
    for c in xml_text(text).chars() {
        match c {
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[path = "gradebook_tests.rs"]
mod tests;
