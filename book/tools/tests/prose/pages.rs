//! The book's pages as the prose checks read them: which pages, the code each one speaks
//! of, and the pieces of a page (code spans, fenced blocks) outside what is code itself.

use std::fs;
use std::path::{Component, Path, PathBuf};

/// The repository's root: this package is `book/tools/` inside it.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the book's tools live inside the repository")
        .to_path_buf()
}

pub fn read(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// `book/src/ch03-event-loop.md` rather than a long absolute path, for messages.
pub fn short(path: &Path) -> String {
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

/// The chapters' folders, `chapters/NN-name`, by number.
pub fn chapter_folders() -> Vec<(u32, String)> {
    let mut found: Vec<(u32, String)> = fs::read_dir(repository().join("chapters"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let number = name.get(..2)?.parse().ok()?;
                    Some((number, format!("chapters/{name}")))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The code every page may speak of, whatever its chapter: `shared`, the suite and the
/// book's tools. The book's own checks are left out: they quote the pages, and would vouch
/// for any name.
pub const ALWAYS_IN_SCOPE: &[&str] = &[
    "shared/src",
    "shared/tests",
    "tests/src",
    "tests/tests",
    "book/tools/src",
    "book/tools/tests",
];
pub const NEVER_IN_SCOPE: &[&str] = &["book/tools/tests/book.rs", "book/tools/tests/prose"];

/// A page the prose checks read, and the code it speaks of.
pub struct Page {
    pub path: PathBuf,
    /// Its chapter, for a chapter's page and its answers.
    pub chapter: Option<u32>,
    /// Folders (from the root) whose code the page speaks of.
    pub scope: Vec<String>,
}

impl Page {
    pub fn name(&self) -> String {
        short(&self.path)
    }
}

/// The pages whose prose is held to the code: every chapter's page (`chNN-*.md`; a
/// chapter may have more than one, as chapter 8 has) and its answers (`answers/chNN.md`,
/// once), and the pages about all of them. A chapter's page speaks of that chapter, the one
/// before and the one after, `shared` and the suite; the others of every chapter.
pub fn checked_pages() -> Vec<Page> {
    const ABOUT_ALL: &[&str] =
        &["hostile-clients.md", "shared.md", "course.md", "your-server.md", "teaching.md"];
    let src = repository().join("book/src");
    let chapters = chapter_folders();
    let scope_of = |chapter: Option<u32>| -> Vec<String> {
        let mut scope: Vec<String> = chapters
            .iter()
            .filter(|(number, _)| chapter.is_none_or(|wanted| number.abs_diff(wanted) <= 1))
            .map(|(_, folder)| folder.clone())
            .collect();
        scope.extend(ALWAYS_IN_SCOPE.iter().map(|root| root.to_string()));
        scope
    };
    let mut pages = Vec::new();
    let mut names: Vec<String> = fs::read_dir(&src)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        let chapter = name
            .strip_prefix("ch")
            .and_then(|rest| rest.get(..2))
            .and_then(|digits| digits.parse::<u32>().ok())
            .filter(|_| name.ends_with(".md"));
        if let Some(number) = chapter {
            pages.push(Page {
                path: src.join(&name),
                chapter: Some(number),
                scope: scope_of(Some(number)),
            });
            let answers = src.join(format!("answers/ch{number:02}.md"));
            let listed = pages.iter().any(|page: &Page| page.path == answers);
            if answers.is_file() && !listed {
                pages.push(Page {
                    path: answers,
                    chapter: Some(number),
                    scope: scope_of(Some(number)),
                });
            }
        } else if ABOUT_ALL.contains(&name.as_str()) {
            pages.push(Page { path: src.join(&name), chapter: None, scope: scope_of(None) });
        }
    }
    pages
}

/// The pages of chapter `number`, `book/src/chNN-*.md`: one, or more for a chapter that
/// takes more than one sitting (chapter 8's `ch08-async.md` and `ch08-reactor.md`).
pub fn chapter_pages(number: u32) -> Vec<PathBuf> {
    let src = repository().join("book/src");
    let prefix = format!("ch{number:02}-");
    let Ok(entries) = fs::read_dir(&src) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name().is_some_and(|name| {
                let name = name.to_string_lossy();
                name.starts_with(&prefix) && name.ends_with(".md")
            })
        })
        .collect();
    found.sort();
    found
}

/// One code span of a page: `` `text` ``.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The line it starts on, from 1.
    pub line: usize,
    pub text: String,
    /// Where it is in the prose (see [`prose`]): its opening and closing backticks.
    pub start: usize,
    pub end: usize,
}

/// A page's text with what is not prose blanked out (kept as spaces, so that offsets and
/// line numbers stay right): fenced code blocks, HTML comments, and include directives.
pub fn prose(text: &str) -> String {
    let mut prose = String::with_capacity(text.len());
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let fence = line.trim_start().starts_with("```");
        if fence || in_block {
            prose.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
            if fence {
                in_block = !in_block;
            }
        } else {
            prose.push_str(line);
        }
    }
    for (open, close) in [("<!--", "-->"), ("{{#", "}}")] {
        let mut from = 0;
        while let Some(start) = prose[from..].find(open).map(|start| from + start) {
            let end =
                prose[start..].find(close).map_or(prose.len(), |end| start + end + close.len());
            let blank: String =
                prose[start..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
            prose.replace_range(start..end, &blank);
            from = start + blank.len();
        }
    }
    prose
}

/// `text[start..end]`, with both ends clamped to the text and moved inward to a
/// character's boundary.
pub fn slice(text: &str, start: usize, end: usize) -> &str {
    let mut end = end.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut start = start.min(end);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..end]
}

