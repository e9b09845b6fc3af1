//! The answers' Rust, built against the chapters they answer.
//!
//! A block of Rust in `book/src/answers/chNN.md` is code the reader is told to write into
//! chapter NN. Unless it is marked `ignore`, it is put there, in a copy of the chapter: each
//! item of the block (a `fn`, a `struct`, a method...) takes the place of the chapter's item
//! of the same name, in the file that defines it, or is added at the end of a file if the
//! chapter has none (`main.rs`, or the file a `<!-- in: FILE.rs -->` line before the block
//! names). Then every copy is type-checked, all of them in one `cargo check`, in a
//! workspace of their own under the test's target folder, so that a second run rebuilds
//! only what changed.
//!
//! A block that cannot be built so (a fragment of a function, a diff, code for another
//! system) says why in the line before it: `<!-- ignore: a fragment of EventLoop::turn -->`,
//! and its fence says `rust,ignore`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::code::{placed_tokens, Token};
use crate::pages::{blocks, chapter_folders, read, repository};

/// One item of a piece of Rust, and where its text is (byte offsets), with its doc
/// comments and attributes.
#[derive(Debug, PartialEq, Eq)]
pub struct Item {
    /// `fn`, `struct`, `impl`, `use`, ...
    pub keyword: String,
    /// Its name (for `impl`, its header: `impl Handler<Server> for Connection`; for `use`,
    /// its text).
    pub name: String,
    /// For a `fn`: whether it takes `self`, a method.
    pub method: bool,
    pub start: usize,
    pub end: usize,
}

const ITEM_KEYWORDS: &[&str] =
    &["fn", "struct", "enum", "trait", "type", "const", "static", "impl", "use", "mod", "union"];
const MODIFIERS: &[&str] = &["pub", "crate", "async", "const", "unsafe", "extern", "super", "in"];

/// The items of `source`: at the top only, or at every depth (methods inside `impl`s).
pub fn items(source: &str, every_depth: bool) -> Vec<Item> {
    let tokens = placed_tokens(source);
    let bytes: Vec<usize> = source.char_indices().map(|(at, _)| at).chain([source.len()]).collect();
    let byte = |char_offset: usize| bytes[char_offset.min(bytes.len() - 1)];
    let mut found = Vec::new();
    let mut depth = 0usize;
    let mut index = 0;
    while index < tokens.len() {
        let (_, token) = &tokens[index];
        match token {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => depth = depth.saturating_sub(1),
            Token::Word(keyword)
                if ITEM_KEYWORDS.contains(&keyword.as_str()) && (every_depth || depth == 0) =>
            {
                // `const fn` and `pub(crate) const` are one item, read from its first word.
                let is_modifier_const = keyword == "const"
                    && matches!(tokens.get(index + 1), Some((_, Token::Word(w))) if w == "fn" || w == "unsafe");
                // An item starts a file, or follows another item, a block, an attribute or
                // a modifier; `impl` anywhere else is a type (`-> impl Future`).
                let starts_item = index == 0
                    || match &tokens[index - 1].1 {
                        Token::Word(w) => MODIFIERS.contains(&w.as_str()),
                        Token::Punct(c) => matches!(c, '}' | ';' | '{' | ']' | ')'),
                        Token::Text(_) => false,
                    };
                if is_modifier_const || !starts_item {
                    index += 1;
                    continue;
                }
                // Back over the modifiers (`pub(crate) async`) to the start of its line, then
                // over the doc comments and attributes above it.
                let mut first = index;
                while first > 0 {
                    match &tokens[first - 1].1 {
                        Token::Word(w) if MODIFIERS.contains(&w.as_str()) => first -= 1,
                        Token::Punct('(' | ')')
                            if matches!(tokens.get(first.wrapping_sub(2)), Some((_, Token::Word(w))) if w == "pub" || w == "crate" || w == "super" || w == "in")
                                || matches!(&tokens[first - 1].1, Token::Punct(')')) =>
                        {
                            first -= 1
                        }
                        _ => break,
                    }
                }
                let mut start = byte(tokens[first].0);
                start = source[..start].rfind('\n').map_or(0, |line| line + 1);
                while start > 0 {
                    let previous = source[..start - 1].rfind('\n').map_or(0, |line| line + 1);
                    let line = source[previous..start].trim();
                    if line.starts_with("///") || line.starts_with("#[") || line.starts_with("#![")
                    {
                        start = previous;
                    } else {
                        break;
                    }
                }
                // Forward to its end: a `;` at its own depth, or the `}` that closes it.
                let mut nesting = 0i32;
                let mut end_token = index;
                let mut header = Vec::new();
                for (offset, (_, token)) in tokens.iter().enumerate().skip(index) {
                    end_token = offset;
                    match token {
                        Token::Punct('(' | '[') => nesting += 1,
                        Token::Punct(')' | ']') => nesting -= 1,
                        Token::Punct('{') => {
                            if nesting == 0 && header.last() != Some(&"{".to_string()) {
                                header.push("{".to_string());
                            }
                            nesting += 1;
                        }
                        Token::Punct('}') => {
                            nesting -= 1;
                            if nesting == 0 {
                                break;
                            }
                        }
                        Token::Punct(';') if nesting == 0 => break,
                        _ => {}
                    }
                    if !header.contains(&"{".to_string()) {
                        header.push(match token {
                            Token::Word(w) => w.clone(),
                            Token::Text(t) => format!("\"{t}\""),
                            Token::Punct(c) => c.to_string(),
                        });
                    }
                }
                let end = byte(tokens[end_token].0 + 1);
                let name = match keyword.as_str() {
                    "impl" | "use" => header
                        .iter()
                        .filter(|piece| *piece != "{")
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" ")
                        .replace(": :", "::"),
                    _ => match tokens.get(index + 1) {
                        Some((_, Token::Word(name))) if name == "mut" => {
                            match tokens.get(index + 2) {
                                Some((_, Token::Word(name))) => name.clone(),
                                _ => String::new(),
                            }
                        }
                        Some((_, Token::Word(name))) => name.clone(),
                        _ => String::new(),
                    },
                };
                // A method's first parameter is `self`, `&self`, `&mut self` or `mut self`.
                let method = keyword == "fn"
                    && tokens[index..end_token]
                        .iter()
                        .skip_while(|(_, token)| *token != Token::Punct('('))
                        .skip(1)
                        .take_while(|(_, token)| !matches!(token, Token::Punct(',' | ')')))
                        .any(|(_, token)| *token == Token::Word("self".to_string()));
                found.push(Item { keyword: keyword.clone(), name, method, start, end });
                if !every_depth || !["impl", "trait", "mod"].contains(&keyword.as_str()) {
                    // Skip its body; but go on into an impl's, for its methods.
                    index = end_token + 1;
                    continue;
                }
            }
            _ => {}
        }
        index += 1;
    }
    found
}

