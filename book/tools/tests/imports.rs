//! Checks that within each chapter the arrows between files run one way: no two files of a
//! chapter refer to each other.
//!
//! A reader opens a chapter at `main.rs` and goes down: the loop, then what the loop stands
//! on. Two files that each take something from the other have no bottom to start from (as
//! `event_loop.rs` and `poll_backend.rs` once did in chapters 3-7: the loop called the
//! backend, the backend took `Token` and `Interest` from the loop). What both need belongs
//! below both, as mio keeps `Token` and `Interest` beside its selector.
//!
//! For every `chapters/*/src/**/*.rs`, the test finds the module it is (by following `mod`
//! declarations down from `main.rs`, `#[path]` included, so a `foo_tests.rs` is the module
//! `foo::tests`), and collects the files it refers to, outside comments and string literals:
//!
//! - a `crate::` path (`use crate::timers::TimerId`, `crate::fs::Chunk`, `use crate::{Effect,
//!   Server}`): the deepest module the path names, or the crate root, `main.rs`, for an item
//!   of the root itself (`crate::Server`);
//! - a `super::` path: the module above the file's own (`main.rs` for a top-level module,
//!   `connection.rs` for `connection/download.rs`, `event_loop.rs` for its `#[path]` test
//!   file), or the deepest module the rest of the path names from there (`super::timers`).
//!   Inside an inline `mod tests { .. }`, one `super` only leaves that block: the same file.
//!
//! Not counted: `mod` declarations, and paths a module writes relative to itself, as
//! `main.rs` writes `use connection::Connection` and `connection.rs` `use download::Download`.
//! That is a parent using the children it declares, the arrow down the tree. So `main.rs`
//! counts like any other file: a module that names `crate::Server` points up at it, and
//! that is a pair only if `main.rs` names that module back by a `crate::` path.
//!
//! The test fails for every pair of files of one chapter that refer to each other, naming
//! the chapter and both files (a longer loop, a -> b -> c -> a, is not looked for), and for
//! a source file that no `mod` declares, which it could not place.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root: this package is `book/tools/` inside it.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the book's tools live inside the repository")
        .to_path_buf()
}

/// One file of a chapter: the module it is (`[]` for the crate root, `["connection",
/// "download"]`...), and its text with comments and literals blanked out.
struct Module {
    path: Vec<String>,
    file: PathBuf,
    code: String,
}

/// `text` with comments, string literals and character literals replaced by spaces (line
/// ends kept), so that what looks like a path inside them is not taken for one.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let at = |k: usize| chars.get(k).copied();
        if chars[i] == '/' && at(i + 1) == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if chars[i] == '/' && at(i + 1) == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if chars[i] == 'r'
            && (at(i + 1) == Some('"') || at(i + 1) == Some('#'))
            && !i.checked_sub(1).is_some_and(|p| chars[p].is_alphanumeric() || chars[p] == '_')
        {
            // A raw string: r"..." or r#"..."#, no escapes inside.
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(chars[i]);
                i += 1;
                continue;
            }
            j += 1;
            let closing: String = std::iter::once('"').chain("#".repeat(hashes).chars()).collect();
            while j < chars.len() && !chars[j..].iter().collect::<String>().starts_with(&closing) {
                j += 1;
            }
            let end = (j + closing.len()).min(chars.len());
            chars[i..end].iter().for_each(|&c| out.push(blank(c)));
            i = end;
        } else if chars[i] == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if chars[i] == '\'' && (at(i + 1) == Some('\\') || at(i + 2) == Some('\'')) {
            // A character literal ('"', '\'', '\n'); a lifetime ('a) has no closing quote.
            let mut j = i + 1;
            if chars.get(j) == Some(&'\\') {
                j += 1;
            }
            j += 1;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            (i..=j.min(chars.len() - 1)).for_each(|_| out.push(' '));
            i = j + 1;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The `mod NAME;` declarations of a file (code only), with the `#[path = ".."]` written
/// before each, if any: `(name, path)`.
fn declared_modules(text: &str, code: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let lines: Vec<&str> = code.lines().collect();
    let originals: Vec<&str> = text.lines().collect();
    for (number, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = match words.as_slice() {
            ["mod", ..] => 1,
            ["pub", "mod", ..] | [_, "mod", ..] if words[0].starts_with("pub") => 2,
            _ => continue,
        };
        let Some(name) = words.get(at).and_then(|word| word.strip_suffix(';')) else {
            continue; // an inline `mod name {`
        };
        // `#[path = "file.rs"]` on one of the attribute lines just above.
        let mut path = None;
        for above in originals[..number].iter().rev() {
            let above = above.trim();
            if !above.starts_with("#[") {
                break;
            }
            if let Some(rest) = above.strip_prefix("#[path") {
                path = rest.split('"').nth(1).map(str::to_string);
            }
        }
        found.push((name.to_string(), path));
    }
    found
}

/// Every module of the chapter whose sources are in `src`, from `main.rs` down.
fn modules(src: &Path) -> Vec<Module> {
    let mut found = Vec::new();
    let mut to_read = vec![(Vec::<String>::new(), src.join("main.rs"))];
    while let Some((path, file)) = to_read.pop() {
        let text = fs::read_to_string(&file)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", file.display()));
        let code = code_only(&text);
        // Where this module's children live: beside `main.rs` or a `mod.rs`, else in a
        // folder named after the module (`connection.rs` -> `connection/`).
        let folder = file.parent().expect("a file is in a folder").to_path_buf();
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let children =
            if path.is_empty() || stem == "mod" { folder.clone() } else { folder.join(&stem) };
        for (name, explicit) in declared_modules(&text, &code) {
            let child = match explicit {
                // `#[path]` outside an inline module is relative to this file's folder.
                Some(explicit) => folder.join(explicit),
                None if children.join(format!("{name}.rs")).exists() => {
                    children.join(format!("{name}.rs"))
                }
                None => children.join(&name).join("mod.rs"),
            };
            let mut child_path = path.clone();
            child_path.push(name);
            to_read.push((child_path, child));
        }
        found.push(Module { path, file, code });
    }
    found
}

/// The paths that follow each `prefix` (`crate::` or `super::`) in `code`, each as its
/// segments; a group (`crate::{a::B, c}`) gives one path per member. For `super::`, the
/// number of `super`s in a row comes first, as a segment of its own (`"super*2"`), along
/// with how many inline `mod .. {` blocks the occurrence sits in.
fn paths_after(code: &str, prefix: &str) -> Vec<(Vec<String>, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut depth_stack: Vec<bool> = Vec::new(); // per open brace: is it an inline module?
    let mut inline_depth = 0;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '{' => {
                let inline = opens_inline_module(&chars, i);
                inline_depth += usize::from(inline);
                depth_stack.push(inline);
            }
            '}' => inline_depth -= usize::from(depth_stack.pop() == Some(true)),
            _ => {}
        }
        let starts_here = chars[i..].iter().take(prefix.len()).copied().eq(prefix.chars())
            && !i.checked_sub(1).is_some_and(|p| is_ident(chars[p]) || chars[p] == ':');
        if !starts_here {
            i += 1;
            continue;
        }
        let mut j = i + prefix.len();
        let mut lead = Vec::new();
        if prefix == "super::" {
            let mut supers = 1;
            while chars[j..].iter().take(7).copied().eq("super::".chars()) {
                supers += 1;
                j += 7;
            }
            lead.push(format!("super*{supers}"));
        }
        let (paths, end) = parse_tree(&chars, j);
        for mut path in paths {
            let mut full = lead.clone();
            full.append(&mut path);
            found.push((full, inline_depth));
        }
        i = end.max(i + 1);
    }
    found
}

