//! What fails as handed out: every check that fails on a lab as made, with its row and why.
//!
//! A lab as made is chapter N-1's program, so graded at chapter N it fails. Most of the
//! failures are the assignment: the rows chapter N adds, which chapter N-1 "lacks". A few
//! are checks of a row chapter N-1 already has, which chapter N asks more of, and which
//! the report calls "broken": lab 3's `closed_stderr` belongs to the routes row, and fails
//! because from chapter 3 on it ends with SIGTERM and wants exit status 0 (the shutdown
//! lesson). Every student asks about those, so the README answers first.
//!
//! `lab record N` makes lab N's handout, builds it, grades it at chapter N with `--format
//! json`, and keeps the document in `book/src/generated/labs/lab-NN.json` (and the README's
//! section, in `lab-NN.md`, for the book). The lab command then writes that section into
//! each lab N's README from the recording: generated, never written by hand. A broken check
//! of an older row is attributed to the row whose lesson it is by [`ATTRIBUTED`], a line
//! each; a test holds every recording to it, so a new such failure cannot go unexplained.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use suite::manifest::{self, Capability, Expect, MANIFEST};
use suite::selection::row_name;

/// A broken check of a row the lab does not change, and the row whose lesson it is.
pub struct Attribution {
    /// The lab: the chapter to write.
    pub lab: u8,
    pub check: &'static str,
    /// The row whose lesson makes it pass.
    pub lesson: Capability,
    /// Why chapter N-1 fails it, in one line.
    pub why: &'static str,
}

const SIGTERM_AT_THE_END: &str = "from chapter 3 on, the check stops the server with SIGTERM \
    and wants exit status 0; chapter 2 has no handler, so the signal kills it";

/// Every broken check of an older row that a recorded grading shows.
pub const ATTRIBUTED: &[Attribution] = &[
    Attribution {
        lab: 2,
        check: "descriptor_exhaustion",
        lesson: Capability::IdleClient,
        why: "from chapter 2 on, the check wants a server that holds many clients at once, \
              until its descriptors run out; chapter 1 takes one client at a time, and never \
              comes near its limit",
    },
    Attribution {
        lab: 2,
        check: "slowloris",
        lesson: Capability::IdleClient,
        why: "the row is chapter 4's, but from chapter 2 on the check wants the attack to \
              fill the server's descriptors, as a server that holds many clients at once \
              lets it; chapter 1 holds one",
    },
    Attribution {
        lab: 3,
        check: "fifo_under_root",
        lesson: Capability::GracefulShutdown,
        why: SIGTERM_AT_THE_END,
    },
    Attribution {
        lab: 3,
        check: "closed_stderr",
        lesson: Capability::GracefulShutdown,
        why: SIGTERM_AT_THE_END,
    },
    Attribution {
        lab: 3,
        check: "unread_stderr",
        lesson: Capability::GracefulShutdown,
        why: SIGTERM_AT_THE_END,
    },
    Attribution {
        lab: 3,
        check: "upstream_relay",
        lesson: Capability::KeepAlive,
        why: "from chapter 3 on, it pipelines GET /hello behind an upstream request on one \
              connection; chapter 2 answers one request a connection and closes",
    },
    Attribution {
        lab: 4,
        check: "prompt_shutdown",
        lesson: Capability::SleepAndUpstream,
        why: "from chapter 4 on, SIGTERM comes while a /sleep is in flight, and the answer \
              must say Connection: close; chapter 3 sleeps inside its loop, and learns that \
              it is stopping only on the next turn",
    },
];

/// One check of a recorded grading.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub name: String,
    pub row: String,
    pub verdict: String,
    pub message: String,
}

/// A recorded grading: its failing checks and its summary line.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub checks: Vec<Checked>,
    pub line: String,
}

/// Where lab N's recording is kept, from the workbook's root.
pub fn recording_path(workbook: &Path, lab: u8) -> PathBuf {
    workbook.join(format!("book/src/generated/labs/lab-{lab:02}.json"))
}

