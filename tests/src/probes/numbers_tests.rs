//! The numbers in a module's texts (its row's "no" sentences and note, its rules on the
//! checklist) are its constants, formatted in: a bound typed by hand ("within 2 s")
//! would stay on the page when the probe's constant changes.

use std::collections::BTreeSet;

use super::{common, modules, Module};
use crate::manifest::Expect;

/// Numbers that are the protocol's, not a probe's: statuses, the HTTP versions, the RFC,
/// the loopback address, every byte value.
const NOT_A_BOUND: &[&str] = &[
    "0",
    "100",
    "101",
    "143",
    "200",
    "204",
    "255",
    "304",
    "400",
    "404",
    "405",
    "408",
    "411",
    "413",
    "414",
    "418",
    "431",
    "501",
    "502",
    "504",
    "1.0",
    "1.1",
    "9112",
    "127.0.0.1",
];

/// The numbers in `text`, leaving out those that are part of a name (`ch03`, `poll(2)`,
/// `1xx`, `%2e`, `::1`), a chapter's number after "chapter" or "chapters", and an exit
/// status.
fn numbers_in(text: &str) -> Vec<String> {
    let mut numbers = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        if !chars[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len()
            && (chars[at].is_ascii_digit()
                || (matches!(chars[at], ',' | '.')
                    && chars.get(at + 1).is_some_and(char::is_ascii_digit)))
        {
            at += 1;
        }
        let number: String = chars[start..at].iter().collect();
        let before: String = chars[..start].iter().collect();
        let glued_before = start > 0
            && (chars[start - 1].is_alphabetic() || matches!(chars[start - 1], '%' | ':'));
        let glued_after = chars.get(at).is_some_and(|c| c.is_alphabetic())
            || (before.ends_with('(') && chars.get(at) == Some(&')'));
        let chapter = ["chapter ", "Chapter ", "chapters ", "Chapters ", " and "]
            .iter()
            .any(|word| before.ends_with(word))
            && number.len() <= 2;
        // An exit status is the contract's: 0, 1 for a port in use, 2 for a bad flag.
        let exit_status = ["status ", "exits ", "exit "].iter().any(|word| before.ends_with(word));
        if !(glued_before || glued_after || chapter || exit_status) {
            numbers.push(number);
        }
    }
    numbers
}

/// The texts of `module`: its rules, and its row's "no" sentences and note.
fn texts(module: &Module) -> Vec<String> {
    let mut texts: Vec<String> = (module.rules)().into_iter().map(|rule| rule.text).collect();
    if let Some(row) = module.row {
        let row = row();
        texts.extend(row.chapters.iter().filter_map(|expect| match expect {
            Expect::No(why) => Some(why.to_string()),
            Expect::Yes => None,
        }));
        texts.extend(row.note.map(str::to_string));
    }
    texts
}

#[test]
fn every_number_in_a_modules_texts_is_one_of_its_constants() {
    let shared: BTreeSet<String> = (common::quoted)().iter().flat_map(|q| numbers_in(q)).collect();
    let mut strays = Vec::new();
    for module in modules() {
        let own: BTreeSet<String> = (module.quoted)().iter().flat_map(|q| numbers_in(q)).collect();
        for text in texts(module) {
            for number in numbers_in(&text) {
                let known = own.contains(&number)
                    || shared.contains(&number)
                    || NOT_A_BOUND.contains(&number.as_str());
                if !known {
                    let probes: Vec<&str> = module.probes.iter().map(|probe| probe.name).collect();
                    strays.push(format!("{number} (the module of {probes:?}): {text}"));
                }
            }
        }
    }
    assert!(
        strays.is_empty(),
        "numbers typed into a text instead of formatted from the module's constants (add the \
         constant to the module's `quoted` and format it in):\n{}",
        strays.join("\n")
    );
}

#[test]
fn finds_the_numbers_a_text_quotes() {
    let text = "ch03 waits 1.5 s, 2,000 clients, `poll(2)`, 1xx, %2e, chapter 9 and 10, `[::1]`, \
        exit status 1, 12 KiB, 4×";
    assert_eq!(numbers_in(text), ["1.5", "2,000", "12", "4"]);
}
