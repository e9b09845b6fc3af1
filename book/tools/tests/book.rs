//! Checks that the book (`book/`) still matches the code it teaches.
//!
//! The book never pastes code: every excerpt is pulled from the chapters' sources by
//! mdBook's include directive and a named anchor (`// ANCHOR: name` ... `// ANCHOR_END:
//! name`), and every "what changed" diff is generated from the sources by
//! `book/tools/gen-diffs.sh`. Both can go wrong quietly: mdBook renders an anchor that no
//! longer exists as an empty code block, and a diff generated last week goes on showing
//! last week's code. This test turns both into failures, along with a few other ways the
//! book can drift from the repository:
//!
//! - every include names a file that exists, and an anchor that opens and closes in it;
//! - every diff a page shows, and its table of lines changed per file, is committed and is
//!   exactly what `gen-diffs.sh` produces now;
//! - a page that shows a diff shows its table first, and the diff itself folded away in a
//!   `<details>` block;
//! - no line of included code is wider than the book's code column (`CODE_COLUMN`), so no
//!   excerpt or diff scrolls sideways;
//! - every page in `SUMMARY.md` exists, every page exists in `SUMMARY.md`, and a chapter's
//!   page is listed only once that chapter's code exists (no placeholder pages);
//! - every local link and image points at a file that exists, and every picture a page
//!   shows (Markdown or `<img>`) is a picture, not missing or empty: the generated
//!   timelines, `generated/timeline-chNN.svg`, come from `book/tools/gen-timelines.sh`;
//! - no program output is typed by hand: a console block that shows output includes a
//!   generated session (`book/sessions/NAME.sh`, run by `book/tools/gen-sessions.sh` into
//!   `generated/sessions/NAME.txt`), and no block quotes a suite summary or a trace by
//!   hand;
//! - every generated output (the sessions, the timelines, the benchmark) was made from
//!   today's inputs: `generated/sessions.lock` records a hash of what each was made from
//!   (`book/tools/src/lock.rs`), and a change to an input without a new run is a failure;
//! - no line typed in a code block is wider than the column either;
//! - every chapter's exercises link to their answers in Appendix E;
//! - no table is wider than the text column at a 1,280 px window (`TEXT_COLUMN_PX`),
//!   as estimated from the words, numbers and code in its cells that cannot wrap.
//!
//! It lives in `shared` because that is the one crate every chapter depends on, and it
//! needs nothing but the standard library and the `diff` and `bash` programs.
//! `book/tools/check.sh` runs it together with an `mdbook build`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

// The hash the generators record, written once for both.
use book_tools::lock;

/// The repository's root: this package is `book/tools/` inside it.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the book's tools live inside the repository")
        .to_path_buf()
}

fn book_src() -> PathBuf {
    repository().join("book/src")
}

/// Every `.md` file under `folder`, in a stable order.
fn markdown_files(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = fs::read_dir(&folder)
            .unwrap_or_else(|error| panic!("cannot list {}: {error}", folder.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn read(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// `chapters/01-blocking/src/main.rs` rather than a long absolute path full of `..`, for
/// messages.
fn short(path: &Path) -> String {
    let mut tidy = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                tidy.pop();
            }
            Component::CurDir => {}
            other => tidy.push(other),
        }
    }
    tidy.strip_prefix(repository()).unwrap_or(&tidy).display().to_string()
}

/// One include directive found in a page.
struct Include {
    /// Where it was found, as `book/src/page.md:12`.
    place: String,
    /// The file it names, resolved against the page's folder.
    file: PathBuf,
    /// What follows the path after a `:`, if anything.
    selector: Option<String>,
}

/// Finds the include directives in one page. mdBook skips a directive written with a
/// backslash in front (`\{{#include ...}}`), so we do too.
fn includes_in(page: &Path) -> Vec<Include> {
    let text = read(page);
    let folder = page.parent().expect("a page is inside book/src");
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        for directive in ["{{#include ", "{{#rustdoc_include "] {
            let mut rest = line;
            let mut offset = 0;
            while let Some(start) = rest.find(directive) {
                let escaped = line[..offset + start].ends_with('\\');
                let after = &rest[start + directive.len()..];
                let Some(end) = after.find("}}") else { break };
                if !escaped {
                    let argument = after[..end].trim();
                    let (path, selector) = match argument.split_once(':') {
                        Some((path, selector)) => (path, Some(selector.to_string())),
                        None => (argument, None),
                    };
                    found.push(Include {
                        place: format!("{}:{}", short(page), index + 1),
                        file: folder.join(path),
                        selector,
                    });
                }
                let consumed = start + directive.len() + end + 2;
                offset += consumed;
                rest = &rest[consumed..];
            }
        }
    }
    found
}

/// Does `line` carry the marker `ANCHOR: name` (or `ANCHOR_END: name`) for exactly this
/// name? mdBook's own pattern is `ANCHOR:\s*([\w_-]+)`, so `setup` must not match a
/// marker for `setup_more`.
fn has_marker(line: &str, marker: &str, name: &str) -> bool {
    let Some(position) = line.find(marker) else {
        return false;
    };
    let rest = line[position + marker.len()..].trim_start();
    let word: String =
        rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-').collect();
    word == name
}

