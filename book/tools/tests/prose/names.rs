//! Names in backticks, and whether the code has them.
//!
//! What counts as a code name: a span that reads as a Rust path or expression,
//! `Buffer::consume`, `read_to`, `HELD_AT_MOST`, `self.received.consume(n)`, `log!`,
//! `EventLoop<S>`, `&mut Connection`, `files::open(root, path, delay)`: identifiers joined
//! by `::` or `.`, perhaps with generic arguments, a call's arguments or a `!` after them.
//! Not a code name: anything with a space outside brackets (a command, a header, a line of
//! output), a flag (`--trace`), a path or URL (`/stats`, `shared/src/`), a file name
//! (`main.rs`), a number, a keyword or a primitive type, a single letter (a generic `S`).

use std::collections::{BTreeMap, BTreeSet};

use crate::code::{is_keyword, Code, FileIndex, Kind};

/// A code name, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// `Buffer`, `consume` for `Buffer::consume`; `self`, `received`, `consume` for
    /// `self.received.consume(n)`.
    pub segments: Vec<String>,
    /// Whether the segments are joined by `::` (a path) rather than `.` (an expression).
    pub path: bool,
    /// Names inside generic arguments: `Handler` in `Box<dyn Handler<S>>`.
    pub inner: Vec<String>,
}

impl Name {
    pub fn text(&self) -> String {
        self.segments.join(if self.path { "::" } else { "." })
    }
}

const PRIMITIVES: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64", "bool", "char", "str",
];

/// Extensions that make `a.b` a file name rather than an expression.
const FILE_EXTENSIONS: &[&str] = &[
    "rs", "md", "toml", "c", "h", "py", "txt", "html", "css", "json", "svg", "sh", "lock", "bin",
    "diff", "js", "d",
];

/// The end of a bracketed run that opens at `chars[start]`, or `None` if it never closes.
fn closing(chars: &[char], start: usize) -> Option<usize> {
    let (open, close) = match chars[start] {
        '(' => ('(', ')'),
        '<' => ('<', '>'),
        '[' => ('[', ']'),
        _ => return None,
    };
    let mut depth = 0;
    for (index, c) in chars.iter().enumerate().skip(start) {
        if *c == open {
            depth += 1;
        } else if *c == close && !(close == '>' && index > 0 && chars[index - 1] == '-') {
            depth -= 1;
            if depth == 0 {
                return Some(index);
            }
        }
    }
    None
}

fn words_in(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| word.len() > 1 && word.starts_with(|c: char| c.is_alphabetic()))
        .filter(|word| !is_keyword(word) && !PRIMITIVES.contains(word))
        .map(str::to_string)
        .collect()
}

/// The code name a span's text is, if it is one.
pub fn code_name(span: &str) -> Option<Name> {
    let mut text = span.trim();
    for prefix in ["&mut ", "&", "*", "mut ", "dyn ", "impl ", "pub ", "fn "] {
        text = text.strip_prefix(prefix).unwrap_or(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut segments = Vec::new();
    let mut inner = Vec::new();
    let mut separators = BTreeSet::new();
    let mut index = 0;
    loop {
        // An identifier.
        let start = index;
        while index < chars.len() && (chars[index].is_alphanumeric() || chars[index] == '_') {
            index += 1;
        }
        if index == start || !(chars[start].is_alphabetic() || chars[start] == '_') {
            return None;
        }
        segments.push(chars[start..index].iter().collect::<String>());
        // What may follow it: `::<...>`, `<...>`, `(...)`, `[...]`, `!`, `?`.
        loop {
            if chars[index..].starts_with(&[':', ':', '<']) {
                index += 2;
            }
            match chars.get(index) {
                Some('<' | '(' | '[') => {
                    let end = closing(&chars, index)?;
                    if chars[index] == '<' {
                        inner.extend(words_in(&chars[index + 1..end].iter().collect::<String>()));
                    }
                    index = end + 1;
                }
                Some('!' | '?') => index += 1,
                _ => break,
            }
        }
        if index == chars.len() {
            break;
        }
        if chars[index..].starts_with(&[':', ':']) {
            separators.insert("::");
            index += 2;
        } else if chars[index] == '.' {
            separators.insert(".");
            index += 1;
        } else {
            return None;
        }
    }
    if separators.len() > 1 {
        // `a::b.c`: an expression on a path; check its words one by one.
        separators.clear();
        separators.insert(".");
    }
    let path = separators.contains("::");
    if segments.len() == 1 {
        let only = &segments[0];
        if only.chars().count() == 1 || is_keyword(only) || PRIMITIVES.contains(&only.as_str()) {
            return None;
        }
    }
    if !path && segments.len() > 1 {
        let last = segments.last().map(String::as_str).unwrap_or_default();
        if FILE_EXTENSIONS.contains(&last) {
            return None; // a file name
        }
    }
    Some(Name { segments, path, inner })
}

/// The names the book may write that are not in our code, from `book/names-outside.txt`.
pub struct Outside {
    /// Each name, with its group's title and the line it is on.
    pub names: BTreeMap<String, (String, usize)>,
    pub problems: Vec<String>,
}

pub const OUTSIDE_FILE: &str = "book/names-outside.txt";

/// Reads the allow-list: groups, each a line `== whose these names are, and why`,
/// then its names, separated by spaces, over as many lines as it takes; `#` lines are
/// comments.
pub fn outside(text: &str) -> Outside {
    let mut names = BTreeMap::new();
    let mut problems = Vec::new();
    let mut group: Option<String> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(why) = line.strip_prefix("==") {
            let why = why.trim();
            if why.split_whitespace().count() < 3 {
                problems.push(format!(
                    "{OUTSIDE_FILE}:{number}: a group's line says, in a few words, why its \
                     names are not ours: `== whose they are, and why a page names them`"
                ));
            }
            group = Some(why.to_string());
            continue;
        }
        let Some(title) = &group else {
            problems.push(format!("{OUTSIDE_FILE}:{number}: a name before the first `==` group"));
            continue;
        };
        for name in line.split_whitespace() {
            if let Some((other, at)) = names.get(name) {
                problems.push(format!(
                    "{OUTSIDE_FILE}:{number}: `{name}` is listed twice (also on line {at}, in \
                     \"{other}\"): keep one"
                ));
            } else {
                names.insert(name.to_string(), (title.clone(), number));
            }
        }
    }
    Outside { names, problems }
}

/// The code a page speaks of: the files of `code` under its scope.
pub struct Scope<'a> {
    pub code: &'a Code,
    pub roots: &'a [String],
    /// The page's own code blocks, as one more file: a name an answer's code defines is
    /// in the code the answer speaks of.
    pub own: &'a FileIndex,
}

