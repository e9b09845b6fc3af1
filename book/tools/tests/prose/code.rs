//! What the code defines and uses, read from the sources without compiling them: enough to
//! say whether a name the book writes in backticks is in the code it speaks of.
//!
//! A small lexer (comments, strings, characters and lifetimes are told apart from code),
//! and, over its tokens, a pass that notes each definition: items (`fn`, `struct`, `enum`,
//! `trait`, `type`, `const`, `static`, `mod`, `macro_rules!`), the fields of a struct, the
//! variants of an enum, `let` bindings and parameters, each with its owner: the type an
//! `impl` block is for, or the struct, enum, trait or inline module it sits in.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One token of Rust source.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    /// An identifier or keyword (`r#` taken off a raw one).
    Word(String),
    /// A string literal's contents (escapes left as written).
    Text(String),
    /// Any other character of code: punctuation, a digit, a character literal's quote.
    Punct(char),
}

/// The tokens of `source`, without comments. Numbers and character literals become
/// punctuation, which is all the passes below need of them.
pub fn tokens(source: &str) -> Vec<Token> {
    placed_tokens(source).into_iter().map(|(_, token)| token).collect()
}

/// The tokens of `source`, each with the offset (in characters) it starts at.
pub fn placed_tokens(source: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = source.chars().collect();
    let mut found: Vec<(usize, Token)> = Vec::new();
    let mut index = 0;
    let mut start;
    // Each push below records where its token began.
    macro_rules! found {
        ($token:expr) => {
            found.push((start, $token))
        };
    }
    let at = |index: usize| chars.get(index).copied().unwrap_or('\0');
    while index < chars.len() {
        start = index;
        let c = chars[index];
        if c == '/' && at(index + 1) == '/' {
            while index < chars.len() && chars[index] != '\n' {
                index += 1;
            }
        } else if c == '/' && at(index + 1) == '*' {
            let mut depth = 0;
            while index < chars.len() {
                if chars[index] == '/' && at(index + 1) == '*' {
                    depth += 1;
                    index += 2;
                } else if chars[index] == '*' && at(index + 1) == '/' {
                    depth -= 1;
                    index += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    index += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && at(index + 1) == '"') {
            index += if c == '"' { 1 } else { 2 };
            let mut text = String::new();
            while index < chars.len() && chars[index] != '"' {
                if chars[index] == '\\' {
                    text.push(chars[index]);
                    index += 1;
                }
                if let Some(&next) = chars.get(index) {
                    text.push(next);
                }
                index += 1;
            }
            index += 1;
            found!(Token::Text(text));
        } else if (c == 'r' && (at(index + 1) == '"' || at(index + 1) == '#'))
            || (c == 'b' && at(index + 1) == 'r' && matches!(at(index + 2), '"' | '#'))
        {
            // A raw string, r"..." or r#"..."#; `r#name` is a raw identifier instead.
            let opening = index + if c == 'b' { 2 } else { 1 };
            let hashes = chars[opening..].iter().take_while(|c| **c == '#').count();
            if at(opening + hashes) != '"' {
                index = opening + hashes;
                let word: String = chars[index..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '_')
                    .collect();
                index += word.chars().count();
                found!(Token::Word(word));
                continue;
            }
            index = opening + hashes + 1;
            let closing: Vec<char> =
                std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let mut text = String::new();
            while index < chars.len() && !chars[index..].starts_with(&closing) {
                text.push(chars[index]);
                index += 1;
            }
            index += closing.len();
            found!(Token::Text(text));
        } else if c == '\'' {
            // A character literal ('a', '\n', '\'', '\u{1e}') or a lifetime ('a, 'static).
            if at(index + 1) == '\\' {
                index += 2;
                while index < chars.len() && chars[index] != '\'' {
                    index += 1;
                }
                index += 1;
            } else if at(index + 2) == '\'' {
                index += 3;
            } else {
                index += 1;
                while index < chars.len() && (chars[index].is_alphanumeric() || chars[index] == '_')
                {
                    index += 1;
                }
            }
            found!(Token::Punct('\''));
        } else if c.is_alphabetic() || c == '_' {
            let word: String =
                chars[index..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
            index += word.chars().count();
            found!(Token::Word(word));
        } else if c.is_ascii_digit() {
            // A number, with its suffix (`0u8`, `1_000`, `0x1e`): not a word.
            while index < chars.len() && (chars[index].is_alphanumeric() || chars[index] == '_') {
                index += 1;
            }
            found!(Token::Punct('0'));
        } else {
            if !c.is_whitespace() {
                found!(Token::Punct(c));
            }
            index += 1;
        }
    }
    found
}

/// What kind of thing a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `mod`, a macro.
    Item,
    /// A struct's field or an enum's variant.
    Member,
    /// A `let` binding or a parameter.
    Local,
}

/// One definition in a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Definition {
    pub name: String,
    /// The type, trait or inline module it belongs to, if any.
    pub owner: Option<String>,
    pub kind: Kind,
}

/// What one source file defines and uses.
#[derive(Debug, Default, Clone)]
pub struct FileIndex {
    pub definitions: BTreeSet<Definition>,
    /// Every identifier its code uses, and the words of its string literals that could be
    /// names (a literal that is one word, and words with an `_`): what it prints, such as
    /// `/stats`' `connections_open`, is a name of the code too.
    pub words: BTreeSet<String>,
    /// Its code with the whitespace and comments taken out, to find a path such as
    /// `files::CHUNK` written whole.
    pub compact: String,
}

/// A block the definition pass is inside.
#[derive(Debug, Clone)]
enum Block {
    /// An `impl`, `trait` or inline `mod`: items inside belong to it.
    Owner(String),
    /// A struct's braces: `name:` is a field.
    Fields(String),
    /// An enum's braces: a name after `{` or `,` is a variant.
    Variants(String),
    /// Anything else: a function body, a match, an expression.
    Other,
}

fn word(token: Option<&Token>) -> Option<&str> {
    match token {
        Some(Token::Word(word)) => Some(word),
        _ => None,
    }
}

fn is(token: Option<&Token>, c: char) -> bool {
    token == Some(&Token::Punct(c))
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "union",
    "unsafe", "use", "where", "while",
];

pub fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

/// Reads one file's definitions and words.
pub fn index(source: &str) -> FileIndex {
    let tokens = tokens(source);
    let mut index = FileIndex::default();
    for token in &tokens {
        match token {
            Token::Word(word) => {
                index.words.insert(word.clone());
                index.compact.push_str(word);
                index.compact.push(' ');
            }
            Token::Text(text) => {
                let whole = text.chars().all(|c| c.is_alphanumeric() || c == '_');
                if whole && !text.is_empty() {
                    index.words.insert(text.clone());
                }
                for piece in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                    if piece.contains('_') && piece.chars().any(char::is_alphabetic) {
                        index.words.insert(piece.to_string());
                    }
                }
                index.compact.push_str("\" ");
            }
            Token::Punct(c) => {
                index.compact.push(*c);
                index.compact.push(' ');
            }
        }
    }
    index.compact = index.compact.replace(" :: ", "::").replace(' ', "");
    definitions(&tokens, &mut index.definitions);
    index
}