/// A block of an answer that is to be built.
pub struct Built {
    /// `book/src/answers/ch03.md:95`.
    pub place: String,
    /// The chapter's folder, from the root.
    pub chapter: String,
    pub code: String,
    /// The file of the chapter new items go to, if the page says.
    pub file: Option<String>,
    /// The type whose `impl` block new methods go to, if the page says.
    pub impl_of: Option<String>,
}

/// What is wrong with how the answers mark their blocks, and the blocks to build.
pub fn answer_blocks() -> (Vec<Built>, Vec<String>) {
    let mut problems = Vec::new();
    let mut built = Vec::new();
    let chapters: BTreeMap<u32, String> = chapter_folders().into_iter().collect();
    let folder = repository().join("book/src/answers");
    let mut pages: Vec<PathBuf> = fs::read_dir(&folder)
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    pages.sort();
    for page in pages {
        let name = page.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(number) =
            name.strip_prefix("ch").and_then(|rest| rest.get(..2)?.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(chapter) = chapters.get(&number) else { continue };
        let text = read(&page);
        for block in blocks(&text) {
            let attributes: Vec<&str> = block.info.split(',').map(str::trim).collect();
            if attributes.first() != Some(&"rust") {
                continue;
            }
            let place = format!("book/src/answers/{name}:{}", block.line);
            let comment = block
                .before
                .as_deref()
                .and_then(|line| line.strip_prefix("<!--"))
                .and_then(|line| line.strip_suffix("-->"))
                .map(str::trim);
            let reason = comment.and_then(|comment| comment.strip_prefix("ignore:")).map(str::trim);
            if attributes.contains(&"ignore") {
                if reason.is_none_or(|reason| reason.split_whitespace().count() < 3) {
                    problems.push(format!(
                        "{place}: a block marked `ignore` says why it cannot be built against \
                         {chapter}, in the line before it: `<!-- ignore: a fragment of ... -->`"
                    ));
                }
                continue;
            }
            if reason.is_some() {
                problems.push(format!(
                    "{place}: the line before says `ignore:`, but the fence is not `rust,ignore`"
                ));
            }
            // `<!-- in: promise.rs -->`, or `<!-- in: promise.rs, impl Promise -->`.
            let target = comment.and_then(|comment| comment.strip_prefix("in:")).map(str::trim);
            let (file, impl_of) = match target.map(|target| target.split_once(", impl ")) {
                Some(Some((file, type_name))) => {
                    (Some(file.trim().to_string()), Some(type_name.trim().to_string()))
                }
                Some(None) => (target.map(str::to_string), None),
                None => (None, None),
            };
            built.push(Built {
                place,
                chapter: chapter.clone(),
                code: block.lines.join("\n") + "\n",
                file,
                impl_of,
            });
        }
    }
    (built, problems)
}

/// The chapter's `src/` files, by path inside `src/`.
fn sources(root: &Path, chapter: &str) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let src = root.join(chapter).join("src");
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let relative =
                    path.strip_prefix(&src).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                files.insert(relative, fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// The chapter's sources with `block` put in: where each of its items goes, said in words
/// for a message, and the files.
pub fn apply(
    root: &Path, block: &Built,
) -> Result<(BTreeMap<String, String>, Vec<String>), String> {
    let mut files = sources(root, &block.chapter);
    let mut placed = Vec::new();
    if let Some(file) = &block.file {
        if !files.contains_key(file) {
            return Err(format!("`<!-- in: {file} -->`, but {} has no src/{file}", block.chapter));
        }
    }
    let default_file = block.file.clone().unwrap_or_else(|| "main.rs".to_string());
    for item in items(&block.code, false) {
        let text = &block.code[item.start..item.end];
        if item.keyword == "use" {
            let target = files.get_mut(&default_file).expect("checked above, or main.rs");
            if !target.contains(text.trim()) {
                let at = target.find("\nuse ").map_or(0, |at| at + 1);
                target.insert_str(at, &format!("{}\n", text.trim()));
            }
            continue;
        }
        // The chapter's item of the same kind and name, wherever it is.
        let mut home = None;
        let mut order: Vec<String> = files.keys().cloned().collect();
        if let Some(position) = order.iter().position(|name| *name == default_file) {
            let first = order.remove(position);
            order.insert(0, first);
        }
        for name in order {
            let found = items(&files[&name], true).into_iter().find(|other| {
                other.keyword == item.keyword
                    && other.name == item.name
                    && other.method == item.method
                    && !item.name.is_empty()
            });
            if let Some(found) = found {
                home = Some((name, found));
                break;
            }
        }
        match home {
            Some((name, found)) => {
                let file = files.get_mut(&name).expect("found in it");
                file.replace_range(found.start..found.end, text);
                placed.push(format!("`{}` replaces the chapter's, in src/{name}", item.name));
            }
            None if item.method => {
                // A new method: at the end of the `impl` the page names.
                let Some(type_name) = &block.impl_of else {
                    return Err(format!(
                        "`{}` is a new method: say whose, `<!-- in: FILE.rs, impl TYPE -->`",
                        item.name
                    ));
                };
                let file = files.get_mut(&default_file).expect("checked above, or main.rs");
                let block_of = items(file, true).into_iter().find(|other| {
                    other.keyword == "impl"
                        && !other.name.contains(" for ")
                        && other.name.split_whitespace().any(|word| word == type_name)
                });
                let Some(block_of) = block_of else {
                    return Err(format!("src/{default_file} has no `impl {type_name}`"));
                };
                let closing = file[..block_of.end].rfind('}').expect("an impl block ends with }");
                file.insert_str(closing, &format!("\n{text}\n"));
                placed.push(format!(
                    "`{}` is added to `impl {type_name}` in src/{default_file}",
                    item.name
                ));
            }
            None => {
                let file = files.get_mut(&default_file).expect("checked above, or main.rs");
                file.push('\n');
                file.push_str(text);
                file.push('\n');
                placed.push(format!("`{}` is added to src/{default_file}", item.name));
            }
        }
    }
    if placed.is_empty() {
        return Err("no item (fn, struct, impl...) in it: a fragment? Mark it `ignore`".to_string());
    }
    Ok((files, placed))
}

/// Writes `text` to `path` only if it differs, so that cargo sees no change where there is
/// none.
fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).ok().as_deref() == Some(text) {
        return;
    }
    if let Some(folder) = path.parent() {
        fs::create_dir_all(folder)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", folder.display()));
    }
    fs::write(path, text)
        .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
}