/// The path the page's own code goes by, in [`Scope::files`].
const OWN: &str = "(the page's own code blocks)";
static OWN_PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();

impl Scope<'_> {
    fn files(&self) -> impl Iterator<Item = (&String, &FileIndex)> {
        let own = OWN_PATH.get_or_init(|| OWN.to_string());
        self.code
            .files
            .iter()
            .filter(|(path, _)| self.roots.iter().any(|root| path.starts_with(root.as_str())))
            .chain(std::iter::once((own, self.own)))
    }

    pub fn has_word(&self, word: &str) -> bool {
        self.files().any(|(_, file)| file.words.contains(word))
    }

    /// Is `text` (a path, `a::b`) written whole in the code, not as the tail of a longer
    /// name?
    fn has_path(&self, text: &str) -> bool {
        self.files().any(|(_, file)| {
            file.compact.match_indices(text).any(|(at, _)| {
                let before = file.compact[..at].chars().next_back();
                let after = file.compact[at + text.len()..].chars().next();
                let joins = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !joins(before) && !joins(after)
            })
        })
    }

    /// Files of the scope whose path ends with `file` (`bad_input.rs`,
    /// `probes/bad_input.rs`), with their `_tests.rs` siblings.
    pub fn files_named(&self, file: &str) -> Vec<&FileIndex> {
        let wanted = file.trim_start_matches("./");
        let tests = wanted.strip_suffix(".rs").map(|stem| format!("{stem}_tests.rs"));
        self.files()
            .filter(|(path, _)| {
                let ends = |name: &str| *path == name || path.ends_with(&format!("/{name}"));
                ends(wanted) || tests.as_deref().is_some_and(ends)
            })
            .map(|(_, file)| file)
            .collect()
    }

    /// Is `name` defined in the scope, owned by `owner` (a type, trait, enum or inline
    /// module), or at the top of a module file called `owner`?
    fn defines(&self, name: &str, owner: &str) -> bool {
        self.files().any(|(path, file)| {
            let stem = path.rsplit('/').next().unwrap_or_default().trim_end_matches(".rs");
            let module = stem == owner
                || (stem == "mod" && path.ends_with(&format!("{owner}/mod.rs")))
                || stem == format!("{owner}_tests");
            let own = *path == OWN;
            file.definitions.iter().any(|definition| {
                definition.name == name
                    && (own
                        || definition.owner.as_deref() == Some(owner)
                        || (module && definition.owner.is_none() && definition.kind != Kind::Local))
            })
        })
    }

    /// Is there a module called `name`: a file `name.rs`, a folder `name/`, or `mod name`?
    fn is_module(&self, name: &str) -> bool {
        self.files().any(|(path, file)| {
            path.ends_with(&format!("/{name}.rs"))
                || path.contains(&format!("/{name}/"))
                || file.definitions.iter().any(|d| d.name == name && d.kind == Kind::Item)
        })
    }

    /// Is `name` an item of some file, outside any type?
    fn defines_at_top(&self, name: &str) -> bool {
        self.files().any(|(_, file)| {
            file.definitions
                .iter()
                .any(|d| d.name == name && d.owner.is_none() && d.kind != Kind::Local)
        })
    }

    /// Why the code does not have `name`, or `None` when it does. `used` collects the
    /// outside names that vouched for a name.
    pub fn missing(
        &self, name: &Name, outside: &Outside, used: &mut BTreeSet<String>,
    ) -> Option<String> {
        let text = name.text();
        let mut allowed = |candidate: &str| {
            if outside.names.contains_key(candidate) {
                used.insert(candidate.to_string());
                true
            } else {
                false
            }
        };
        if allowed(&text) || allowed(&name.segments[0]) {
            return None;
        }
        let mut problems = Vec::new();
        if name.path {
            let first = &name.segments[0];
            let namespace = ["crate", "self", "super", "shared", "suite"].contains(&first.as_str());
            if !allowed(first) && !self.has_path(&text) {
                // `Type::member`, `module::item`: the last segment, defined in the one
                // before it; the ones before that, at least in the code.
                let (owner, last) = (
                    &name.segments[name.segments.len() - 2],
                    &name.segments[name.segments.len() - 1],
                );
                let owner_is_namespace = name.segments.len() == 2 && namespace;
                if owner_is_namespace {
                    // `shared::buffer`, `crate::connection`: a module, or an item at the top.
                    if !self.is_module(last) && !self.defines_at_top(last) {
                        problems.push(format!("no module or item `{last}` in `{owner}`"));
                    }
                } else if !self.has_word(owner) && !namespace {
                    problems.push(format!("no `{owner}` in the code"));
                } else if self.code.defines_anywhere(owner) {
                    if !self.defines(last, owner) {
                        problems.push(format!("`{owner}` has no `{last}`"));
                    }
                } else if !self.has_word(last) {
                    // An outside type our code uses (`Vec::drain`): its member, used too.
                    problems.push(format!("no `{last}` in the code"));
                }
            }
        } else {
            for segment in &name.segments {
                if segment == "self" || segment.chars().count() == 1 || is_keyword(segment) {
                    continue;
                }
                if !allowed(segment) && !self.has_word(segment) {
                    problems.push(format!("no `{segment}` in the code"));
                }
            }
        }
        for word in &name.inner {
            if word.chars().count() > 1 && !allowed(word) && !self.has_word(word) {
                problems.push(format!("no `{word}` in the code"));
            }
        }
        if problems.is_empty() {
            None
        } else {
            Some(problems.join("; "))
        }
    }

    /// Why `file` does not define `name`, or `None` when it does.
    pub fn missing_in_file(&self, name: &Name, file: &str) -> Option<String> {
        let files = self.files_named(file);
        if files.is_empty() {
            return Some(format!("no file {file} in the code this page speaks of"));
        }
        let last = name.segments.last().expect("a name has a segment");
        let owner = name.segments.len().checked_sub(2).map(|at| &name.segments[at]);
        let defined = files.iter().any(|index| {
            index.definitions.iter().any(|definition| {
                definition.name == *last
                    && (!name.path
                        || owner.is_none_or(|owner| {
                            definition.owner.as_deref() == Some(owner.as_str())
                                || file.trim_end_matches(".rs").ends_with(owner.as_str())
                        }))
            })
        });
        (!defined).then(|| format!("{file} defines no `{}`", name.text()))
    }
}