/// Is the `{` at `i` the start of an inline module, `mod name {`?
fn opens_inline_module(chars: &[char], i: usize) -> bool {
    let before: String = chars[i.saturating_sub(80)..i].iter().collect();
    let words: Vec<&str> = before.split_whitespace().rev().take(2).collect();
    words.len() == 2 && words[1] == "mod" && words[0].chars().all(is_ident)
}

/// Parses a use tree starting at `start` (`a::b::C`, `a::{b, c::D}`, `*`), returning each
/// path it names and where it ends.
fn parse_tree(chars: &[char], start: usize) -> (Vec<Vec<String>>, usize) {
    let mut i = start;
    let mut segments = Vec::new();
    loop {
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        if chars.get(i) == Some(&'{') {
            let mut paths = Vec::new();
            i += 1;
            loop {
                let (members, end) = parse_tree(chars, i);
                for member in members {
                    let mut path = segments.clone();
                    path.extend(member);
                    paths.push(path);
                }
                i = end;
                while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    i += 1;
                }
                if chars.get(i) != Some(&'}') && i < chars.len() {
                    continue;
                }
                return (paths, i + 1);
            }
        }
        let begin = i;
        while chars.get(i).is_some_and(|c| is_ident(*c) || *c == '*') {
            i += 1;
        }
        if i == begin {
            return (vec![segments], i);
        }
        segments.push(chars[begin..i].iter().collect());
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            return (vec![segments], i);
        }
    }
}

/// The file of the deepest module that `segments` name, starting from module `from`.
fn resolve<'m>(modules: &'m [Module], from: &[String], segments: &[String]) -> &'m Module {
    let mut best = from.to_vec();
    let mut candidate = from.to_vec();
    for segment in segments {
        candidate.push(segment.clone());
        if modules.iter().any(|module| module.path == candidate) {
            best = candidate.clone();
        } else {
            break;
        }
    }
    modules.iter().find(|module| module.path == best).expect("a module on the way is known")
}

