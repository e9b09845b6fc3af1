//! Counts the prose types: "six files are new", "four of the 58 checks", "three chapters
//! add nothing the suite can see". Each was true once; the code moved on and the number
//! stayed. A count of the things that change (checks, files, lines, fields, turns...) is
//! generated (an include of a generated piece, such as `generated/facts.md:checks`), or
//! checked where it is made (a diff's table, a session's `# range:`), or not typed at all.
//! The few that are facts by construction are listed in `book/counts-allowed.txt`, each
//! under a reason.

use std::collections::{BTreeMap, BTreeSet};

use crate::pages::{line_of, slice};

/// Number words, as the prose spells them. "One" and "both" are left out: "one line per
/// step", "one thread", "both chapters" are how the book explains, not counts that drift.
const NUMBER_WORDS: &[&str] = &[
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
    "thirty",
    "forty",
    "fifty",
    "dozen",
];

/// The things whose number changes with the code: a count of these is a claim about it.
const NOUNS: &[&str] = &[
    "check",
    "checks",
    "probe",
    "probes",
    "test",
    "tests",
    "file",
    "files",
    "chapter",
    "chapters",
    "line",
    "lines",
    "turn",
    "turns",
    "field",
    "fields",
    "function",
    "functions",
    "method",
    "methods",
    "call",
    "calls",
    "module",
    "modules",
    "row",
    "rows",
    "variant",
    "variants",
    "session",
    "sessions",
    "flag",
    "flags",
    "entry",
    "entries",
    "depth",
    "depths",
    "descriptor",
    "descriptors",
    "fds",
];

/// Words after which a number is a label, not a count: "chapter 4 calls", "step 3 of the
/// turn", "row 68", "fd 6".
const LABELS: &[&str] = &[
    "chapter",
    "chapters",
    "step",
    "steps",
    "row",
    "rows",
    "exercise",
    "exercises",
    "fd",
    "token",
    "tokens",
    "line",
    "lines",
    "loop",
    "thread",
    "version",
    "rule",
    "figure",
    "page",
];

/// Nouns that are adjectives before these words: "three file requests", "a 64 KiB file
/// read".
const NOT_BEFORE: &[&str] = &[
    "request",
    "requests",
    "descriptor",
    "descriptors",
    "read",
    "reads",
    "system",
    "size",
    "sizes",
    "open",
    "opens",
    "chunk",
    "chunks",
    "handle",
    "handles",
];

/// What else a diagram counts of the code it depicts.
const DIAGRAM_NOUNS: [&str; 8] =
    ["worker", "workers", "thread", "threads", "loop", "loops", "buffer", "buffers"];

/// Words that may stand between the number and its noun: "three more rows", "two new
/// files", "four of the 58 checks".
const BETWEEN: &[&str] = &[
    "more", "new", "other", "of", "the", "its", "our", "short", "small", "timeout", "such",
    "further", "extra", "whole", "same",
];

/// A count found in the prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    pub line: usize,
    /// The words, as written: `Three more rows`.
    pub phrase: String,
    /// Where it is in the prose.
    pub start: usize,
    pub end: usize,
}

fn is_number(word: &str) -> bool {
    let lower = word.to_lowercase();
    NUMBER_WORDS.contains(&lower.as_str())
        || (word.chars().all(|c| c.is_ascii_digit() || c == ',')
            && word.chars().next().is_some_and(|c| c.is_ascii_digit()))
}

/// The words of `prose` with their byte ranges: runs of letters, digits, `,` inside
/// numbers, `'` and `-` inside words. Code spans (already a name, not a count) are left out.
fn words(prose: &str) -> Vec<(usize, usize, &str)> {
    let mut found = Vec::new();
    let bytes = prose.as_bytes();
    let mut index = 0;
    let mut in_code = false;
    while index < bytes.len() {
        let c = bytes[index];
        if c == b'`' {
            in_code = !in_code;
            index += 1;
            continue;
        }
        if in_code || !(c.is_ascii_alphanumeric()) {
            index += 1;
            continue;
        }
        let start = index;
        while index < bytes.len() {
            let c = bytes[index];
            let inside = matches!(c, b',' | b'\'' | b'-' | b'.')
                && bytes.get(index + 1).is_some_and(|next| next.is_ascii_alphanumeric())
                && (c != b',' || bytes[index - 1].is_ascii_digit())
                && (c != b'.' || bytes[index - 1].is_ascii_digit());
            if c.is_ascii_alphanumeric() || inside {
                index += 1;
            } else {
                break;
            }
        }
        found.push((start, index, &prose[start..index]));
    }
    found
}

/// The counts of `prose` (a page's prose, see `pages::prose`): a number (a digit, or a
/// number word from two up) followed, within two short words, by a noun that drifts; and
/// "N of the M", a count out of a total.
pub fn counts(prose: &str) -> Vec<Count> {
    counts_of(prose, &[])
}