/// The file a span is said to be in: "`name` in `file.rs`", "`name` in its `file.rs`",
/// "`name` in chapter 4's file.rs", or before it, "file.rs's `name`". `after` is the prose
/// right after the span, `before` the prose right before it.
pub fn said_to_be_in(before: &str, after: &str) -> Option<String> {
    let file_at = |text: &str| -> Option<String> {
        let text = text.trim_start_matches('`');
        let file: String = text
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-'))
            .collect();
        let file = file.trim_end_matches('.');
        (file.ends_with(".rs") && file.len() > 3).then(|| file.to_string())
    };
    if let Some(rest) = after.strip_prefix(" in ") {
        let mut rest = rest;
        for word in ["its ", "the ", "their ", "shared's "] {
            rest = rest.strip_prefix(word).unwrap_or(rest);
        }
        if let Some(chapter) = rest.strip_prefix("chapter ") {
            let digits = chapter.chars().take_while(char::is_ascii_digit).count();
            if let Some(after_chapter) = chapter[digits..].strip_prefix("'s ") {
                rest = after_chapter;
            }
        }
        if let Some(file) = file_at(rest) {
            return Some(file);
        }
    }
    let before = before.strip_suffix("'s ")?;
    let before = before.strip_suffix('`').unwrap_or(before);
    let start = before
        .rfind(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-')))
        .map_or(0, |at| at + 1);
    file_at(&before[start..])
}

/// Between two spans of one list: "`a`, `b` and `c`".
pub fn joins_a_list(gap: &str) -> bool {
    [", ", " and ", ", and ", " or ", ", or "].contains(&gap)
}