/// The section of a TOML file that opens with `head` (`[workspace.dependencies]`), as it
/// is written, without the head.
fn section<'a>(toml: &'a str, head: &str) -> Vec<&'a str> {
    toml.lines()
        .skip_while(|line| line.trim() != head)
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .collect()
}

/// Builds every block, each in a copy of its chapter; the problems, with the compiler's
/// first errors for each block that does not build.
pub fn build(blocks: &[Built], workspace: &Path) -> Vec<String> {
    let root = repository();
    let mut problems = Vec::new();
    let mut members = Vec::new();
    let mut where_placed = BTreeMap::new();
    for (index, block) in blocks.iter().enumerate() {
        let (files, placed) = match apply(&root, block) {
            Ok(applied) => applied,
            Err(why) => {
                problems.push(format!("{}: {why}", block.place));
                continue;
            }
        };
        let member = format!("answer-{index:02}");
        let manifest = read(&root.join(&block.chapter).join("Cargo.toml"));
        let dependencies = section(&manifest, "[dependencies]").join("\n");
        write_if_changed(
            &workspace.join(&member).join("Cargo.toml"),
            &format!(
                "# {} built into a copy of {}\n[package]\nname = \"{member}\"\nversion = \"0.0.0\"\n\
                 edition.workspace = true\npublish = false\n\n[dependencies]\n{dependencies}\n",
                block.place, block.chapter
            ),
        );
        for (name, text) in &files {
            write_if_changed(&workspace.join(&member).join("src").join(name), text);
        }
        where_placed.insert(member.clone(), (block, placed));
        members.push(member);
    }
    if members.is_empty() {
        return problems;
    }
    // Copies of blocks that are gone would be built for nothing.
    for entry in fs::read_dir(workspace).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("answer-") && !members.contains(&name) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
    let workspace_toml = read(&root.join("Cargo.toml"));
    let shared = root.join("shared").to_string_lossy().into_owned();
    let dependencies = section(&workspace_toml, "[workspace.dependencies]")
        .join("\n")
        .replace("path = \"shared\"", &format!("path = {shared:?}"));
    let package = section(&workspace_toml, "[workspace.package]").join("\n");
    let members_list: Vec<String> = members.iter().map(|member| format!("{member:?}")).collect();
    write_if_changed(
        &workspace.join("Cargo.toml"),
        &format!(
            "# The answers' Rust blocks, each built into a copy of its chapter by\n\
             # book/tools/tests/prose/answers.rs. Made by the test; nothing here is edited by \
             hand.\n\
             [workspace]\nresolver = \"2\"\nmembers = [{}]\n\n[workspace.package]\n{package}\n\n\
             [workspace.dependencies]\n{dependencies}\n",
            members_list.join(", ")
        ),
    );
    if !workspace.join("Cargo.lock").is_file() {
        let _ = fs::copy(root.join("Cargo.lock"), workspace.join("Cargo.lock"));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["check", "--offline", "--workspace", "--quiet", "--message-format", "short"])
        .current_dir(workspace)
        .env("CARGO_TARGET_DIR", workspace.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap_or_else(|error| panic!("cannot run cargo check: {error}"));
    if output.status.success() {
        return problems;
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in stderr.lines().filter(|line| line.contains("error")) {
        let member = members.iter().find(|member| {
            line.starts_with(&format!("{member}/")) || line.contains(&format!("`{member}`"))
        });
        match member {
            Some(member) => errors.entry(member.clone()).or_default().push(line.to_string()),
            None => errors.entry(String::new()).or_default().push(line.to_string()),
        }
    }
    for (member, lines) in errors {
        let shown: Vec<String> = lines
            .iter()
            .filter(|line| !line.starts_with("error: could not compile"))
            .take(4)
            .cloned()
            .collect();
        match where_placed.get(&member) {
            Some((block, placed)) => problems.push(format!(
                "{}: does not build against {} ({}):\n      {}",
                block.place,
                block.chapter,
                placed.join("; "),
                shown.join("\n      ").replace(&format!("{member}/"), "")
            )),
            None => problems.push(format!(
                "cargo check of the answers failed:\n      {}",
                lines.join("\n      ")
            )),
        }
    }
    problems
}