/// The line of byte `offset` in `text`, from 1.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The code spans of `prose` (a page's [`prose`]): a run of backticks opens one, and the
/// next run of as many closes it, across lines if need be, as CommonMark has it.
pub fn spans(prose: &str) -> Vec<Span> {
    let bytes = prose.as_bytes();
    let mut found = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\' {
            index += 2;
            continue;
        }
        if bytes[index] != b'`' {
            index += 1;
            continue;
        }
        let run = bytes[index..].iter().take_while(|b| **b == b'`').count();
        let open = index;
        let mut search = index + run;
        let mut close = None;
        while search < bytes.len() {
            if bytes[search] == b'`' {
                let other = bytes[search..].iter().take_while(|b| **b == b'`').count();
                if other == run {
                    close = Some(search);
                    break;
                }
                search += other;
            } else if bytes[search] == b'\n' && bytes.get(search + 1) == Some(&b'\n') {
                break; // a paragraph ends: the backticks were literal
            } else {
                search += 1;
            }
        }
        match close {
            Some(close) => {
                let text = prose[open + run..close].replace('\n', " ");
                found.push(Span {
                    line: line_of(prose, open),
                    text: text.trim().to_string(),
                    start: open,
                    end: close + run,
                });
                index = close + run;
            }
            None => index += run,
        }
    }
    found
}

/// One fenced code block of a page.
pub struct Block {
    /// What follows the opening backticks: `rust,ignore`, `console`, ...
    pub info: String,
    /// The line of the opening fence, from 1.
    pub line: usize,
    /// Its lines, without the fences and the fence's indentation.
    pub lines: Vec<String>,
    /// The last non-blank line before the fence, trimmed, if any.
    pub before: Option<String>,
}

pub fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<(usize, Block)> = None;
    let mut last_text: Option<String> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None if trimmed.starts_with("```") => {
                let info = trimmed.trim_start_matches('`').trim().to_string();
                let block =
                    Block { info, line: index + 1, lines: Vec::new(), before: last_text.clone() };
                open = Some((indent, block));
            }
            None => {
                if !trimmed.is_empty() {
                    last_text = Some(trimmed.trim_end().to_string());
                }
            }
            Some((_, block)) if trimmed.starts_with("```") => {
                found.push(block);
                last_text = None;
            }
            Some((indent, mut block)) => {
                let cut = (line.len() - trimmed.len()).min(indent);
                block.lines.push(line[cut..].to_string());
                open = Some((indent, block));
            }
        }
    }
    found
}
