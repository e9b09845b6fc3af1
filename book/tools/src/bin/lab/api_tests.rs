//! Tests of a lab's code, for the chapters whose lesson the HTTP suite cannot see.
//!
//! Chapters 5, 8, 10 and 11 turn no row of the capability table to "yes": promises,
//! `async` and io_uring change how a server is written, not what a client sees. So their
//! labs bring tests of the code itself: chapter N's `src/*_api_tests.rs`, each a module of
//! unit tests that names chapter N's own types and functions by their paths
//! (`crate::promise::Deferred`). Its `//!` comment says what it holds the code to and lists
//! those names with their signatures, in a `rust` block. The chapter's own tests include
//! the file (`promise_tests.rs` ends with it), so it passes on the workbook's answer; and
//! since it is in `src/`, the labs made from chapter N take it along with its tests.
//!
//! Lab N gets chapter N's files in its `src/`, a `#[cfg(test)]` module for each at the end of
//! `src/main.rs` (the one change this makes to chapter N-1's code), and each file's comment
//! in its README. `cargo test` in the lab runs them. As made, they do not compile: chapter
//! N-1 has none of those names. `api_tests_tests.rs` checks that every chapter the suite
//! cannot see has such a file, and that every signature one lists is the chapter's.

use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};

use suite::chapters::Chapter;

use crate::readme::wrap;

/// How the name of a file of tests of a lab's code ends.
pub const ENDING: &str = "_api_tests.rs";

/// One file of tests.
pub struct ApiTests {
    /// `promise_api_tests.rs`, and the module it becomes (`promise_api_tests`).
    pub file_name: String,
    pub module: String,
    pub text: String,
}

/// The tests of chapter N's code (`chapters/NN-name/src/*_api_tests.rs`), by name: none
/// for most chapters.
pub fn find(workbook: &Path, chapter: &Chapter) -> Result<Vec<ApiTests>, String> {
    let src = workbook.join("chapters").join(chapter.directory).join("src");
    let Ok(entries) = fs::read_dir(&src) else { return Ok(Vec::new()) };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.to_string_lossy().ends_with(ENDING))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path)
                .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            let module = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            let file_name = format!("{module}.rs");
            Ok(ApiTests { file_name, module, text })
        })
        .collect()
}

/// The lines `src/main.rs` ends with, that make the files test modules of the program.
pub fn modules(tests: &[ApiTests]) -> String {
    let mut out = String::from(
        "\n// The lab's tests of your code (README.md, \"Tests of your code\"): `cargo test`.\n",
    );
    for test in tests {
        let _ = writeln!(out, "#[cfg(test)]\nmod {};", test.module);
    }
    out
}

/// Puts the tests in the lab: the files in `src/`, their modules at the end of `main.rs`.
pub fn install(lab: &Path, tests: &[ApiTests]) -> Result<(), String> {
    if tests.is_empty() {
        return Ok(());
    }
    for test in tests {
        fs::write(lab.join("src").join(&test.file_name), &test.text)
            .map_err(|error| format!("cannot write src/{}: {error}", test.file_name))?;
    }
    let main = lab.join("src/main.rs");
    let program = fs::read_to_string(&main)
        .map_err(|error| format!("cannot read {}: {error}", main.display()))?;
    fs::write(&main, program + &modules(tests))
        .map_err(|error| format!("cannot write {}: {error}", main.display()))
}

/// A file's opening `//!` comment, as Markdown.
pub fn doc(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    lines.join("\n").trim().to_string()
}

/// The README's section on the tests.
pub fn section(chapter: &Chapter, tests: &[ApiTests]) -> String {
    let n = chapter.number;
    let mut out = String::from("## Tests of your code\n\n");
    let files: Vec<String> = tests.iter().map(|test| format!("`src/{}`", test.file_name)).collect();
    let modules = if tests.len() == 1 { "it a test module" } else { "them test modules" };
    out.push_str(&wrap(
        &format!(
            "The suite cannot see chapter {n}'s lesson from outside, so these tests look at \
             the code instead: {} (the last lines of `src/main.rs` make {modules} of your \
             program). Run them here, in the lab:",
            files.join(", ")
        ),
        "",
        "",
    ));
    out.push_str("```sh\ncargo test\n```\n\n");
    out.push_str(&wrap(
        &format!(
            "As made, they do not compile: they name what chapter {n}'s code provides, and \
             chapter {}'s has none of it. Your code must provide the names below, with these \
             signatures (chapter {n}'s own, which its page explains); then every test must \
             pass, and the two gradings below too. Leave the tests as they are: your teacher \
             runs their own copy.",
            n - 1
        ),
        "",
        "",
    ));
    for test in tests {
        let _ = write!(out, "### `src/{}`\n\n{}\n\n", test.file_name, doc(&test.text));
    }
    out
}

/// The README with the section before its grading (at its end, should that heading move).
pub fn with_section(readme: &str, section: &str) -> String {
    const GRADING: &str = "## Build and grade";
    match readme.find(GRADING) {
        Some(at) => format!("{}{section}{}", &readme[..at], &readme[at..]),
        None => format!("{readme}\n{section}"),
    }
}

#[cfg(test)]
#[path = "api_tests_tests.rs"]
mod tests;
