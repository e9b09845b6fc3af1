use super::*;

use suite::chapters::{self, CHAPTERS};

use crate::readme::new_rows;

fn workbook() -> PathBuf {
    fs::canonicalize(chapters::workspace_root()).expect("the workbook")
}

/// The signatures a file's comment lists: the lines of its `rust` blocks that declare
/// something (`pub fn`, `pub struct`, `impl`, `type`...), without a closing `{` or `;`.
pub fn signatures(text: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in doc(text).lines() {
        let line = line.trim();
        if line.starts_with("```") {
            inside = !inside && line == "```rust";
            continue;
        }
        if inside && ["pub ", "impl", "type "].iter().any(|start| line.starts_with(start)) {
            out.push(line.trim_end_matches(['{', ';']).trim_end().to_string());
        }
    }
    out
}

/// Rust source with its layout taken out, to find a signature in whatever lines it spans:
/// whitespace runs made one space, none just inside brackets, no comma before a `)`.
pub fn normalised(source: &str) -> String {
    let words = source.split_whitespace().collect::<Vec<_>>().join(" ");
    words.replace("( ", "(").replace(" )", ")").replace(",)", ")").replace("< ", "<")
}

#[test]
fn every_chapter_the_suite_cannot_see_brings_tests_of_its_code() {
    let workbook = workbook();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.number > 1) {
        let tests = find(&workbook, chapter).expect("readable");
        if new_rows(chapter).is_empty() {
            assert!(
                !tests.is_empty(),
                "chapter {}: no row, and no src/*_api_tests.rs",
                chapter.number
            );
        }
        for test in &tests {
            assert!(!signatures(&test.text).is_empty(), "{}: lists no signature", test.file_name);
        }
    }
}

#[test]
fn every_signature_a_readme_lists_is_one_the_chapter_has() {
    let workbook = workbook();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.is_present()) {
        let mut sources = String::new();
        let src = workbook.join("chapters").join(chapter.directory).join("src");
        for entry in fs::read_dir(&src).expect("src/").flatten() {
            // Not the tests: the file that lists the signatures would find them in itself.
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".rs") && !name.ends_with("_tests.rs") {
                sources.push_str(&fs::read_to_string(entry.path()).expect("a source"));
                sources.push('\n');
            }
        }
        let sources = normalised(&sources);
        for test in find(&workbook, chapter).expect("readable") {
            for signature in signatures(&test.text) {
                assert!(
                    sources.contains(&normalised(&signature)),
                    "{}: chapter {} has no `{signature}`",
                    test.file_name,
                    chapter.number
                );
            }
        }
    }
}

#[test]
fn signatures_are_found_however_the_code_lays_them_out() {
    let code =
        "pub fn then<U: 'static>(\n        self, step: impl Fn() + 'static,\n    ) -> P<U> {";
    assert!(normalised(code)
        .contains(&normalised("pub fn then<U: 'static>(self, step: impl Fn() + 'static) -> P<U>")));
    let text = "//! Names:\n//!\n//! ```rust\n//! impl A {\n//!     pub fn b(self);\n//! }\n//! // c\n//! ```\n//! pub fn not_listed()\nfn x() {}\n";
    assert_eq!(signatures(text), ["impl A", "pub fn b(self)"]);
    assert_eq!(doc(text).lines().last(), Some("pub fn not_listed()"));
}

#[test]
fn a_lab_gets_its_tests_as_modules_of_its_program_and_says_so() {
    let folder = std::env::temp_dir().join(format!("lab-api-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&folder);
    // Read from a command line, as the other branches of the lab's flags grow the request.
    let words = ["5".to_string(), folder.display().to_string()];
    let request = crate::parse_args(words.into_iter()).expect("accepted").expect("a request");
    let made = crate::make(&request);
    let read = |file: &str| fs::read_to_string(folder.join(file)).unwrap_or_default();
    let (main, readme, copied) =
        (read("src/main.rs"), read("README.md"), read("src/promise_api_tests.rs"));
    let _ = fs::remove_dir_all(&folder);
    assert!(made.is_ok());
    let ours = fs::read_to_string(workbook().join("chapters/05-promises/src/promise_api_tests.rs"))
        .expect("ours");
    assert_eq!(copied, ours, "copied as it is");
    assert!(main.ends_with("#[cfg(test)]\nmod promise_api_tests;\n"), "{main}");
    let section = readme.find("## Tests of your code").expect("the section");
    assert!(section < readme.find("## Build and grade").expect("grading"), "before the grading");
    assert!(readme.contains("pub fn resolve(self, value: T)"), "the signatures: {readme}");
    assert!(readme.contains("```sh\ncargo test\n```"));
}

#[test]
fn a_lab_without_tests_of_its_code_is_left_as_it_was() {
    let workbook = workbook();
    let four = chapters::chapter(4).expect("chapter 4");
    assert!(find(&workbook, four).expect("readable").is_empty(), "chapter 4's suite rows grade it");
    assert_eq!(with_section("a\n## Build and grade\n", "S\n\n"), "a\nS\n\n## Build and grade\n");
    assert_eq!(with_section("a\n", "S\n"), "a\n\nS\n");
}

#[test]
fn the_course_page_names_every_file_of_tests_of_a_labs_code() {
    let workbook = workbook();
    let page = fs::read_to_string(workbook.join("book/src/course.md")).expect("the course page");
    let mut rows = Vec::new();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.number > 1) {
        for test in find(&workbook, chapter).expect("readable") {
            rows.push(format!("| {} | `{}` |", chapter.number, test.file_name));
        }
    }
    for row in &rows {
        assert!(page.contains(row.as_str()), "course.md's table lacks `{row}`");
    }
    for line in page.lines().filter(|line| line.starts_with("| ") && line.contains(ENDING)) {
        assert!(rows.iter().any(|row| line.starts_with(row.as_str())), "no such file: {line}");
    }
}