/// For one chapter: each file, and the files it refers to, with the first path that does.
fn references(src: &Path) -> BTreeMap<PathBuf, BTreeMap<PathBuf, String>> {
    let modules = modules(src);
    let mut found: BTreeMap<PathBuf, BTreeMap<PathBuf, String>> = BTreeMap::new();
    for module in &modules {
        let refers = found.entry(module.file.clone()).or_default();
        for (segments, _) in paths_after(&module.code, "crate::") {
            let target = resolve(&modules, &[], &segments);
            let shown = format!("crate::{}", segments.join("::"));
            refers.entry(target.file.clone()).or_insert(shown);
        }
        for (segments, inline_depth) in paths_after(&module.code, "super::") {
            let supers: usize =
                segments[0].trim_start_matches("super*").parse().expect("a count of supers");
            // The first `super`s only climb out of inline blocks, inside the same file.
            let Some(up) = supers.checked_sub(inline_depth).filter(|&up| up > 0) else {
                continue;
            };
            let Some(from) = module.path.len().checked_sub(up) else { continue };
            let target = resolve(&modules, &module.path[..from], &segments[1..]);
            let shown = format!("{}{}", "super::".repeat(supers), segments[1..].join("::"));
            refers.entry(target.file.clone()).or_insert(shown);
        }
        refers.remove(&module.file);
    }
    found
}

/// What is wrong with the chapter whose sources are in `src`: each pair of files that refer
/// to each other, and each source file no `mod` declares (which the check could not read).
fn problems(src: &Path) -> Vec<String> {
    let found = references(src);
    let mut problems = Vec::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).expect("a source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs")
                && !found.contains_key(&path)
            {
                problems.push(format!("{}: no `mod` declares it", path.display()));
            }
        }
    }
    let name = |file: &Path| file.strip_prefix(src).unwrap_or(file).display().to_string();
    for (file, refers) in &found {
        for (other, how) in refers {
            let Some(back) = found.get(other).and_then(|theirs| theirs.get(file)) else {
                continue;
            };
            if file < other {
                let (a, b) = (name(file), name(other));
                problems.push(format!(
                    "{a} and {b} refer to each other ({a} has `{how}`, {b} has `{back}`)"
                ));
            }
        }
    }
    problems
}

#[test]
fn no_two_files_of_a_chapter_refer_to_each_other() {
    let mut chapters: Vec<PathBuf> = fs::read_dir(repository().join("chapters"))
        .expect("the chapters folder")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("src/main.rs").exists())
        .collect();
    chapters.sort();
    assert!(chapters.len() >= 3, "found the chapters: {chapters:?}");
    let mut problems = Vec::new();
    for chapter in &chapters {
        let name = chapter.file_name().unwrap_or_default().to_string_lossy();
        problems
            .extend(self::problems(&chapter.join("src")).iter().map(|p| format!("{name}: {p}")));
    }
    assert!(problems.is_empty(), "arrows that run both ways:\n{}", problems.join("\n"));
}

/// The check itself, on a small made-up chapter: it must see each kind of path, and the
/// pair it is there to find.
#[test]
fn the_check_sees_crate_and_super_paths_and_skips_comments() {
    let folder = std::env::temp_dir().join(format!("imports-check-{}", std::process::id()));
    let src = folder.join("src");
    fs::create_dir_all(src.join("connection")).expect("a temporary folder");
    let write =
        |name: &str, lines: &[&str]| fs::write(src.join(name), lines.join("\n")).expect("a file");
    write(
        "main.rs",
        &["mod connection;", "mod event_loop;", "mod poll_backend;", "use connection::C;"],
    );
    write(
        "event_loop.rs",
        &[
            "use crate::poll_backend::{self, Token};",
            "#[cfg(test)]",
            "#[path = \"event_loop_tests.rs\"]",
            "mod tests;",
        ],
    );
    write("event_loop_tests.rs", &["use super::*;"]);
    write(
        "poll_backend.rs",
        &[
            "// use crate::connection;",
            "const A: &str = \"crate::connection\";",
            "pub fn wait() -> crate::event_loop::Token { todo!() }",
        ],
    );
    write(
        "connection.rs",
        &[
            "mod download;",
            "use crate::{event_loop::EventLoop, S};",
            "#[cfg(test)]",
            "mod tests {",
            "    use super::*;",
            "}",
        ],
    );
    write("connection/download.rs", &["use super::Connection;"]);

    let found = references(&src);
    let refers = |from: &str| -> Vec<String> {
        let refers = found.get(&src.join(from)).expect("the file was read");
        refers
            .keys()
            .map(|file| file.strip_prefix(&src).expect("inside").display().to_string())
            .collect()
    };
    assert_eq!(refers("main.rs"), Vec::<String>::new(), "relative paths down the tree");
    assert_eq!(refers("event_loop.rs"), ["poll_backend.rs"]);
    assert_eq!(refers("event_loop_tests.rs"), ["event_loop.rs"], "super of a #[path] test");
    assert_eq!(refers("poll_backend.rs"), ["event_loop.rs"], "not the comment or the string");
    assert_eq!(refers("connection.rs"), ["event_loop.rs", "main.rs"], "a group; inline super");
    assert_eq!(refers("connection/download.rs"), ["connection.rs"]);
    let pair = "event_loop.rs and poll_backend.rs refer to each other (event_loop.rs has \
                `crate::poll_backend::self`, poll_backend.rs has `crate::event_loop::Token`)";
    assert_eq!(problems(&src), [pair]);
    let _ = fs::remove_dir_all(&folder);
}
