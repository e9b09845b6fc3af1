//! `lab similarity DIR N`: how much of a student's code is chapter N's own.
//!
//! A lab starts from chapter N-1's program, and the workbook holds chapter N's: a student
//! who copies it passes. This tells the teacher, the way MOSS does for a course's
//! submissions: both programs are read as streams of tokens with the names and literals
//! made alike (every identifier that is not a keyword reads `v`, every string `"s"`, every
//! number `0`, comments and whitespace gone), so that renaming, reformatting and
//! recommenting change nothing; each run of [`RUN`] tokens in a row is a fingerprint.
//!
//! Chapter N's own code is the fingerprints chapter N's `src/` has and chapter N-1's lacks:
//! the lesson's new code. The student's *new* tokens are those in no run of chapter N-1's
//! (what they wrote or changed); the score of a file is the share of its new tokens that
//! lie in a run of chapter N's own. A copy of chapter N scores near 100%; a student's own
//! work, written without it, shares a run of 24 tokens with it here and there, and little
//! more. (MOSS also *winnows*, keeping only some fingerprints to save space; our programs
//! are small enough to keep them all, which only makes the match more exact.)

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use suite::chapters::{self, CHAPTERS};

/// How many tokens make one fingerprint. Fewer, and code that any two servers share by
/// chance (`match v { v => v ( v ) , }`) would match; more, and a copy with a line changed
/// here and there would hide between its changes.
pub const RUN: usize = 24;

const USAGE: &str = "\
usage: cargo run -p book-tools --bin lab -- similarity DIR N

Says how much of the Rust code in DIR/src (or DIR, without a src/) is chapter N's own: of
the tokens not in chapter N-1's program (what the student wrote or changed), the share
that lies in a run of 24 tokens that chapter N has and chapter N-1 lacks, names, literals,
comments and layout made alike. A copy of the workbook's chapter N scores near 100%.";

/// The Rust keywords, which stay as they are; every other name reads `v`.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while",
];

/// The tokens of Rust source, names and literals made alike, comments and layout dropped.
pub fn tokens(source: &str) -> Vec<String> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    let next_is = |at: usize, c: char| chars.get(at) == Some(&c);
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() {
            at += 1;
        } else if c == '/' && next_is(at + 1, '/') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && next_is(at + 1, '*') {
            let mut depth = 0;
            while at < chars.len() {
                if chars[at] == '/' && next_is(at + 1, '*') {
                    depth += 1;
                    at += 2;
                } else if chars[at] == '*' && next_is(at + 1, '/') {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    at += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'r') && raw_or_byte_string(&chars, at)) {
            at = skip_string(&chars, at);
            out.push("\"s\"".to_string());
        } else if c == '\'' {
            // A character literal ('a', '\n', '\'') or a lifetime ('a).
            let closes = match chars.get(at + 1) {
                Some('\\') => chars[at + 2..].iter().position(|&c| c == '\'').map(|p| at + 3 + p),
                Some(_) if next_is(at + 2, '\'') => Some(at + 3),
                _ => None,
            };
            match closes {
                Some(end) => {
                    at = end;
                    out.push("'c'".to_string());
                }
                None => {
                    at += 1;
                    while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
                        at += 1;
                    }
                    out.push("'v".to_string());
                }
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = at;
            while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect();
            out.push(match KEYWORDS.contains(&word.as_str()) {
                true => word,
                false => "v".to_string(),
            });
        } else if c.is_ascii_digit() {
            // 12, 0x1f, 1_000u64, 2.5; but the `..` of `0..10` is not part of the number.
            while at < chars.len()
                && (chars[at].is_alphanumeric()
                    || chars[at] == '_'
                    || (chars[at] == '.' && chars.get(at + 1).is_some_and(char::is_ascii_digit)))
            {
                at += 1;
            }
            out.push("0".to_string());
        } else {
            out.push(c.to_string());
            at += 1;
        }
    }
    out
}

/// Does a string literal start at `at`: `b"`, `r"`, `r#"`, `br"`, `br#"`? (Only ever
/// asked at the start of a token: a name such as `bar` is read whole, by the name branch.)
fn raw_or_byte_string(chars: &[char], at: usize) -> bool {
    let mut at = at;
    if chars.get(at) == Some(&'b') {
        at += 1;
    }
    if chars.get(at) == Some(&'r') {
        at += 1;
        while chars.get(at) == Some(&'#') {
            at += 1;
        }
    }
    chars.get(at) == Some(&'"')
}

/// Where the string literal starting at `at` ends (just past its closing quote).
fn skip_string(chars: &[char], mut at: usize) -> usize {
    let mut raw = false;
    if chars[at] == 'b' {
        at += 1;
    }
    let mut hashes = 0;
    if chars.get(at) == Some(&'r') {
        raw = true;
        at += 1;
        while chars.get(at) == Some(&'#') {
            hashes += 1;
            at += 1;
        }
    }
    at += 1; // the opening quote
    while at < chars.len() {
        match chars[at] {
            '\\' if !raw => at += 2,
            '"' if (0..hashes).all(|h| chars.get(at + 1 + h) == Some(&'#')) => {
                return at + 1 + hashes;
            }
            _ => at += 1,
        }
    }
    at
}

/// The fingerprint of each run of [`RUN`] tokens, by where the run starts.
pub fn fingerprints(tokens: &[String]) -> Vec<u64> {
    tokens
        .windows(RUN)
        .map(|run| {
            let mut hasher = DefaultHasher::new();
            run.hash(&mut hasher);
            hasher.finish()
        })
        .collect()
}