/// The definition pass over `tokens`.
fn definitions(tokens: &[Token], found: &mut BTreeSet<Definition>) {
    let mut blocks: Vec<Block> = Vec::new();
    // What the next `{` opens, once an item's head has been read.
    let mut opening: Option<Block> = None;
    let mut i = 0;
    let owner = |blocks: &[Block]| {
        blocks.iter().rev().find_map(|block| match block {
            Block::Owner(name) => Some(name.clone()),
            _ => None,
        })
    };
    let mut define = |name: &str, owner: Option<String>, kind: Kind| {
        if !name.is_empty() && !is_keyword(name) && name != "_" {
            found.insert(Definition { name: name.to_string(), owner, kind });
        }
    };
    while i < tokens.len() {
        let token = &tokens[i];
        let next = tokens.get(i + 1);
        match token {
            Token::Punct('{') => {
                blocks.push(opening.take().unwrap_or(Block::Other));
            }
            Token::Punct('}') => {
                blocks.pop();
            }
            Token::Punct(';') => opening = None,
            Token::Word(keyword) => match keyword.as_str() {
                "fn" => {
                    if let Some(name) = word(next) {
                        define(name, owner(&blocks), Kind::Item);
                        // Its parameters: `name:` at the first level of its parentheses.
                        let mut j = i + 2;
                        while j < tokens.len() && !is(tokens.get(j), '(') {
                            j += 1;
                        }
                        let mut depth = 0;
                        while j < tokens.len() {
                            match &tokens[j] {
                                Token::Punct('(' | '[' | '<') => depth += 1,
                                Token::Punct(')' | ']' | '>') => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                Token::Word(parameter)
                                    if depth == 1
                                        && is(tokens.get(j + 1), ':')
                                        && !is(tokens.get(j + 2), ':') =>
                                {
                                    define(parameter, None, Kind::Local)
                                }
                                _ => {}
                            }
                            j += 1;
                        }
                    }
                }
                "struct" | "union" => {
                    if let Some(name) = word(next) {
                        define(name, owner(&blocks), Kind::Item);
                        opening = Some(Block::Fields(name.to_string()));
                    }
                }
                "enum" => {
                    if let Some(name) = word(next) {
                        define(name, owner(&blocks), Kind::Item);
                        opening = Some(Block::Variants(name.to_string()));
                    }
                }
                "trait" | "mod" => {
                    if let Some(name) = word(next) {
                        define(name, owner(&blocks), Kind::Item);
                        opening = Some(Block::Owner(name.to_string()));
                    }
                }
                "type" | "static" => {
                    let name = match word(next) {
                        Some("mut") => word(tokens.get(i + 2)),
                        name => name,
                    };
                    if let Some(name) = name {
                        define(name, owner(&blocks), Kind::Item);
                    }
                }
                "const" if word(next) != Some("fn") && word(next) != Some("unsafe") => {
                    if let Some(name) = word(next) {
                        define(name, owner(&blocks), Kind::Item);
                    }
                }
                "use" => {
                    // What a `use` brings in is a name of this module too (`http::parse`,
                    // re-exported): each leaf of the tree, or its `as` name.
                    let mut j = i + 1;
                    while j < tokens.len() && !is(tokens.get(j), ';') {
                        if let Some(name) = word(tokens.get(j)) {
                            let leaf =
                                matches!(tokens.get(j + 1), Some(Token::Punct(',' | '}' | ';')));
                            if leaf && name != "self" {
                                define(name, owner(&blocks), Kind::Item);
                            }
                        }
                        j += 1;
                    }
                }
                "macro_rules" if is(next, '!') => {
                    if let Some(name) = word(tokens.get(i + 2)) {
                        define(name, None, Kind::Item);
                    }
                }
                "impl" => {
                    // The type is the last path before `{` or `where`, after `for` if any,
                    // not counting what is inside `<...>`.
                    let mut j = i + 1;
                    let mut depth = 0;
                    let mut last = None;
                    while j < tokens.len() {
                        match &tokens[j] {
                            Token::Punct('<') => depth += 1,
                            Token::Punct('>') if !is(tokens.get(j - 1), '-') => depth -= 1,
                            Token::Punct('{' | ';') if depth == 0 => break,
                            Token::Word(w) if depth == 0 && w == "where" => break,
                            Token::Word(w) if depth == 0 && w == "for" => last = None,
                            Token::Word(w) if depth == 0 && !is_keyword(w) => {
                                last = Some(w.clone())
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    if let Some(name) = last {
                        opening = Some(Block::Owner(name));
                    }
                }
                "let" => {
                    // Every name in the pattern, up to its type or its value.
                    let mut j = i + 1;
                    let mut depth = 0;
                    while j < tokens.len() {
                        match &tokens[j] {
                            Token::Punct('(' | '[' | '{') => depth += 1,
                            Token::Punct(')' | ']' | '}') => depth -= 1,
                            Token::Punct('=' | ';') if depth == 0 => break,
                            Token::Punct(':') if depth == 0 && !is(tokens.get(j + 1), ':') => break,
                            Token::Word(name)
                                if !is(tokens.get(j + 1), '(')
                                    && !is(tokens.get(j + 1), '{')
                                    && !is(tokens.get(j + 1), ':') =>
                            {
                                define(name, None, Kind::Local)
                            }
                            _ => {}
                        }
                        if depth < 0 {
                            break;
                        }
                        j += 1;
                    }
                }
                name => match blocks.last() {
                    Some(Block::Fields(owner))
                        if is(next, ':') && !is(tokens.get(i + 2), ':') && name != "pub" =>
                    {
                        define(name, Some(owner.clone()), Kind::Member)
                    }
                    Some(Block::Variants(owner))
                        if matches!(
                            tokens.get(i.wrapping_sub(1)),
                            Some(Token::Punct('{' | ',' | ']'))
                        ) && name.starts_with(|c: char| c.is_uppercase()) =>
                    {
                        define(name, Some(owner.clone()), Kind::Member)
                    }
                    _ => {}
                },
            },
            _ => {}
        }
        i += 1;
    }
}

/// Every source file of the code the book speaks of, indexed, by path from the root.
pub struct Code {
    pub files: BTreeMap<String, FileIndex>,
}

impl Code {
    /// Is `name` a type, trait, enum or module defined anywhere in the workspace? If not,
    /// it is someone else's (`Vec`, `TcpStream`), however much our code uses it.
    pub fn defines_anywhere(&self, name: &str) -> bool {
        self.files.iter().any(|(path, file)| {
            path.ends_with(&format!("/{name}.rs"))
                || file.definitions.iter().any(|d| d.name == name && d.kind == Kind::Item)
        })
    }

    /// Reads `roots` (folders, from `repository`), taking their `*.rs` files recursively.
    /// `skip` names files and folders (from the root) to leave out.
    pub fn read(repository: &Path, roots: &[&str], skip: &[&str]) -> Code {
        let mut files = BTreeMap::new();
        let mut folders: Vec<PathBuf> = roots.iter().map(|root| repository.join(root)).collect();
        while let Some(folder) = folders.pop() {
            let Ok(entries) = fs::read_dir(&folder) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                let relative = path
                    .strip_prefix(repository)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('\\', "/");
                if skip.iter().any(|skipped| relative == *skipped) {
                    continue;
                }
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !name.starts_with('.') && name != "target" {
                        folders.push(path);
                    }
                } else if name.ends_with(".rs") {
                    let source = fs::read_to_string(&path).unwrap_or_default();
                    files.insert(relative, index(&source));
                }
            }
        }
        Code { files }
    }
}