/// What is wrong with this include, if anything.
fn check_include(include: &Include) -> Option<String> {
    let Ok(text) = fs::read_to_string(&include.file) else {
        return Some(format!(
            "{}: includes {}, which does not exist",
            include.place,
            short(&include.file)
        ));
    };
    let anchor = include.selector.as_deref()?;
    if anchor.is_empty() || anchor.chars().all(|c| c.is_ascii_digit() || c == ':') {
        // Line numbers are allowed by mdBook, but they silently point at the wrong lines
        // once the file changes. Anchors move with the code.
        return Some(format!(
            "{}: includes {} by line numbers; mark the excerpt with an anchor instead",
            include.place,
            short(&include.file)
        ));
    }
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|line| has_marker(line, "ANCHOR:", anchor));
    let Some(start) = start else {
        return Some(format!(
            "{}: no `ANCHOR: {anchor}` in {}",
            include.place,
            short(&include.file)
        ));
    };
    let end = lines[start..].iter().position(|line| has_marker(line, "ANCHOR_END:", anchor));
    match end {
        None => Some(format!(
            "{}: `ANCHOR: {anchor}` in {} is never closed by `ANCHOR_END: {anchor}`",
            include.place,
            short(&include.file)
        )),
        Some(1) => Some(format!(
            "{}: anchor `{anchor}` in {} is empty",
            include.place,
            short(&include.file)
        )),
        Some(_) => None,
    }
}

#[test]
fn every_include_names_an_existing_file_and_anchor() {
    let mut problems = Vec::new();
    let mut count = 0;
    for page in markdown_files(&book_src()) {
        for include in includes_in(&page) {
            count += 1;
            problems.extend(check_include(&include));
        }
    }
    assert!(count > 0, "found no include directives at all in book/src");
    assert!(
        problems.is_empty(),
        "the book's excerpts no longer match the code:\n  {}",
        problems.join("\n  ")
    );
}

/// A temporary folder that is removed again however the test ends.
struct TemporaryFolder(PathBuf);

impl TemporaryFolder {
    fn new(name: &str) -> TemporaryFolder {
        let path = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path); // left over from a killed run, perhaps
        fs::create_dir_all(&path)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", path.display()));
        TemporaryFolder(path)
    }
}