/// Every fingerprint of the Rust files under `folder`.
fn fingerprints_of(folder: &Path) -> Result<HashSet<u64>, String> {
    let mut all = HashSet::new();
    for file in rust_files(folder)? {
        let text = fs::read_to_string(&file)
            .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
        all.extend(fingerprints(&tokens(&text)));
    }
    Ok(all)
}

/// The `.rs` files under `folder`, in order, `target/` aside.
fn rust_files(folder: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(next) = pending.pop() {
        let entries = fs::read_dir(&next)
            .map_err(|error| format!("cannot list {}: {error}", next.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != "target" {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// One file's score.
#[derive(Debug, PartialEq, Eq)]
pub struct Score {
    /// All its tokens.
    pub tokens: usize,
    /// Those in no run of chapter N-1's: what the student wrote or changed.
    pub new: usize,
    /// Those of the new ones that lie in a run of chapter N's own.
    pub own: usize,
}

impl Score {
    /// The share of the new tokens that are chapter N's own, in percent.
    pub fn percent(&self) -> usize {
        match self.new {
            0 => 0,
            new => (self.own * 100 + new / 2) / new,
        }
    }
}

/// Scores a student's file against the fingerprints of chapter N-1 and chapter N's own.
pub fn score(source: &str, before: &HashSet<u64>, own: &HashSet<u64>) -> Score {
    let tokens = tokens(source);
    let mut from_before = vec![false; tokens.len()];
    let mut of_own = vec![false; tokens.len()];
    for (start, print) in fingerprints(&tokens).iter().enumerate() {
        for (marks, set) in [(&mut from_before, before), (&mut of_own, own)] {
            if set.contains(print) {
                marks[start..start + RUN].iter_mut().for_each(|mark| *mark = true);
            }
        }
    }
    let new = from_before.iter().filter(|&&before| !before).count();
    let own = (0..tokens.len()).filter(|&i| !from_before[i] && of_own[i]).count();
    Score { tokens: tokens.len(), new, own }
}

/// Each file of `folder` with its score, and the whole.
pub fn report(folder: &Path, number: u8) -> Result<(Vec<(String, Score)>, Score), String> {
    let root = chapters::workspace_root();
    let chapter = |number: u8| -> Result<PathBuf, String> {
        let chapter = chapters::chapter(number).ok_or(format!("there is no chapter {number}"))?;
        match chapter.is_present() {
            true => Ok(root.join("chapters").join(chapter.directory).join("src")),
            false => Err(format!("chapter {number} is not in this workbook")),
        }
    };
    let before = fingerprints_of(&chapter(number - 1)?)?;
    let own: HashSet<u64> =
        fingerprints_of(&chapter(number)?)?.difference(&before).copied().collect();
    let source = match folder.join("src").is_dir() {
        true => folder.join("src"),
        false => folder.to_path_buf(),
    };
    let mut files = Vec::new();
    let mut whole = Score { tokens: 0, new: 0, own: 0 };
    for file in rust_files(&source)? {
        // The API tests a lab is handed with (`*_api_tests.rs`) are chapter N's, on purpose.
        if file.to_string_lossy().ends_with(crate::api_tests::ENDING) {
            continue;
        }
        let text = fs::read_to_string(&file)
            .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
        let score = score(&text, &before, &own);
        whole.tokens += score.tokens;
        whole.new += score.new;
        whole.own += score.own;
        let name = file.strip_prefix(folder).unwrap_or(&file).display().to_string();
        files.push((name, score));
    }
    Ok((files, whole))
}

/// `lab similarity DIR N`.
pub fn main(words: &[String]) -> ExitCode {
    if words.iter().any(|word| word == "--help" || word == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let last = CHAPTERS.last().map_or(0, |chapter| chapter.number);
    let request = match words {
        [folder, number] => number
            .parse::<u8>()
            .ok()
            .filter(|number| (2..=last).contains(number))
            .map(|number| (PathBuf::from(folder), number))
            .ok_or(format!("no chapter {number} to compare with: N is from 2 to {last}")),
        _ => {
            Err(format!("expected a folder and a chapter, DIR N; got {} argument(s)", words.len()))
        }
    };
    let (folder, number) = match request {
        Ok(request) => request,
        Err(message) => {
            eprintln!("lab similarity: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let (files, whole) = match report(&folder, number) {
        Ok(report) => report,
        Err(message) => {
            eprintln!("lab similarity: {message}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{}: how much is chapter {number}'s own code (runs of {RUN} tokens chapter {number} has \
         and chapter {} lacks; names, literals and layout made alike)",
        folder.display(),
        number - 1
    );
    let width = files.iter().map(|(name, _)| name.len()).max().unwrap_or(0).max(7);
    println!("{:width$}  {:>7}  {:>7}  {:>7}", "file", "tokens", "new", "own");
    for (name, score) in files.iter().chain([(String::from("overall"), whole)].iter()) {
        println!(
            "{name:width$}  {:>7}  {:>7}  {:>7}  {:>3}%",
            score.tokens,
            score.new,
            score.own,
            score.percent()
        );
    }
    println!(
        "new: the tokens in no run of chapter {}'s; own: those of them in a run of chapter \
         {number}'s own. A copy scores near 100%.",
        number - 1
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
#[path = "similarity_tests.rs"]
mod tests;
