//! The command line a server is held to: every flag the suite passes, and from which
//! chapter on a server must accept it.
//!
//! The suite starts every server, ours or a reader's (`--command`), with the contract's
//! flags appended: `--host 127.0.0.1 --port 0` always, and more where a check needs them.
//! A flag a chapter does not have yet (a timeout, `--threads`) is tried first; a server
//! that refuses it, exit 2 naming the flag, is started again without it, and the check
//! then sees the chapter lack what the flag would have tuned. So refusing a flag you do
//! not know is right (`command_line` checks it: exit 2 and the usage on stderr), and a
//! flag is only required from the chapter whose lesson it belongs to.
//!
//! [`FLAGS`] is the list; [`flags_table`] prints it for the book
//! (`cargo run -p suite -- --flags-table`), and a test checks that no probe passes a flag
//! the list lacks.

use std::fmt::Write;

use crate::chapters::CHAPTERS;
use crate::manifest::{self, Capability, Expect};

/// One flag the suite may pass.
pub struct Flag {
    /// `--root`
    pub name: &'static str,
    /// What follows it, as a usage line shows it (`DIR`), or "" for a flag on its own.
    pub value: &'static str,
    /// When the suite passes it.
    pub passed: &'static str,
    pub needed: Needed,
}

/// Which chapters must accept a flag.
pub enum Needed {
    /// Every chapter: the contract's command line.
    Always,
    /// The chapters that have this capability: before, a server may refuse the flag.
    With(Capability),
    /// None: the suite uses it when a server has it, and does without otherwise.
    Never,
}

// ANCHOR: flags
/// Every flag the suite passes to a server, besides `--help` and the bad command lines
/// that `command_line` tries (`--bogus`, `--port seventy`, `--port` with no value).
#[rustfmt::skip] // a table: one flag per line
pub const FLAGS: &[Flag] = &[
    flag("--host", "127.0.0.1", "every start", Needed::Always),
    flag("--port", "0", "every start (0: any free port)", Needed::Always),
    flag("--root", "DIR", "checks that serve files", Needed::Always),
    flag("--upstream", "HOST:PORT", "checks of `/upstream/`", Needed::Always),
    flag("--fs-delay-ms", "N", "`slow_disk`", Needed::Always),
    flag("--trace", "", "`closed_stderr`", Needed::Always),
    flag("--header-timeout", "SECONDS", "timeouts, slowloris, 10,000 idle, `idle_after_a_burst`", Needed::With(Capability::Timeouts)),
    flag("--keep-alive-timeout", "SECONDS", "timeouts, 10,000 idle, `idle_after_a_burst`", Needed::With(Capability::Timeouts)),
    flag("--send-timeout", "SECONDS", "`send_timeout`", Needed::With(Capability::Timeouts)),
    flag("--threads", "N", "`spread_over_loops` and `graceful_shutdown`; 1 in the flood, burst and departure checks", Needed::With(Capability::MoreThanOneCore)),
    flag("--backend", "poll", "`ten_thousand_idle_slowdown`", Needed::Never),
    flag("--upstream-limit", "1", "`departing_clients`, where `--help` lists it", Needed::Never),
];
// ANCHOR_END: flags

const fn flag(
    name: &'static str, value: &'static str, passed: &'static str, needed: Needed,
) -> Flag {
    Flag { name, value, passed, needed }
}

impl Flag {
    /// "from chapter 4", "every chapter", "none".
    pub fn needed_from(&self) -> String {
        match &self.needed {
            Needed::Always => "every chapter".to_string(),
            Needed::With(capability) => {
                let first = CHAPTERS
                    .iter()
                    .find(|chapter| manifest::expectation(*capability, chapter) == Expect::Yes);
                match first {
                    Some(chapter) => format!("chapter {} on", chapter.number),
                    None => "none yet".to_string(),
                }
            }
            Needed::Never => "none (optional)".to_string(),
        }
    }
}

/// The flags as a Markdown table, for the book's page on a reader's own server.
pub fn flags_table() -> String {
    let mut out = String::new();
    // Writing into a String cannot fail, so the results are ignored.
    let _ = writeln!(
        out,
        "<!-- Generated from tests/src/flags.rs by `cargo run -p suite -- --flags-table`.\n     \
         Do not edit: a test fails when this file and the code disagree. -->\n"
    );
    out.push_str("| flag | the suite passes it for | must be accepted by |\n|---|---|---|\n");
    for flag in FLAGS {
        let shown = match flag.value {
            "" => flag.name.to_string(),
            value => format!("{} {value}", flag.name),
        };
        let _ = writeln!(out, "| `{shown}` | {} | {} |", flag.passed, flag.needed_from());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chapters::workspace_root;

    /// Every flag a probe passes is in [`FLAGS`], so the book's list is complete: the
    /// probes' sources are searched for string literals that are a flag (`"--root"`).
    #[test]
    fn every_flag_the_probes_pass_is_listed() {
        // What `command_line` passes on purpose: the usage, and a flag to refuse.
        let deliberate = ["--help", "--bogus"];
        let mut unlisted = Vec::new();
        for (path, source) in crate::probes::sources() {
            for (at, _) in source.match_indices("\"--") {
                let rest = &source[at + 1..];
                let end = rest[2..]
                    .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
                    .map_or(rest.len(), |end| end + 2);
                let literal = &rest[..end];
                let whole = rest[end..].starts_with('"') && end > 2;
                let listed = FLAGS.iter().any(|flag| flag.name == literal);
                if whole && !listed && !deliberate.contains(&literal) {
                    unlisted.push(format!("{literal} ({})", path.display()));
                }
            }
        }
        assert!(unlisted.is_empty(), "flags the probes pass, missing from FLAGS: {unlisted:?}");
    }

    /// The book includes the table; this keeps the two the same.
    #[test]
    fn book_flags_table_is_current() {
        let path = workspace_root().join("book/src/generated/flags.md");
        let in_book = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            in_book == flags_table(),
            "{} is out of date with tests/src/flags.rs; regenerate it with\n    \
             cargo run -p suite -- --flags-table > book/src/generated/flags.md",
            path.display()
        );
    }

    #[test]
    fn timeouts_are_needed_from_chapter_4() {
        let header = FLAGS.iter().find(|flag| flag.name == "--header-timeout").expect("listed");
        assert_eq!(header.needed_from(), "chapter 4 on");
    }
}
