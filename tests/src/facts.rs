//! The counts and lists the book's prose states about the suite and the chapters,
//! generated, so that no page types them: how many checks there are, which run one loop,
//! which chapters add no row the suite can see, how many rows each chapter turns to "yes",
//! and which chapters switch on which of `shared::args`'s extra flags.
//!
//! `cargo run -p suite -- --facts > book/src/generated/facts.md` writes the facts, one
//! anchor each, for a page to include in a sentence
//! (`{{#include generated/facts.md:checks}}`); `--extras-table >
//! book/src/generated/extras.md` writes the table of extra flags the `shared` page shows.
//! A test fails when either differs from what the code says today.

use std::fmt::Write;

use shared::args::{usage, Config, Extra};

use crate::chapters::{workspace_root, CHAPTERS};
use crate::manifest::{Expect, MANIFEST};
use crate::probes::{ON_ONE_LOOP, PROBES};

/// A count as the prose writes it: a word up to twenty, digits after.
pub fn in_words(count: usize) -> String {
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
    WORDS.get(count).map_or_else(|| count.to_string(), |word| word.to_string())
}

/// `a`, `a and b`, `a, b and c`.
pub fn listed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Chapter numbers as ranges: `4 to 11`, `7`, `6 to 9`, `5, 8 and 10`.
pub fn chapter_ranges(numbers: &[u8]) -> String {
    let mut ranges: Vec<(u8, u8)> = Vec::new();
    for &number in numbers {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == number => *end = number,
            _ => ranges.push((number, number)),
        }
    }
    let pieces: Vec<String> = ranges
        .iter()
        .flat_map(|&(start, end)| match end - start {
            0 => vec![start.to_string()],
            1 => vec![start.to_string(), end.to_string()],
            _ => vec![format!("{start} to {end}")],
        })
        .collect();
    listed(&pieces)
}

/// The rows of the capability table chapter `number` turns to "yes" (from "no" in the
/// chapter before it).
fn rows_turned(number: u8) -> usize {
    let index = usize::from(number) - 1;
    MANIFEST
        .iter()
        .filter(|row| index > 0 && row.chapters[index] == Expect::Yes)
        .filter(|row| row.chapters[index - 1] != Expect::Yes)
        .count()
}

/// The facts, as the book includes them.
pub fn facts() -> String {
    let mut out = String::new();
    let mut fact = |name: &str, value: String| {
        let _ = writeln!(out, "ANCHOR: {name}\n{value}\nANCHOR_END: {name}");
    };
    fact("checks", PROBES.len().to_string());
    let one_loop: Vec<String> = ON_ONE_LOOP.iter().map(|name| format!("`{name}`")).collect();
    fact("checks-on-one-loop", listed(&one_loop));
    fact("checks-on-one-loop-count", in_words(ON_ONE_LOOP.len()));
    let quiet: Vec<u8> = CHAPTERS
        .iter()
        .map(|chapter| chapter.number)
        .filter(|&n| n > 1 && rows_turned(n) == 0)
        .collect();
    fact("chapters-adding-no-row", chapter_ranges(&quiet).replace(" to ", "-"));
    fact("chapters-adding-no-row-count", in_words(quiet.len()));
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.number > 1) {
        fact(&format!("rows-yes-ch{:02}", chapter.number), in_words(rows_turned(chapter.number)));
    }
    format!(
"<!-- Generated from the suite by `cargo run -p suite -- --facts` (tests/src/facts.rs).\n     \
         Do not edit: a test fails when these and the code disagree. A page includes one by \
         its anchor. -->\n{out}"
    )
}

/// Every extra flag of `shared::args`, in the order the table shows them.
const EXTRAS: [Extra; 5] =
    [Extra::Timeouts, Extra::Workers, Extra::Backend, Extra::UpstreamLimit, Extra::Threads];

/// The name of an extra as the code spells it, and its default, as the table says it. (A
/// new `Extra` fails to compile here until it has both, and a place in [`EXTRAS`].)
fn described(extra: Extra) -> (&'static str, String) {
    let defaults = Config::new("chNN");
    let seconds = |duration: std::time::Duration| format!("{} s", duration.as_secs_f64());
    match extra {
        Extra::Timeouts => (
            "Timeouts",
            format!(
                "{}, {}, {}",
                seconds(defaults.keep_alive_timeout),
                seconds(defaults.header_timeout),
                seconds(defaults.send_timeout)
            ),
        ),
        Extra::Workers => ("Workers", defaults.workers.to_string()),
        Extra::Backend => ("Backend", format!("`{}`", defaults.backend.name())),
        Extra::UpstreamLimit => ("UpstreamLimit", defaults.upstream_limit.to_string()),
        // Whatever this machine has: `std::thread::available_parallelism`.
        Extra::Threads => ("Threads", "one per core".to_string()),
    }
}

/// The flags an extra switches on, from the usage it adds: `--backend epoll|poll` as
/// "`--backend epoll` or `--backend poll`".
fn flags_of(extra: Extra) -> String {
    let without = usage("chNN", &[]);
    let with = usage("chNN", &[extra]);
    let added = with.strip_prefix(without.as_str()).unwrap_or(&with);
    let mut flags = Vec::new();
    for bracketed in added.split('[').skip(1) {
        let inside = bracketed.split(']').next().unwrap_or_default();
        let mut words = inside.split_whitespace();
        let flag = words.next().unwrap_or_default();
        match words.next() {
            Some(values) if values.contains('|') => {
                let spelled: Vec<String> =
                    values.split('|').map(|value| format!("`{flag} {value}`")).collect();
                flags.push(spelled.join(" or "));
            }
            _ => flags.push(format!("`{flag}`")),
        }
    }
    flags.join(", ")
}

/// The chapters whose `main.rs` passes `Extra::NAME` to `Config::from_args`.
fn chapters_with(name: &str) -> Vec<u8> {
    let wanted = format!("Extra::{name}");
    CHAPTERS
        .iter()
        .filter(|chapter| {
            let main =
                workspace_root().join("chapters").join(chapter.directory).join("src/main.rs");
            std::fs::read_to_string(main).is_ok_and(|source| {
                source
                    .split(|c: char| !(c.is_alphanumeric() || c == ':' || c == '_'))
                    .any(|word| word == wanted)
            })
        })
        .map(|chapter| chapter.number)
        .collect()
}

/// The table of extra flags, for the `shared` page.
pub fn extras_table() -> String {
    let mut out = String::from(
        "<!-- Generated from shared/src/args.rs and the chapters' main.rs by `cargo run -p \
         suite -- --extras-table`.\n     Do not edit: a test fails when this file and the code \
         disagree. -->\n\n| `Extra` | flags | default | chapters |\n|---|---|---|---|\n",
    );
    for extra in EXTRAS {
        let (name, default) = described(extra);
        let _ = writeln!(
            out,
            "| `{name}` | {} | {default} | {} |",
            flags_of(extra),
            chapter_ranges(&chapters_with(name))
        );
    }
    out
}

#[cfg(test)]
#[path = "facts_tests.rs"]
mod tests;