/// Reads the suite's `--format json` document.
pub fn parse(text: &str) -> Result<Recording, String> {
    let document = Json::parse(text)?;
    let field = |value: &Json, key: &str| -> Result<String, String> {
        match value.get(key) {
            Some(Json::Text(text)) => Ok(text.clone()),
            _ => Err(format!("the recording has no {key:?}")),
        }
    };
    let Some(Json::List(checks)) = document.get("checks") else {
        return Err("the recording has no list of checks".to_string());
    };
    let checks = checks
        .iter()
        .map(|check| {
            Ok(Checked {
                name: field(check, "name")?,
                row: field(check, "row")?,
                verdict: field(check, "verdict")?,
                message: field(check, "message")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let summary = document.get("summary").ok_or("the recording has no summary")?;
    Ok(Recording { checks, line: field(summary, "line")? })
}

/// The README's section: every check that fails as handed out, row by row.
pub fn section(lab: u8, recording: &Recording) -> String {
    let index = usize::from(lab - 1);
    let changed = |description: &str| {
        MANIFEST.iter().find(|row| row.description == description).is_some_and(|row| {
            matches!((&row.chapters[index - 1], &row.chapters[index]), (Expect::No(_), Expect::Yes))
        })
    };
    let failing: Vec<&Checked> =
        recording.checks.iter().filter(|check| check.verdict.starts_with("fail")).collect();
    let mut out = String::from("## What fails as handed out\n\n");
    let _ = write!(
        out,
        "{}",
        crate::readme::wrap(
            &format!(
                "Graded at chapter {lab} as it is handed out, the lab fails {} (`{}`, recorded \
                 by the workbook's `lab record {lab}`). Each is the assignment: a row chapter \
                 {lab} adds, or, where a check of an older row fails, the lesson it belongs to.",
                suite::report::plural(failing.len(), "check"),
                recording.line
            ),
            "",
            "",
        )
    );
    let mut by_row: BTreeMap<usize, Vec<&Checked>> = BTreeMap::new();
    for check in &failing {
        let position = MANIFEST.iter().position(|row| row.description == check.row);
        by_row.entry(position.unwrap_or(usize::MAX)).or_default().push(check);
    }
    for (position, checks) in by_row {
        let row = MANIFEST.get(position).map_or("no row", |row| row.description);
        let before = MANIFEST.get(position).map(|row| &row.chapters[index - 1]);
        let kind = match (changed(row), before) {
            (true, _) => format!("added by chapter {lab}"),
            (false, Some(Expect::Yes)) => format!("a row chapter {} has", lab - 1),
            (false, _) => format!("a row chapter {lab} lacks too"),
        };
        let _ = write!(out, "**{row}** ({kind}):\n\n");
        for check in checks {
            let verdict = check.verdict.strip_prefix("fail-").unwrap_or(&check.verdict);
            let seen = check.message.lines().next().unwrap_or("").trim();
            // "held to ch03-event-loop, it should have "ROW", but ...": the row is said above.
            let seen = match seen.starts_with("held to ") {
                true => seen.split_once(", but ").map_or(seen, |(_, rest)| rest),
                false => seen,
            };
            let attribution = ATTRIBUTED.iter().find(|a| a.lab == lab && a.check == check.name);
            let item = match (changed(row), attribution) {
                (false, Some(attribution)) => format!(
                    "`{}`, {verdict}: the lesson of *{}* ({}): {}.",
                    check.name,
                    manifest::row(attribution.lesson).description,
                    row_name(attribution.lesson),
                    attribution.why
                ),
                _ => format!("`{}`, {verdict}: {seen}", check.name),
            };
            let wrapped = crate::readme::wrap(&item, "- ", "  ");
            out.push_str(&wrapped[..wrapped.len() - 1]);
        }
        out.push('\n');
    }
    out
}

/// The section as the book includes it (`lab-NN.md`): under a heading of the page's own.
pub fn book_section(lab: u8, recording: &Recording) -> String {
    let section = section(lab, recording);
    let heading = "## What fails as handed out\n\n";
    section.strip_prefix(heading).unwrap_or(&section).to_string()
}

/// The broken checks of rows the lab does not change that [`ATTRIBUTED`] does not explain.
pub fn unexplained(lab: u8, recording: &Recording) -> Vec<String> {
    let index = usize::from(lab - 1);
    recording
        .checks
        .iter()
        .filter(|check| check.verdict.starts_with("fail"))
        .filter(|check| {
            !MANIFEST.iter().any(|row| {
                row.description == check.row
                    && matches!(
                        (&row.chapters[index - 1], &row.chapters[index]),
                        (Expect::No(_), Expect::Yes)
                    )
            })
        })
        .filter(|check| !ATTRIBUTED.iter().any(|a| a.lab == lab && a.check == check.name))
        .map(|check| format!("lab {lab}: {} ({}): {}", check.name, check.row, check.message))
        .collect()
}

/// `lab record N`: makes lab N's handout in a scratch folder, builds it, grades it at
/// chapter N, and keeps the document and the README's section in the book's generated
/// folder. Takes as long as a build and a grading (a minute or two).
/// `lab record --section N` only writes `lab-NN.md` again from the recording it has, as
/// after a change to [`ATTRIBUTED`] or to how the section is worded.
pub fn record(words: &[String]) -> Result<String, String> {
    if let [flag, number] = words {
        if flag == "--section" {
            let lab: u8 = number.parse().map_err(|_| format!("{number}: N is a chapter"))?;
            let workbook = suite::chapters::workspace_root();
            let path = recording_path(&workbook, lab);
            let text = std::fs::read_to_string(&path)
                .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            let markdown = path.with_extension("md");
            std::fs::write(&markdown, book_section(lab, &parse(&text)?))
                .map_err(|error| format!("cannot write {}: {error}", markdown.display()))?;
            return Ok(format!("lab record: wrote {} again", markdown.display()));
        }
    }
    let [number] = words else {
        return Err("usage: lab record [--section] N (the lab whose handout to grade and \
                    record; --section: only write its README section again)"
            .into());
    };
    let lab: u8 = number.parse().map_err(|_| format!("lab record {number}: N is a chapter"))?;
    let workbook = std::fs::canonicalize(suite::chapters::workspace_root())
        .map_err(|error| format!("cannot find the workbook: {error}"))?;
    let scratch = std::env::temp_dir().join(format!("lab-record-{}-{lab}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let folder = scratch.join("handout");
    let request = crate::parse_args(
        ["--handout", "--name", "handout", number, &folder.display().to_string()]
            .iter()
            .map(|word| word.to_string()),
    )
    .map_err(|refused| refused.message)?
    .ok_or("a request")?;
    let request = crate::Request { quiet: true, ..request };
    let result = (|| {
        crate::make(&request).map_err(|failure| match failure {
            crate::Failure::Refused(refused) => refused.message,
            crate::Failure::Broke(message) => message,
        })?;
        // The workbook's target/ keeps the crates' builds from one recording to the next.
        let target = workbook.join("target/lab-record");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let build = Command::new(&cargo)
            .args(["build", "--release", "--offline", "-q", "-p", "handout", "-p", "suite"])
            .current_dir(&folder)
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .map_err(|error| format!("cannot run cargo: {error}"))?;
        if !build.success() {
            return Err(format!("the handout did not build: {build}"));
        }
        let program = target.join("release/handout");
        let graded = Command::new(target.join("release/suite"))
            .arg("--command")
            .arg(&program)
            .args(["--chapter", number, "--format", "json", "--jobs", "2"])
            .current_dir(&folder)
            .output()
            .map_err(|error| format!("cannot run the grader: {error}"))?;
        let json = String::from_utf8_lossy(&graded.stdout).into_owned();
        let recording = parse(&json).map_err(|error| {
            format!("{error}; the grader said: {}", String::from_utf8_lossy(&graded.stderr))
        })?;
        let path = recording_path(&workbook, lab);
        std::fs::create_dir_all(path.parent().expect("a folder"))
            .map_err(|error| format!("cannot create {}: {error}", path.display()))?;
        std::fs::write(&path, &json)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        let markdown = path.with_extension("md");
        std::fs::write(&markdown, book_section(lab, &recording))
            .map_err(|error| format!("cannot write {}: {error}", markdown.display()))?;
        let unexplained = unexplained(lab, &recording);
        Ok(format!(
            "lab record: {} and {}: {}{}",
            path.display(),
            markdown.display(),
            recording.line,
            match unexplained.is_empty() {
                true => String::new(),
                false => format!(
                    "\nnot yet in handed_out.rs's ATTRIBUTED (add a line each):\n{}",
                    unexplained.join("\n")
                ),
            }
        ))
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// As much JSON as the suite writes: objects, lists, strings, numbers, and the words.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Object(Vec<(String, Json)>),
    List(Vec<Json>),
    Text(String),
    /// A number, `true`, `false` or `null`: read past, not kept (the README needs none).
    Other,
}

impl Json {
    fn parse(text: &str) -> Result<Json, String> {
        let chars: Vec<char> = text.chars().collect();
        let mut at = 0;
        let value = Json::value(&chars, &mut at)?;
        Json::space(&chars, &mut at);
        match at == chars.len() {
            true => Ok(value),
            false => Err(format!("the recording goes on after its document, at {at}")),
        }
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn space(chars: &[char], at: &mut usize) {
        while chars.get(*at).is_some_and(|c| c.is_whitespace()) {
            *at += 1;
        }
    }

    fn value(chars: &[char], at: &mut usize) -> Result<Json, String> {
        Json::space(chars, at);
        let expect = |at: &mut usize, c: char| -> Result<(), String> {
            Json::space(chars, at);
            match chars.get(*at) == Some(&c) {
                true => {
                    *at += 1;
                    Ok(())
                }
                false => Err(format!("expected {c:?} at {at} of the recording")),
            }
        };
        match chars.get(*at) {
            Some('{') => {
                *at += 1;
                let mut fields = Vec::new();
                Json::space(chars, at);
                if chars.get(*at) == Some(&'}') {
                    *at += 1;
                    return Ok(Json::Object(fields));
                }
                loop {
                    Json::space(chars, at);
                    let Json::Text(key) = Json::value(chars, at)? else {
                        return Err(format!("a key that is not a string, at {at}"));
                    };
                    expect(at, ':')?;
                    fields.push((key, Json::value(chars, at)?));
                    Json::space(chars, at);
                    match chars.get(*at) {
                        Some(',') => *at += 1,
                        _ => {
                            expect(at, '}')?;
                            return Ok(Json::Object(fields));
                        }
                    }
                }
            }
            Some('[') => {
                *at += 1;
                let mut items = Vec::new();
                Json::space(chars, at);
                if chars.get(*at) == Some(&']') {
                    *at += 1;
                    return Ok(Json::List(items));
                }
                loop {
                    items.push(Json::value(chars, at)?);
                    Json::space(chars, at);
                    match chars.get(*at) {
                        Some(',') => *at += 1,
                        _ => {
                            expect(at, ']')?;
                            return Ok(Json::List(items));
                        }
                    }
                }
            }
            Some('"') => {
                *at += 1;
                let mut text = String::new();
                loop {
                    match chars.get(*at) {
                        None => return Err("a string never ends in the recording".into()),
                        Some('"') => {
                            *at += 1;
                            return Ok(Json::Text(text));
                        }
                        Some('\\') => {
                            let escaped = chars.get(*at + 1).copied();
                            *at += 2;
                            text.push(match escaped {
                                Some('n') => '\n',
                                Some('t') => '\t',
                                Some('r') => '\r',
                                Some('b') => '\u{8}',
                                Some('f') => '\u{c}',
                                Some('u') => {
                                    let hex: String = chars.iter().skip(*at).take(4).collect();
                                    *at += 4;
                                    u32::from_str_radix(&hex, 16)
                                        .ok()
                                        .and_then(char::from_u32)
                                        .unwrap_or('\u{fffd}')
                                }
                                Some(c) => c,
                                None => return Err("a string never ends in the recording".into()),
                            });
                        }
                        Some(&c) => {
                            text.push(c);
                            *at += 1;
                        }
                    }
                }
            }
            Some(_) => {
                for word in ["true", "false", "null"] {
                    if chars[*at..].iter().take(word.len()).copied().eq(word.chars()) {
                        *at += word.len();
                        return Ok(Json::Other);
                    }
                }
                let start = *at;
                while chars.get(*at).is_some_and(|c| "+-.eE0123456789".contains(*c)) {
                    *at += 1;
                }
                let number: String = chars[start..*at].iter().collect();
                match number.parse::<f64>() {
                    Ok(_) => Ok(Json::Other),
                    Err(_) => Err(format!("cannot read {number:?} at {start} of the recording")),
                }
            }
            None => Err("the recording ends too soon".into()),
        }
    }
}

#[cfg(test)]
#[path = "handed_out_tests.rs"]
mod tests;
