//! What a chapter's page says about its step's files, against the step's generated diff
//! table (`generated/diff-MM-NN.md`, which `book.rs` keeps fresh): "`a.rs` and `b.rs` are
//! new", "six files are new", "five are gone", "`timers.rs` is chapter 7's, unchanged",
//! "the other files are chapter 8's", five "Only in" lines, "the chapter has four files".
//!
//! A sentence is read clause by clause (a clause ends at `.` or `;`). In a clause that
//! says files are new (or gone), every file it names must be new (gone) in the table, and a
//! count it gives must be the table's. A file said to be unchanged, or a chapter's own,
//! must not be in the table. "The other files are chapter N's" (or "the rest") is a claim
//! that the paragraph has named every file the step adds or changes. A count a clause
//! states and this check verifies is not the counts check's to report.

use std::collections::BTreeSet;

use crate::pages::{line_of, read, repository, spans};

/// What a step's table says about each file: new, gone, or changed.
#[derive(Debug, Default)]
pub struct Step {
    pub new: BTreeSet<String>,
    pub gone: BTreeSet<String>,
    pub changed: BTreeSet<String>,
}

impl Step {
    /// Reads `generated/diff-MM-NN.md`: rows `` | `src/x.rs` | 12 | 3 | new | ``.
    pub fn read(table: &str) -> Step {
        let mut step = Step::default();
        for line in table.lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let Some(file) =
                cells.get(1).and_then(|cell| cell.strip_prefix('`')?.strip_suffix('`'))
            else {
                continue;
            };
            let file = file.trim_start_matches("src/").to_string();
            match cells.get(4).copied().unwrap_or_default() {
                "new" => step.new.insert(file),
                "gone" => step.gone.insert(file),
                _ => step.changed.insert(file),
            };
        }
        step
    }

    fn has(set: &BTreeSet<String>, named: &str) -> bool {
        let named = named.trim_start_matches("src/");
        set.iter().any(|file| file == named || file.ends_with(&format!("/{named}")))
    }
}

/// Number words up to twenty, as a clause would say a count.
fn count_of(word: &str) -> Option<usize> {
    const WORDS: [&str; 21] = [
        "no",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let lower = word.to_lowercase();
    WORDS.iter().position(|w| *w == lower).or_else(|| word.parse().ok())
}

/// The count a clause gives right before `marker` ("Six files are new": six before "files
/// are new"; "Five are gone"; "three new files"), if any.
fn count_before(clause: &str, markers: &[&str]) -> Option<usize> {
    let lower = clause.to_lowercase();
    for marker in markers {
        if let Some(at) = lower.find(marker) {
            let word = clause[..at].split_whitespace().next_back()?;
            return count_of(word.trim_matches(|c: char| !c.is_alphanumeric()));
        }
    }
    None
}

/// The files a piece of prose names in backticks.
fn files_in(text: &str) -> Vec<String> {
    spans(text)
        .into_iter()
        .map(|span| span.text)
        .filter(|text| {
            (text.ends_with(".rs") || text == "Cargo.toml")
                && !text.contains(' ')
                && !text.contains("::")
        })
        .collect()
}

/// The clauses of a paragraph: byte ranges, split after `. ` and `; `.
fn clauses(paragraph: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut start = 0;
    let bytes = paragraph.as_bytes();
    let mut in_code = false;
    for (index, &byte) in bytes.iter().enumerate() {
        if byte == b'`' {
            in_code = !in_code;
        }
        let ends = !in_code
            && (byte == b'.' || byte == b';')
            && bytes.get(index + 1).is_none_or(|next| next.is_ascii_whitespace());
        if ends {
            found.push((start, index + 1));
            start = index + 1;
        }
    }
    if start < paragraph.len() {
        found.push((start, paragraph.len()));
    }
    found
}

/// The chapter's own source files (not its tests), as the table names them.
fn chapter_files(chapter: u32) -> BTreeSet<String> {
    let Some((_, folder)) =
        crate::pages::chapter_folders().into_iter().find(|(n, _)| *n == chapter)
    else {
        return BTreeSet::new();
    };
    let src = repository().join(folder).join("src");
    let mut found = BTreeSet::new();
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    folders.push(path);
                }
            } else if name.ends_with(".rs") && !name.ends_with("_tests.rs") && name != "tests.rs" {
                found.insert(
                    path.strip_prefix(&src).unwrap_or(&path).to_string_lossy().into_owned(),
                );
            }
        }
    }
    found
}