/// [`counts`], with more nouns that drift: a diagram's text says "4 workers", "two loops",
/// "256 buffers" of the code it depicts.
pub fn counts_of(prose: &str, more_nouns: &[&str]) -> Vec<Count> {
    let words = words(prose);
    let mut found = Vec::new();
    let mut index = 0;
    while index < words.len() {
        let (start, _, word) = words[index];
        // A number right after a label ("chapter 4", "chapters 3 and 4") names, not counts.
        let labelled = words[..index]
            .iter()
            .rev()
            .find(|(_, _, before)| !(is_number(before) || ["and", "or", "to"].contains(before)))
            .is_some_and(|(_, _, before)| LABELS.contains(&before.to_lowercase().as_str()));
        // "no two files import each other", "between two turns": not counts.
        let idiom =
            index > 0 && ["no", "between"].contains(&words[index - 1].2.to_lowercase().as_str());
        if !is_number(word) || idiom || (labelled && word.starts_with(|c: char| c.is_ascii_digit()))
        {
            index += 1;
            continue;
        }
        // "a dozen" is one number; "both" is two.
        let mut end_index = None;
        for ahead in 1..=3 {
            let Some(&(_, _, next)) = words.get(index + ahead) else { break };
            let next_lower = next.to_lowercase();
            // The words must follow each other in the same sentence.
            let gap = slice(prose, words[index + ahead - 1].1, words[index + ahead].0);
            if gap.chars().any(|c| !(c == ' ' || c == '\n')) {
                break;
            }
            let adjective = words
                .get(index + ahead + 1)
                .is_some_and(|(_, _, after)| NOT_BEFORE.contains(&after.to_lowercase().as_str()));
            let noun =
                NOUNS.contains(&next_lower.as_str()) || more_nouns.contains(&next_lower.as_str());
            if noun && !adjective {
                end_index = Some(index + ahead);
                break;
            }
            // N of the M: a count of a total.
            if ahead == 3
                && next_lower.chars().all(|c| c.is_ascii_digit() || c == ',')
                && words[index + 1].2 == "of"
                && words[index + 2].2 == "the"
            {
                end_index = Some(index + ahead);
                break;
            }
            if !BETWEEN.contains(&next_lower.as_str()) && !is_number(next) {
                break;
            }
        }
        if let Some(end_index) = end_index {
            let end = words[end_index].1;
            let phrase = prose[start..end].split_whitespace().collect::<Vec<_>>().join(" ");
            found.push(Count { line: line_of(prose, start), phrase, start, end });
            index = end_index + 1;
        } else {
            index += 1;
        }
    }
    found
}

/// The counts allowed as they are, from `book/counts-allowed.txt`: `PAGE: PHRASE`, under a
/// group line `== why these stay as typed`.
pub struct Allowed {
    /// (page, phrase) to its group and line.
    pub phrases: BTreeMap<(String, String), (String, usize)>,
    pub problems: Vec<String>,
}

pub const ALLOWED_FILE: &str = "book/counts-allowed.txt";

pub fn allowed(text: &str) -> Allowed {
    let mut phrases = BTreeMap::new();
    let mut problems = Vec::new();
    let mut group: Option<String> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(why) = line.strip_prefix("==") {
            if why.split_whitespace().count() < 3 {
                problems
                    .push(format!("{ALLOWED_FILE}:{number}: a group's line says why, in words"));
            }
            group = Some(why.trim().to_string());
            continue;
        }
        let Some(why) = &group else {
            problems.push(format!("{ALLOWED_FILE}:{number}: a count before the first `==` group"));
            continue;
        };
        let Some((page, phrase)) = line.split_once(": ") else {
            problems.push(format!("{ALLOWED_FILE}:{number}: a line is `PAGE: PHRASE`"));
            continue;
        };
        let key = (page.trim().to_string(), phrase.trim().to_string());
        if phrases.insert(key, (why.clone(), number)).is_some() {
            problems.push(format!("{ALLOWED_FILE}:{number}: listed twice"));
        }
    }
    Allowed { phrases, problems }
}

/// The counts of a page that nothing vouches for; `used` collects the allow-list's lines
/// that vouched for one. `checked` are the ranges of the prose another check verifies
/// (a diff's files).
pub fn unvouched(
    page: &str, prose: &str, allowed: &Allowed, checked: &[(usize, usize)],
    used: &mut BTreeSet<(String, String)>,
) -> Vec<Count> {
    let more: &[&str] = if page.ends_with(".svg") { &DIAGRAM_NOUNS } else { &[] };
    counts_of(prose, more)
        .into_iter()
        .filter(|count| {
            let verified =
                checked.iter().any(|(start, end)| count.start >= *start && count.end <= *end);
            let key = (page.to_string(), count.phrase.clone());
            let listed = allowed.phrases.contains_key(&key);
            if listed {
                used.insert(key);
            }
            !verified && !listed
        })
        .collect()
}