impl Drop for TemporaryFolder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The pieces `gen-diffs.sh` makes in `folder`, by name: `diff-*.diff`, and the
/// `diff-*.md` table beside each; and the sketch arc's steps, `sketch-*.diff`.
fn diff_files(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| {
                    name.starts_with("diff-") && (name.ends_with(".diff") || name.ends_with(".md"))
                        || name.starts_with("sketch-") && name.ends_with(".diff")
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn generated_diffs_are_fresh() {
    let fresh = TemporaryFolder::new("book-diffs");
    let script = repository().join("book/tools/gen-diffs.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(&fresh.0)
        .output()
        .unwrap_or_else(|error| panic!("cannot run bash {}: {error}", script.display()));
    assert!(
        output.status.success(),
        "{} failed:\n{}",
        short(&script),
        String::from_utf8_lossy(&output.stderr)
    );

    let committed_folder = book_src().join("generated");
    let expected = diff_files(&fresh.0);
    let committed = diff_files(&committed_folder);
    let mut problems = Vec::new();
    for name in &expected {
        match fs::read(committed_folder.join(name)) {
            Err(_) => problems.push(format!("book/src/generated/{name} is missing")),
            Ok(bytes) if bytes != fs::read(fresh.0.join(name)).unwrap_or_default() => problems
                .push(format!(
                    "book/src/generated/{name} is stale: the chapters changed since it was made"
                )),
            Ok(_) => {}
        }
    }
    for name in committed.iter().filter(|name| !expected.contains(name)) {
        problems.push(format!("book/src/generated/{name} is shown by no page; delete it"));
    }
    assert!(
        problems.is_empty(),
        "{}\nrun book/tools/gen-diffs.sh to regenerate them",
        problems.join("\n")
    );
}

/// The steps whose diff (`generated/diff-NN-MM.diff`) this line includes, as `diff-NN-MM`.
fn diff_includes_in(line: &str, extension: &str) -> Vec<String> {
    let marker = "generated/diff-";
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find(marker) {
        let name = &rest[start + "generated/".len()..];
        let stem: String =
            name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if name[stem.len()..].starts_with(extension) {
            found.push(stem);
        }
        rest = &rest[start + marker.len()..];
    }
    found
}

#[test]
fn what_changed_opens_with_its_table_and_folds_the_diff() {
    let mut problems = Vec::new();
    for page in markdown_files(&book_src()) {
        if page.starts_with(book_src().join("generated")) {
            continue;
        }
        let text = read(&page);
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            for step in diff_includes_in(line, ".diff") {
                let place = format!("{}:{}", short(&page), index + 1);
                // The table: the same step's .md, included earlier on the page.
                let table = lines[..index]
                    .iter()
                    .rposition(|line| diff_includes_in(line, ".md").contains(&step));
                // The fold: `<details>` opened after the table and not closed before the
                // diff, a blank line after its `<summary>` (without it mdBook leaves the
                // Markdown inside unrendered), and `</details>` after the diff.
                let opening = lines[..index].iter().rposition(|line| line.contains("<details"));
                let closed_between = opening.is_some_and(|opening| {
                    lines[opening..index].iter().any(|line| line.contains("</details>"))
                });
                let summary = opening.and_then(|opening| {
                    lines[opening..index]
                        .iter()
                        .position(|line| line.contains("</summary>"))
                        .map(|offset| opening + offset)
                });
                let closing = lines[index..].iter().position(|line| line.contains("</details>"));
                match (table, opening) {
                    (None, _) => problems.push(format!(
                        "{place}: shows {step}.diff without its table: include \
                         generated/{step}.md above it"
                    )),
                    (Some(_), None) => {
                        problems.push(format!("{place}: {step}.diff is not inside <details>"))
                    }
                    (Some(table), Some(opening)) if opening < table || closed_between => problems
                        .push(format!(
                            "{place}: {step}.diff is not inside a <details> block that follows \
                             its table"
                        )),
                    _ => {}
                }
                match summary {
                    Some(summary)
                        if lines.get(summary + 1).is_some_and(|l| l.trim().is_empty()) => {}
                    _ if opening.is_none() => {}
                    _ => problems.push(format!(
                        "{place}: the <summary> line above {step}.diff needs a blank line after \
                         it, or mdBook will not render the diff inside"
                    )),
                }
                if closing.is_none() {
                    problems.push(format!("{place}: no </details> after {step}.diff"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// How many characters of code fit across the book's text column without scrolling
/// sideways. rustfmt wraps at 100 (its default `max_width`) and a diff adds a one-character
/// prefix; `book/theme/code-column.css` widens mdBook's column to hold them. Change both
/// together.
const CODE_COLUMN: usize = 101;

/// How wide `line` is on screen, in characters (a tab reaches the next multiple of 8, as
/// in a browser).
fn width(line: &str) -> usize {
    line.chars().fold(0, |column, c| if c == '\t' { column / 8 * 8 + 8 } else { column + 1 })
}

/// Does this line carry any anchor marker? mdBook leaves all of them out of an excerpt,
/// not only the excerpt's own.
fn is_marker(line: &str) -> bool {
    ["ANCHOR:", "ANCHOR_END:"].iter().any(|marker| {
        line.find(marker).is_some_and(|position| {
            line[position + marker.len()..]
                .trim_start()
                .starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-')
        })
    })
}

/// The lines an include puts on the page, with their line numbers in the included file:
/// the whole file, or the lines inside the named anchor.
fn included_lines<'a>(text: &'a str, anchor: Option<&str>) -> Vec<(usize, &'a str)> {
    let lines = text.lines().enumerate().map(|(index, line)| (index + 1, line));
    let Some(anchor) = anchor else {
        return lines.collect();
    };
    lines
        .skip_while(|(_, line)| !has_marker(line, "ANCHOR:", anchor))
        .skip(1)
        .take_while(|(_, line)| !has_marker(line, "ANCHOR_END:", anchor))
        .filter(|(_, line)| !is_marker(line))
        .collect()
}

#[test]
fn no_included_code_line_is_wider_than_the_column() {
    let mut problems = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for page in markdown_files(&book_src()) {
        for include in includes_in(&page) {
            // Markdown pieces (the tables, the capability table) are text, not code.
            if include.file.extension().is_some_and(|extension| extension == "md") {
                continue;
            }
            let Ok(text) = fs::read_to_string(&include.file) else {
                continue; // a missing file is reported by the include test
            };
            let is_diff = include.file.extension().is_some_and(|extension| extension == "diff");
            // For a diff: the two chapter files the hunks below compare, to say where a line
            // comes from (a removed line from the first, any other from the second).
            let (mut before, mut after) = (String::new(), String::new());
            for (number, line) in included_lines(&text, include.selector.as_deref()) {
                if is_diff {
                    if let Some(path) = line.strip_prefix("--- ") {
                        before = path.to_string();
                    } else if let Some(path) = line.strip_prefix("+++ ") {
                        after = path.to_string();
                    }
                }
                let wide = width(line);
                if wide <= CODE_COLUMN || !seen.insert((include.file.clone(), number)) {
                    continue;
                }
                let from = if line.starts_with('-') { &before } else { &after };
                let origin = if is_diff && !from.is_empty() {
                    format!("; the line is in {from}")
                } else {
                    String::new()
                };
                problems.push(format!(
                    "{}:{number}: {wide} characters, shown by {}{origin}",
                    short(&include.file),
                    include.place
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} included code lines are wider than the book's code column ({CODE_COLUMN} \
         characters; see book/theme/code-column.css) and would scroll sideways:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The targets of the markdown links `[text](target)` and images `![alt](target)` in
/// `text`, outside code blocks, with the line each is on.
fn links_in(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_code_block = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
            continue;
        }
        if in_code_block {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((index + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    found
}

fn is_local(target: &str) -> bool {
    !(target.is_empty()
        || target.starts_with('#')
        || target.starts_with("http://")
        || target.starts_with("https://")
        || target.starts_with("mailto:"))
}

#[test]
fn summary_lists_exactly_the_pages_that_exist() {
    let src = book_src();
    let summary_path = src.join("SUMMARY.md");
    let summary = read(&summary_path);
    let mut problems = Vec::new();
    let mut listed = Vec::new();
    for (line, target) in links_in(&summary) {
        if !is_local(&target) {
            continue;
        }
        let page = src.join(&target);
        if !page.is_file() {
            problems.push(format!("SUMMARY.md:{line}: {target} does not exist"));
        }
        // A page called chNN-something.md teaches chapters/NN-something: it may only be
        // listed once that chapter has code.
        if let Some(number) = target
            .strip_prefix("ch")
            .and_then(|rest| rest.get(..2))
            .filter(|digits| digits.chars().all(|c| c.is_ascii_digit()))
        {
            let has_code = fs::read_dir(repository().join("chapters"))
                .map(|entries| {
                    entries.flatten().any(|entry| {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        name.starts_with(&format!("{number}-"))
                            && entry.path().join("src/main.rs").is_file()
                    })
                })
                .unwrap_or(false);
            if !has_code {
                problems.push(format!(
                    "SUMMARY.md:{line}: {target} is listed, but chapters/{number}-* has no code yet"
                ));
            }
        }
        listed.push(page);
    }
    // Pieces that a page includes whole (the answers appendix is one page of nine files).
    let included: Vec<PathBuf> = markdown_files(&src)
        .iter()
        .flat_map(|page| includes_in(page))
        .filter(|include| include.selector.is_none())
        .map(|include| include.file)
        .collect();
    for page in markdown_files(&src) {
        let inside_generated = page.starts_with(src.join("generated"));
        if page == summary_path || inside_generated || included.contains(&page) {
            continue; // the summary itself, and pieces that pages include
        }
        if !listed.contains(&page) {
            problems
                .push(format!("{} is not in SUMMARY.md, so no reader will find it", short(&page)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `page`, and the Markdown files it includes whole. mdBook pastes those into the page
/// before rendering it, so their links and pictures are resolved from the *page's* folder,
/// not their own.
fn page_and_pasted_pages(page: &Path) -> Vec<PathBuf> {
    let mut sources = vec![page.to_path_buf()];
    sources.extend(
        includes_in(page)
            .into_iter()
            .filter(|include| include.selector.is_none())
            .map(|include| include.file)
            .filter(|file| file.extension().is_some_and(|extension| extension == "md")),
    );
    sources
}

#[test]
fn local_links_and_images_exist() {
    let src = book_src();
    let mut problems = Vec::new();
    for page in markdown_files(&src) {
        if page.starts_with(src.join("generated")) {
            continue; // checked below, as part of the pages that include them
        }
        let folder = page.parent().expect("a page is inside book/src");
        for source in page_and_pasted_pages(&page) {
            let Ok(text) = fs::read_to_string(&source) else {
                continue; // a missing include is reported by the include test
            };
            for (line, target) in links_in(&text) {
                if !is_local(&target) {
                    continue;
                }
                let file = target.split('#').next().unwrap_or_default();
                if !folder.join(file).exists() {
                    problems.push(format!(
                        "{}:{line}: {target} does not exist (seen from {})",
                        short(&source),
                        short(&page)
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The pictures in `text` (a page, outside code): Markdown images `![alt](path "title")`,
/// whose alt text may run over several lines, and HTML `<img src="path">`. Each with the
/// line it ends on.
fn pictures_in(text: &str) -> Vec<(usize, String)> {
    // Code is not Markdown: blank out fenced blocks and `inline code` (keeping the lines,
    // so that line numbers stay right).
    let mut prose = String::new();
    let mut in_code_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
        } else if !in_code_block {
            let mut in_code = false;
            prose.extend(line.chars().map(|c| {
                in_code ^= c == '`';
                if in_code || c == '`' {
                    ' '
                } else {
                    c
                }
            }));
        }
        prose.push('\n');
    }
    let line_of = |offset: usize| prose[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut rest = 0;
    while let Some(start) = prose[rest..].find("![").map(|start| rest + start) {
        rest = start + 2;
        let Some(close) = prose[rest..].find("](").map(|close| rest + close + 2) else { break };
        let Some(end) = prose[close..].find(')').map(|end| close + end) else { break };
        // `path "a title"`: the path is the first word.
        let target = prose[close..end].split_whitespace().next().unwrap_or_default();
        found.push((line_of(end), target.to_string()));
        rest = end;
    }
    let mut rest = 0;
    while let Some(start) = prose[rest..].find("<img").map(|start| rest + start) {
        rest = start + 4;
        let Some(end) = prose[rest..].find('>').map(|end| rest + end) else { break };
        let tag = &prose[rest..end];
        let source = ["src=\"", "src='"].iter().find_map(|key| {
            let after = &tag[tag.find(key)? + key.len()..];
            Some(&after[..after.find(['"', '\''])?])
        });
        if let Some(source) = source {
            found.push((line_of(end), source.to_string()));
        }
        rest = end;
    }
    found
}

#[test]
fn pictures_are_found_in_every_form_a_page_writes_them() {
    let page = "intro\n![A picture that spans\ntwo lines](images/a.svg)\n\
                ![titled](generated/timeline-ch04.svg \"Chapter 4\")\n\
                ```text\n![in code](missing.svg)\n```\n\
                `![inline code](missing.svg)` and <img alt=\"x\" src=\"images/b.png\">\n\
                [a link, not a picture](missing.md) ![web](https://example.com/c.svg)\n";
    assert_eq!(
        pictures_in(page),
        [
            (3, "images/a.svg".to_string()),
            (4, "generated/timeline-ch04.svg".to_string()),
            (9, "https://example.com/c.svg".to_string()),
            (8, "images/b.png".to_string()),
        ]
    );
}

/// Every picture a page shows exists and is a picture: a missing one would show readers a
/// broken image, and mdBook builds the page without a word. (The generated timelines,
/// `generated/timeline-chNN.svg`, come from `book/tools/gen-timelines.sh`.)
#[test]
fn every_picture_a_page_shows_exists() {
    let src = book_src();
    let mut problems = Vec::new();
    let mut seen = 0;
    for page in markdown_files(&src) {
        if page.starts_with(src.join("generated")) {
            continue; // checked as part of the pages that include them
        }
        let folder = page.parent().expect("a page is inside book/src");
        for source in page_and_pasted_pages(&page) {
            let Ok(text) = fs::read_to_string(&source) else { continue };
            for (line, target) in pictures_in(&text) {
                if !is_local(&target) {
                    continue;
                }
                seen += 1;
                let file = folder.join(target.split(['#', '?']).next().unwrap_or_default());
                let contents = fs::read(&file).unwrap_or_default();
                let is_svg = file.extension().is_some_and(|extension| extension == "svg");
                let why = if !file.is_file() {
                    "does not exist"
                } else if contents.is_empty() {
                    "is empty"
                } else if is_svg && !String::from_utf8_lossy(&contents).contains("<svg") {
                    "is not an SVG picture"
                } else {
                    continue;
                };
                let hint = if target.contains("generated/timeline-") {
                    " (book/tools/gen-timelines.sh draws the timelines)"
                } else {
                    ""
                };
                let place = short(&source);
                problems.push(format!("{place}:{line}: the picture {target} {why}{hint}"));
            }
        }
    }
    assert!(seen > 0, "no page shows a picture: is pictures_in still finding them?");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Pages whose quoted output is not generated yet (their console blocks still type output
/// by hand), while they are being converted. Take a page off the list once its blocks
/// include sessions; the test below says when one can go. Every page is converted: keep
/// it empty.
const NOT_YET_GENERATED: &[&str] = &[];

/// One fenced code block of a page.
struct Block {
    /// `console`, `text`, `rust`, ... (empty for a bare fence).
    language: String,
    /// Its lines, with their line numbers on the page, without the fences and without the
    /// indentation of the opening fence (a block inside a list item is indented).
    lines: Vec<(usize, String)>,
}

/// The fenced code blocks of a page.
fn blocks_in(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Block)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None if trimmed.starts_with("```") => {
                let language = trimmed.trim_start_matches('`').trim().to_string();
                open = Some((indent, Block { language, lines: Vec::new() }));
            }
            None => {}
            Some((_, block)) if trimmed.starts_with("```") => blocks.push(block),
            Some((indent, mut block)) => {
                let cut = line.len() - line.trim_start().len();
                block.lines.push((index + 1, line[cut.min(indent)..].to_string()));
                open = Some((indent, block));
            }
        }
    }
    blocks
}

/// The end marker of a here-document this command line opens, as the session format has
/// it: `<<'EOF'`, `<<"EOF"`, `<<EOF` or `<<-EOF`.
fn here_document(line: &str) -> Option<String> {
    let start = line.find("<<")?;
    let rest = line[start + 2..].trim_start_matches('-').trim_start();
    if rest.starts_with('<') {
        return None;
    }
    let word: String = rest
        .chars()
        .filter(|c| *c != '\'' && *c != '"')
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The lines of a console block that are output: neither a `$ ` command nor its
/// continuation (after a `\`, or inside a here-document), nor blank, nor an include.
fn output_lines(block: &Block) -> Vec<&(usize, String)> {
    let mut output = Vec::new();
    let mut continues = false;
    let mut until: Option<String> = None;
    for entry in &block.lines {
        let line = &entry.1;
        if let Some(marker) = &until {
            if line.trim() == marker {
                until = None;
            }
            continue;
        }
        let command = if continues { Some(line.as_str()) } else { line.strip_prefix("$ ") };
        match command {
            Some(command) => {
                continues = command.ends_with('\\');
                until = here_document(command);
            }
            None if line.trim().is_empty() || line.trim_start().starts_with("{{#include ") => {}
            None => output.push(entry),
        }
    }
    output
}

/// A line that can only have been printed by one of our programs: the suite's summary,
/// or a `--trace` line.
fn is_quoted_output(line: &str) -> bool {
    let summary = [" checks: ", " check: "].iter().any(|checks| {
        line.split_once(checks)
            .is_some_and(|(count, rest)| count.parse::<u32>().is_ok() && rest.contains(" pass"))
    });
    let trace = line
        .strip_prefix('[')
        .and_then(|rest| rest.split_once(" ms]"))
        .is_some_and(|(time, _)| time.trim().parse::<f64>().is_ok());
    summary || trace
}

/// The session a line includes (`{{#include generated/sessions/NAME.txt}}`), if any.
fn session_included(line: &str) -> Option<String> {
    let start = line.find("generated/sessions/")? + "generated/sessions/".len();
    let rest = &line[start..];
    let name = rest.split(".txt").next()?;
    (rest.len() > name.len()).then(|| name.to_string())
}

/// The pages readers read (not the generated pieces, nor the exercise answers, which show
/// what *your* changed program prints: no session can run that).
fn reading_pages() -> Vec<PathBuf> {
    let src = book_src();
    markdown_files(&src)
        .into_iter()
        .filter(|page| {
            !page.starts_with(src.join("generated")) && !page.starts_with(src.join("answers"))
        })
        .collect()
}

fn page_name(page: &Path) -> String {
    page.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
}

#[test]
fn no_page_types_a_programs_output_by_hand() {
    let mut problems = Vec::new();
    for page in reading_pages() {
        let name = page_name(&page);
        let excused = NOT_YET_GENERATED.contains(&name.as_str());
        let mut typed = 0;
        for block in blocks_in(&read(&page)) {
            let mut found: Vec<(usize, String)> = Vec::new();
            if block.language == "console" {
                found.extend(output_lines(&block).into_iter().cloned());
                for (number, line) in &block.lines {
                    if line.contains("{{#include") && session_included(line).is_none() {
                        problems.push(format!(
                            "{}:{number}: a console block includes something other than a \
                             generated session",
                            short(&page)
                        ));
                    }
                }
            } else {
                found
                    .extend(block.lines.iter().filter(|(_, line)| is_quoted_output(line)).cloned());
            }
            typed += found.len();
            if let (false, Some((number, line))) = (excused, found.first()) {
                problems.push(format!(
                    "{}:{number}: output typed by hand (`{}`): write the commands as a session, \
                     book/sessions/NAME.sh, run book/tools/gen-sessions.sh NAME, and include \
                     generated/sessions/NAME.txt in a console block",
                    short(&page),
                    line.trim()
                ));
            }
        }
        if excused && typed == 0 {
            problems.push(format!(
                "{name} types no output by hand any more: take it off NOT_YET_GENERATED"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn output_blocks_are_recognised() {
    let page = "```console\n$ cargo run -p ch08-async &\nlistening on http://127.0.0.1:8080\n\
                $ for i in 1 2; do \\\n    curl -s x; done\n```\n\
                ```console\n$ cat > /tmp/f.py <<'EOF'\nprint(1)\nEOF\n\n$ python3 /tmp/f.py\n```\n\
                ```console\n{{#include generated/sessions/ch08-suite.txt}}\n```\n\
                ```text\n49 checks: 48 pass, 1 expected limitation, 0 fail, 0 skipped\n\
                1 check: 1 pass, 0 expected limitations, 0 fail, 0 skipped\n\
                [     0.124 ms] accept: waiting for a client\n[ 1 ] ms\n```\n";
    let blocks = blocks_in(page);
    assert_eq!(blocks.len(), 4);
    let output: Vec<usize> = output_lines(&blocks[0]).iter().map(|(number, _)| *number).collect();
    assert_eq!(output, [3]);
    assert!(output_lines(&blocks[1]).is_empty());
    assert!(output_lines(&blocks[2]).is_empty());
    assert_eq!(session_included(&blocks[2].lines[0].1).as_deref(), Some("ch08-suite"));
    let quoted: Vec<bool> =
        blocks[3].lines.iter().map(|(_, line)| is_quoted_output(line)).collect();
    assert_eq!(quoted, [true, true, true, false]);
}

#[test]
fn every_session_is_shown_by_a_page() {
    let mut shown = BTreeSet::new();
    for page in markdown_files(&book_src()) {
        for line in read(&page).lines() {
            shown.extend(session_included(line));
        }
    }
    let root = repository();
    let mut problems = Vec::new();
    let sessions: BTreeSet<String> = lock::pieces(&root)
        .unwrap_or_else(|error| panic!("{error}"))
        .into_iter()
        .filter(|piece| piece.output.starts_with(lock::SESSION_OUTPUTS))
        .map(|piece| piece.name)
        .collect();
    for name in sessions.difference(&shown) {
        problems.push(format!("book/sessions/{name}.sh is shown by no page: delete it"));
    }
    for name in shown.difference(&sessions) {
        problems.push(format!(
            "a page shows generated/sessions/{name}.txt, but no book/sessions/{name}.sh makes it"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_lock_hashes_with_fnv1a_64() {
    // The published test vectors of FNV-1a, 64 bits.
    assert_eq!(lock::fnv1a(lock::FNV_START, b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(lock::fnv1a(lock::FNV_START, b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(lock::fnv1a(lock::FNV_START, b"foobar"), 0x8594_4171_f739_67e8);
    // Fed in pieces, the same.
    assert_eq!(lock::fnv1a(lock::fnv1a(lock::FNV_START, b"foo"), b"bar"), 0x8594_4171_f739_67e8);
}

#[test]
fn generated_outputs_were_made_from_todays_inputs() {
    let root = repository();
    let pieces = lock::pieces(&root).unwrap_or_else(|error| panic!("{error}"));
    assert!(!pieces.is_empty(), "no generated piece found: is lock::pieces still finding them?");
    let locked = lock::read_lock(&root);
    let mut problems = Vec::new();
    for piece in &pieces {
        let today = lock::hash_of(&root, piece)
            .unwrap_or_else(|error| panic!("{} (for {}): {error}", piece.name, piece.output));
        if !root.join(&piece.output).is_file() {
            problems.push(format!("{} is missing: run {}", piece.output, piece.remake));
        } else if locked.get(&piece.name) != Some(&today) {
            problems.push(format!(
                "{} is stale (its inputs changed): run {}",
                piece.output, piece.remake
            ));
        }
    }
    for name in locked.keys() {
        if !pieces.iter().any(|piece| piece.name == *name) {
            problems.push(format!(
                "{}: `{name}` names no generated piece: remove the line",
                lock::LOCK
            ));
        }
    }
    if let Ok(entries) = fs::read_dir(root.join(lock::SESSION_OUTPUTS)) {
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            let output = format!("{}/{file}", lock::SESSION_OUTPUTS);
            if !pieces.iter().any(|piece| piece.output == output) {
                problems.push(format!("{output} has no session that makes it: delete it"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_line_typed_in_a_code_block_is_wider_than_the_column() {
    let mut problems = Vec::new();
    for page in markdown_files(&book_src()) {
        if page.starts_with(book_src().join("generated"))
            || NOT_YET_GENERATED.contains(&page_name(&page).as_str())
        {
            continue;
        }
        for block in blocks_in(&read(&page)) {
            for (number, line) in &block.lines {
                let wide = width(line);
                if wide > CODE_COLUMN {
                    problems.push(format!("{}:{number}: {wide} characters", short(&page)));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} lines typed in code blocks are wider than the book's code column ({CODE_COLUMN} \
         characters) and would scroll sideways (break a command with `\\`):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// How wide the book's text column is at a 1,280 px window, in CSS pixels: mdBook's
/// `--content-max-width`, which `book/theme/code-column.css` sets (beside a 300 px sidebar
/// and 40 px of page padding). A table wider than this scrolls sideways and hides columns.
const TEXT_COLUMN_PX: f64 = 880.0;

/// What a table cell costs beside its text: mdBook gives each cell 20 px of padding on
/// either side, and a 1 px border between cells.
const CELL_PADDING_PX: f64 = 41.0;
/// The same in a table whose heads are `<abbr>`s (the capability table, a column per
/// chapter): `book/theme/code-column.css` pads those 8 px a side (`:has()`, which every
/// browser the book is read in has had since 2023).
const NARROW_CELL_PADDING_PX: f64 = 17.0;

/// The padding of `rows`' cells (see above).
fn cell_padding(rows: &[Vec<String>]) -> f64 {
    let abbreviated = rows.first().is_some_and(|heads| heads.iter().any(|h| h.contains("<abbr")));
    if abbreviated {
        NARROW_CELL_PADDING_PX
    } else {
        CELL_PADDING_PX
    }
}
/// One character of prose in a table: mdBook's text is 16 px Open Sans, whose digits are
/// 9.2 px and whose lower-case letters 9 px or less, but for `m` and `w` (12 to 15 px),
/// which count one and a half characters.
const TEXT_CHAR_PX: f64 = 9.0;
/// One character of bold prose: a table's head row, and `**bold**` cells.
const BOLD_CHAR_PX: f64 = 10.0;
/// One character of `inline code`: 14 px Source Code Pro, 0.6 em a character...
const CODE_CHAR_PX: f64 = 8.4;
/// ... and an inline code span's padding, 0.3 em on either side.
const CODE_SPAN_PX: f64 = 8.4;

/// How a piece of a table cell is set.
#[derive(Clone, Copy, PartialEq)]
enum Font {
    Text,
    Bold,
    Code,
}

/// The widths, in pixels, of the pieces of one table cell that a browser cannot break
/// across lines: each word of its prose, broken only at spaces and after a hyphen inside a
/// word (`keep-` / `alive`, as Chromium does), and each word of its code, broken only at
/// spaces (a browser would break code at its hyphens too, but a command cut in two reads
/// badly). Markdown and HTML markup takes no room: `[text](link)` counts its text, `<abbr
/// title="...">1</abbr>` its `1`, `&lt;` one character.
fn unbreakable_widths(cell: &str, head: bool) -> Vec<f64> {
    let chars: Vec<char> = cell.trim().chars().collect();
    let mut widths = Vec::new();
    let mut word = 0.0;
    let (mut code, mut bold) = (false, head);
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        index += 1;
        let font = match (code, bold) {
            (true, _) => Font::Code,
            (false, true) => Font::Bold,
            (false, false) => Font::Text,
        };
        if c == '`' {
            code = !code;
            word += CODE_SPAN_PX / 2.0;
            continue;
        }
        if !code {
            let rest: String = chars[index..].iter().collect();
            match c {
                '\\' if index < chars.len() => {
                    // An escaped character stands for itself.
                    word += TEXT_CHAR_PX;
                    index += 1;
                    continue;
                }
                '*' => {
                    if chars.get(index) == Some(&'*') {
                        index += 1;
                        bold = !bold;
                    }
                    continue; // emphasis markers take no room
                }
                '<' if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/') => {
                    index += rest.find('>').map_or(0, |end| end + 1);
                    continue; // an HTML tag
                }
                '&' if rest.find(';').is_some_and(|end| {
                    end > 0 && rest[..end].chars().all(|c| c.is_ascii_alphanumeric() || c == '#')
                }) =>
                {
                    index += rest.find(';').map_or(0, |end| end + 1);
                    word += TEXT_CHAR_PX; // an entity is one character
                    continue;
                }
                '[' => continue, // a link's text counts, its brackets do not...
                ']' if rest.starts_with('(') => {
                    index += rest.find(')').map_or(0, |end| end + 1);
                    continue; // ...nor its target
                }
                _ => {}
            }
        }
        if c.is_whitespace() {
            widths.push(word);
            word = 0.0;
            continue;
        }
        // In prose, `m` and `w` are half as wide again as other letters.
        let wide = if "mwMW".contains(c) { 1.5 } else { 1.0 };
        word += match font {
            Font::Text => TEXT_CHAR_PX * wide,
            Font::Bold => BOLD_CHAR_PX * wide,
            Font::Code => CODE_CHAR_PX,
        };
        let hyphen_breaks = font != Font::Code
            && c == '-'
            && index >= 2
            && chars[index - 2].is_alphanumeric()
            && chars.get(index).is_some_and(|next| next.is_alphabetic());
        if hyphen_breaks {
            widths.push(word);
            word = 0.0;
        }
    }
    widths.push(word);
    widths
}

/// The cells of one table row: split at each `|` that is not escaped (as GitHub's
/// tables are, even inside code), without the outer pipes.
fn table_cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = if row.ends_with('|') && !row.ends_with("\\|") { &row[..row.len() - 1] } else { row };
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in row.chars() {
        if c == '|' && !escaped {
            cells.push(String::new());
        } else if let Some(cell) = cells.last_mut() {
            cell.push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    cells
}

/// Is this line a table's delimiter row, such as `|---|:-:|---:|`?
fn is_delimiter_row(line: &str) -> bool {
    let line = line.trim();
    line.contains('-')
        && line.contains('|')
        && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// The Markdown tables of a page, outside code blocks: each with the line of its head and
/// its rows (the head first; the delimiter row left out).
fn tables_in(text: &str) -> Vec<(usize, Vec<Vec<String>>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut tables = Vec::new();
    let mut in_code_block = false;
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
        }
        let starts_table = !in_code_block
            && line.contains('|')
            && lines.get(index + 1).is_some_and(|next| is_delimiter_row(next));
        if !starts_table {
            index += 1;
            continue;
        }
        let mut rows = vec![table_cells(line)];
        let mut end = index + 2;
        while end < lines.len() && lines[end].contains('|') && !lines[end].trim().is_empty() {
            rows.push(table_cells(lines[end]));
            end += 1;
        }
        tables.push((index + 1, rows));
        index = end;
    }
    tables
}

/// How wide a table is at its narrowest, in pixels, as estimated from its cells: for
/// each column, the widest piece of a cell that cannot break across lines, plus the
/// cell's padding (see `unbreakable_widths`). Also the widest piece of each column, for
/// the message.
fn narrowest_width(rows: &[Vec<String>]) -> (f64, Vec<f64>) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widest = vec![0.0f64; columns];
    for (row_index, row) in rows.iter().enumerate() {
        for (column, cell) in row.iter().enumerate() {
            for width in unbreakable_widths(cell, row_index == 0) {
                widest[column] = widest[column].max(width);
            }
        }
    }
    let total = widest.iter().map(|width| width + cell_padding(rows)).sum();
    (total, widest)
}

#[test]
fn table_widths_are_estimated_as_chromium_renders_them() {
    // Chromium at a 1,280 px window, measured on the built book (a table made as narrow
    // as it goes with `width: min-content`): the diff table of chapter 6 is 542 px, its
    // columns 268, 90, 111 and 72 px; chapter 9's benchmark-style name column, 114 px.
    let diff_06 = "| File | Lines added | Lines removed | |\n|:-----|---:|---:|:--|\n\
                   | `src/connection/download.rs` | 64 | 0 | new |\n\
                   | `src/connection.rs` | 23 | 9 | |\n\
                   | **Total** | **323** | **23** | |\n";
    let tables = tables_in(diff_06);
    assert_eq!(tables.len(), 1);
    let (total, widest) = narrowest_width(&tables[0].1);
    assert!((542.0..=560.0).contains(&total), "estimated {total} px, Chromium renders 542");
    assert!((widest[0] + CELL_PADDING_PX - 268.0).abs() < 2.0, "{widest:?}");
    // A name breaks after its hyphens: `ch06-` / `thread-` / `pool`; code does not.
    let names = "| server |\n|---|\n| ch06-thread-pool |\n| ch09-multicore |\n";
    let (total, _) = narrowest_width(&tables_in(names)[0].1);
    assert!((114.0..=130.0).contains(&total), "estimated {total} px, Chromium renders 114");
    assert_eq!(unbreakable_widths("`ch06-thread-pool`", false), [16.0 * 8.4 + 8.4]);
    // Markup takes no room; escaped pipes stay in their cell; code blocks hold no tables.
    assert_eq!(unbreakable_widths("<abbr title=\"ch01-blocking\">1</abbr>", false), [9.0]);
    assert_eq!(unbreakable_widths("[ab](ab.md) &lt;", false), [18.0, 9.0]);
    assert_eq!(table_cells("| a \\| b | c |").len(), 2);
    assert!(tables_in("```text\n| a |\n|---|\n```\n").is_empty());
}

/// Every Markdown table in the book (the pages, the answers, and the generated pieces
/// they include: the capability table, the benchmark tables, the diffs' tables) fits the
/// text column at 1,280 px. A browser narrows a table by wrapping its cells, so what
/// counts is what cannot wrap: per column, the widest single word, number or piece of
/// code of any of its cells, in characters times a character's width in its font (prose,
/// bold or code; see `TEXT_CHAR_PX` and the constants beside it), plus each cell's
/// padding and border. The sum of the columns is the narrowest the table can be, checked
/// against `TEXT_COLUMN_PX`. The estimate is calibrated against Chromium and errs wide
/// (`table_widths_are_estimated_as_chromium_renders_them`); it uses mdBook's default cell
/// padding, but for the capability table, which `code-column.css` pads less.
#[test]
fn every_table_fits_the_column() {
    let mut problems = Vec::new();
    let mut seen = 0;
    for page in markdown_files(&book_src()) {
        for (line, rows) in tables_in(&read(&page)) {
            seen += 1;
            let (total, widest) = narrowest_width(&rows);
            if total > TEXT_COLUMN_PX {
                let columns: Vec<String> = rows[0]
                    .iter()
                    .zip(&widest)
                    .map(|(head, width)| {
                        format!("{} {:.0}", head.trim(), width + cell_padding(&rows))
                    })
                    .collect();
                problems.push(format!(
                    "{}:{line}: a table at least {total:.0} px wide (by column: {})",
                    short(&page),
                    columns.join(", ")
                ));
            }
        }
    }
    assert!(seen > 0, "found no table in the book: is tables_in still finding them?");
    assert!(
        problems.is_empty(),
        "tables wider than the book's {TEXT_COLUMN_PX} px column at 1,280 px, which would \
         scroll sideways and hide their last columns: give them shorter heads, or cells that \
         can wrap\n  {}",
        problems.join("\n  ")
    );
}

/// The id mdBook gives a heading, for links to it: its text in lower case, spaces as
/// hyphens, and only letters, digits, `_` and `-` kept (`## Chapter 7: Ten thousand idle
/// clients: epoll` is `chapter-7-ten-thousand-idle-clients-epoll`).
fn heading_id(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c.to_ascii_lowercase()),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// A chapter's "Exercises" section says where the answers are: a link to that chapter's
/// part of Appendix E (`answers.md#chapter-N-...`, the heading `answers/chNN.md` opens
/// with), so that a reader who is stuck, or done, finds them.
#[test]
fn every_exercise_section_links_to_its_answers() {
    assert_eq!(
        heading_id("## Chapter 8: async and await, from scratch"),
        "chapter-8-async-and-await-from-scratch"
    );
    let src = book_src();
    let mut problems = Vec::new();
    let mut seen = 0;
    for page in reading_pages() {
        let name = page_name(&page);
        let Some(number) = name
            .strip_prefix("ch")
            .and_then(|rest| rest.get(..2))
            .filter(|digits| digits.chars().all(|c| c.is_ascii_digit()))
        else {
            continue;
        };
        let text = read(&page);
        let lines: Vec<&str> = text.lines().collect();
        let Some(start) = lines.iter().position(|line| line.trim() == "## Exercises") else {
            continue;
        };
        seen += 1;
        let section = lines[start + 1..]
            .iter()
            .take_while(|line| !line.starts_with("## ") && !line.starts_with("# "))
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        let answers = src.join(format!("answers/ch{number}.md"));
        let Some(heading) = fs::read_to_string(&answers)
            .ok()
            .and_then(|text| text.lines().find(|line| line.starts_with("## ")).map(str::to_string))
        else {
            problems.push(format!(
                "{}:{}: exercises, but {} has no `## Chapter N: ...` heading to link to",
                short(&page),
                start + 1,
                short(&answers)
            ));
            continue;
        };
        let link = format!("](answers.md#{})", heading_id(&heading));
        if !section.contains(&link) {
            problems.push(format!(
                "{}:{}: the exercises do not say where their answers are: add \"The answers \
                 are in [Appendix E]({}).\"",
                short(&page),
                start + 1,
                &link[2..link.len() - 1]
            ));
        }
    }
    assert!(seen > 0, "no chapter page has an `## Exercises` section");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