/// What a chapter page's prose gets wrong about its step's files, and the ranges of the
/// prose whose counts were verified.
pub fn check_page(chapter: u32, prose: &str) -> (Vec<String>, Vec<(usize, usize)>) {
    let mut problems = Vec::new();
    let mut verified = Vec::new();
    if chapter < 2 {
        return (problems, verified);
    }
    let table =
        repository().join(format!("book/src/generated/diff-{:02}-{chapter:02}.md", chapter - 1));
    if !table.is_file() {
        return (problems, verified);
    }
    let step = Step::read(&read(&table));
    let mut offset = 0;
    for paragraph in prose.split("\n\n") {
        let base = offset;
        offset += paragraph.len() + 2;
        let mut named_so_far: Vec<String> = Vec::new();
        for (start, end) in clauses(paragraph) {
            let clause = &paragraph[start..end];
            let lower = clause.to_lowercase().replace('\n', " ");
            let at = line_of(prose, base + start + clause.len() - clause.trim_start().len());
            let files = files_in(clause);
            let mut said = |problem: String| problems.push(format!("{at}: {problem}"));
            let mut counted = false;
            for (kind, set, markers, counted_markers) in [
                (
                    "new",
                    &step.new,
                    ["files are new", "are new", "is new", "new files", "new file"],
                    ["files are new", "are new", "new files"],
                ),
                (
                    "gone",
                    &step.gone,
                    ["files are gone", "are gone", "is gone", "files go", "file goes"],
                    ["files are gone", "are gone", "files go"],
                ),
            ] {
                let Some(marker) =
                    markers.iter().find_map(|marker| lower.find(marker).map(|at| (at, *marker)))
                else {
                    continue;
                };
                // About files: it names one, or says "files".
                if files.is_empty() && !lower.contains("file") {
                    continue;
                }
                // The files it is said of: those right before the marker (back to the last
                // ", and "), or, after "...: ", the list that follows it.
                let (at, marker_text) = marker;
                let before = &clause[..at];
                let from = before.rfind(", and ").map_or(0, |cut| cut + 6);
                let mut subjects = files_in(&before[from..]);
                let after = &clause[at + marker_text.len()..];
                if after.trim_start().starts_with(':') || lower[at..].starts_with("new file") {
                    subjects.extend(files_in(after));
                }
                for file in &subjects {
                    if !Step::has(set, file) {
                        said(format!(
                            "`{file}` is said to be {kind}, but the step's table does not say so"
                        ));
                    }
                }
                if let Some(count) = count_before(clause, &counted_markers) {
                    counted = true;
                    if count != set.len() {
                        let listed: Vec<&String> = set.iter().collect();
                        said(format!(
                            "the clause counts {count} files {kind}; the step's table has {}: {listed:?}",
                            set.len()
                        ));
                    }
                }
            }
            if let Some(count) = count_before(clause, &["\"only in\" lines", "“only in” lines"])
            {
                counted = true;
                if count != step.new.len() {
                    said(format!(
                        "{count} \"Only in\" lines, but the step has {} new files",
                        step.new.len()
                    ));
                }
            }
            if let Some(count) = count_before(clause, &["files of its own", "files:"])
                .filter(|_| lower.contains("the chapter has"))
            {
                counted = true;
                let own = chapter_files(chapter);
                if count != own.len() {
                    said(format!(
                        "the chapter has {} source files, not {count}: {own:?}",
                        own.len()
                    ));
                }
            }
            // "`timers.rs` is chapter 7's, unchanged", "`a.rs` and `b.rs` are chapter 7's."
            let own = [
                format!(" is chapter {}'s", chapter - 1),
                format!(" are chapter {}'s", chapter - 1),
            ];
            for marker in &own {
                let Some(at) = clause.find(marker.as_str()) else { continue };
                let rest = clause[at + marker.len()..].trim_start();
                let whole = rest.is_empty()
                    || rest.starts_with(['.', ';'])
                    || rest.starts_with(", unchanged");
                if !whole || !clause[..at].trim_end().ends_with('`') {
                    continue;
                }
                let from = clause[..at].rfind(", and ").map_or(0, |cut| cut + 6);
                for file in files_in(&clause[from..at]) {
                    if Step::has(&step.changed, &file) || Step::has(&step.new, &file) {
                        said(format!(
                            "`{file}` is said to be chapter {}'s, but the step changes it",
                            chapter - 1
                        ));
                    }
                }
            }
            if lower.contains("unchanged")
                && !own.iter().any(|marker| clause.contains(marker.as_str()))
            {
                let at = lower.find("unchanged").unwrap_or_default();
                let from = clause[..at].rfind(", and ").map_or(0, |cut| cut + 6);
                for file in files_in(&clause[from..at]) {
                    if Step::has(&step.changed, &file) || Step::has(&step.new, &file) {
                        said(format!("`{file}` is said to be unchanged, but the step changes it"));
                    }
                }
            }
            let rest =
                ["the other files are", "the rest are", "every other file is", "the others are"]
                    .iter()
                    .any(|marker| lower.contains(marker))
                    && lower.contains(&format!("chapter {}'s", chapter - 1));
            if rest {
                for file in step.changed.iter().chain(&step.new) {
                    if file != "Cargo.toml"
                        && !named_so_far
                            .iter()
                            .any(|named| Step::has(&BTreeSet::from([file.clone()]), named))
                    {
                        said(format!(
                            "\"the other files are chapter {}'s\", but the step also changes `{file}`, \
                             which the paragraph does not name",
                            chapter - 1
                        ));
                    }
                }
            }
            if counted {
                verified.push((base + start, base + end));
            }
            named_so_far.extend(files);
        }
    }
    (problems, verified)
}
