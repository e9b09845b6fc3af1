//! The lock of the book's generated outputs: what each one was made from.
//!
//! The book quotes what programs print (a suite run, a trace, `/stats`), and draws
//! pictures and tables from real runs (the timelines, the benchmark). None of it is typed
//! by hand: each is made by a generator and committed under `book/src/generated/`. What a
//! run prints changes from run to run, so "fresh" cannot mean "the same bytes again".
//! It means: made from today's inputs. So every generator, when it writes a piece,
//! records in `book/src/generated/sessions.lock` one line, `NAME HASH`, where `HASH` is
//! [`hash_files`] of the files the piece was made from. The book's check
//! (`book/tools/tests/book.rs`) recomputes each hash and fails when one differs: somebody
//! changed an input and did not run the generator again.
//!
//! The pieces, and their inputs (a folder counts with every `*.rs`, `*.toml`, `*.py`,
//! `*.sh` and `*.html` file under it but those of an `examples` folder, a chapter's sketch;
//! a file named on its own counts whatever it is):
//!
//! - `NAME` for each session `book/sessions/NAME.sh`, written by
//!   `book/tools/gen-sessions.sh` to `book/src/generated/sessions/NAME.txt`: the session
//!   file itself and what its `# inputs:` lines name.
//! - `timeline-chNN` for each `book/src/generated/timeline-chNN.svg`, drawn by
//!   `book/tools/gen-timelines.sh`: the chapter's folder, the shared crate's code and
//!   `book/tools/src/bin/timeline`.
//! - `bench` for `book/src/generated/bench.md` and `bench.svg`, written by
//!   `cargo run --release -p book-tools --bin bench`: every chapter, the shared crate's
//!   code and `book/tools/src/bin/bench`.
//! - `image-NAME` for each hand-drawn diagram `book/src/images/NAME.svg` that depicts code:
//!   the picture itself and the files its `<!-- depicts: FILE... -->` line names. Nobody
//!   can draw it again by program; a person checks it against those files and records
//!   that it still holds (`book/tools/gen-sessions.sh --record image-NAME`), so that a
//!   change to the code it shows, or to the picture, makes it stale until somebody looks.
//!
//! "The shared crate's code" is `shared/src` and `shared/Cargo.toml`: `shared/tests` holds
//! the parser's own tests, which change nothing a program prints.
//!
//! Two kinds of program use this file: the generators (`bench`, `timeline`, `sessions`),
//! which write the lock, and the book's check (`tests/book.rs`, `tests/prose/`), which
//! reads it. One hash function, written once, for both.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The lock, from the repository's root.
pub const LOCK: &str = "book/src/generated/sessions.lock";
/// The hand-drawn diagrams, and what says which files one depicts.
pub const IMAGES: &str = "book/src/images";
pub const DEPICTS: &str = "<!-- depicts:";

/// The files a diagram's `<!-- depicts: a b c -->` line names: `Some(vec![])` for
/// `depicts: none` (a picture of an idea, not of code), `None` without the line.
pub fn depicted(svg: &str) -> Option<Vec<String>> {
    let start = svg.find(DEPICTS)? + DEPICTS.len();
    let end = svg[start..].find("-->")? + start;
    let named = svg[start..end].trim();
    if named == "none" || named.starts_with("none ") {
        return Some(Vec::new());
    }
    Some(named.split_whitespace().map(str::to_string).collect())
}

/// Where the sessions are, and where their outputs go.
pub const SESSIONS: &str = "book/sessions";
pub const SESSION_OUTPUTS: &str = "book/src/generated/sessions";
/// The shared crate's code, as an input.
const SHARED: [&str; 2] = ["shared/src", "shared/Cargo.toml"];
/// What a folder contributes to a hash: the files a program is made from.
const EXTENSIONS: [&str; 5] = ["rs", "toml", "py", "sh", "html"];

/// One generated piece of the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Its name in the lock: `ch08-hundred-sleeps`, `timeline-ch04`, `bench`.
    pub name: String,
    /// The file it was written to (the first, if it is several), from the root.
    pub output: String,
    /// What it is made from: files and folders, from the root.
    pub inputs: Vec<String>,
    /// The command that makes it again.
    pub remake: String,
}

/// The 64-bit FNV-1a hash of `bytes`, continuing from `hash` (start from [`FNV_START`]).
/// Small, stable across Rust versions and machines, and good enough to notice a change.
pub fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// FNV-1a's offset basis: the hash of nothing.
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Every file the inputs name, as sorted paths from `root` with `/` between folders. A
/// folder gives its files with a program's extensions, recursively (hidden folders,
/// `target`, and a chapter's `examples`, its sketch, left out: a session names a sketch
/// on its own if it runs one; the chapter's program is not made from it). An input that does not exist is an error: a typo in a session
/// would otherwise make a hash of nothing.
pub fn input_files(root: &Path, inputs: &[String]) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    for input in inputs {
        let path = root.join(input);
        if path.is_file() {
            files.push(input.trim_end_matches('/').to_string());
        } else if path.is_dir() {
            collect(root, &path, &mut files)?;
        } else {
            return Err(format!("the input {input} does not exist"));
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn collect(root: &Path, folder: &Path, files: &mut Vec<String>) -> Result<(), String> {
    let entries = fs::read_dir(folder)
        .map_err(|error| format!("cannot list {}: {error}", folder.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "examples" {
                collect(root, &path, files)?;
            }
        } else if path.extension().is_some_and(|extension| {
            EXTENSIONS.iter().any(|wanted| extension.to_str() == Some(*wanted))
        }) {
            files.push(relative(root, &path));
        }
    }
    Ok(())
}

/// `path` from `root`, with `/` between the parts whatever the system.
fn relative(root: &Path, path: &Path) -> String {
    let inside = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> =
        inside.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
    parts.join("/")
}

/// The hash of these files (paths from `root`, in the order given): each one's path, a
/// zero byte, its length as 8 bytes little-endian, and its bytes.
pub fn hash_files(root: &Path, files: &[String]) -> Result<u64, String> {
    let mut hash = FNV_START;
    for file in files {
        let bytes =
            fs::read(root.join(file)).map_err(|error| format!("cannot read {file}: {error}"))?;
        hash = fnv1a(hash, file.as_bytes());
        hash = fnv1a(hash, &[0]);
        hash = fnv1a(hash, &(bytes.len() as u64).to_le_bytes());
        hash = fnv1a(hash, &bytes);
    }
    Ok(hash)
}

/// The hash of today's inputs of `piece`, as the lock writes it: 16 hexadecimal digits.
pub fn hash_of(root: &Path, piece: &Piece) -> Result<String, String> {
    let files = input_files(root, &piece.inputs)?;
    Ok(format!("{:016x}", hash_files(root, &files)?))
}

/// The inputs a session's `# inputs: a b c` lines name (there may be several lines).
pub fn session_inputs(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# inputs:"))
        .flat_map(|names| names.split_whitespace().map(str::to_string))
        .collect()
}

/// Every generated piece of the book, as the files under `root` say today: one per
/// session, one per timeline picture, and the benchmark if its report is there.
pub fn pieces(root: &Path) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    for name in names_in(&root.join(SESSIONS), ".sh") {
        let session = format!("{SESSIONS}/{name}.sh");
        let text = fs::read_to_string(root.join(&session))
            .map_err(|error| format!("cannot read {session}: {error}"))?;
        let mut inputs = vec![session];
        inputs.extend(session_inputs(&text));
        pieces.push(Piece {
            output: format!("{SESSION_OUTPUTS}/{name}.txt"),
            remake: format!("book/tools/gen-sessions.sh {name}"),
            name,
            inputs,
        });
    }
    let generated = root.join("book/src/generated");
    for name in names_in(&generated, ".svg") {
        let Some(number) = name.strip_prefix("timeline-ch") else { continue };
        let folder = names_in(&root.join("chapters"), "")
            .into_iter()
            .find(|folder| folder.starts_with(&format!("{number}-")))
            .ok_or_else(|| format!("{name}.svg draws chapter {number}, which does not exist"))?;
        let mut inputs = vec![format!("chapters/{folder}")];
        inputs.extend(SHARED.map(str::to_string));
        inputs.push("book/tools/src/bin/timeline".to_string());
        pieces.push(Piece {
            output: format!("book/src/generated/{name}.svg"),
            remake: format!(
                "cargo run -p book-tools --bin timeline -- --chapter {}",
                number.trim_start_matches('0')
            ),
            name,
            inputs,
        });
    }
    for name in names_in(&root.join(IMAGES), ".svg") {
        let picture = format!("{IMAGES}/{name}.svg");
        let text = fs::read_to_string(root.join(&picture)).unwrap_or_default();
        let Some(files) = depicted(&text).filter(|files| !files.is_empty()) else { continue };
        let mut inputs = vec![picture.clone()];
        inputs.extend(files);
        pieces.push(Piece {
            name: format!("image-{name}"),
            output: picture,
            remake: format!(
                "book/tools/gen-sessions.sh --record image-{name}, once you have checked it \
                 against the files its depicts: line names"
            ),
            inputs,
        });
    }
    if generated.join("bench.md").is_file() {
        let mut inputs = vec!["chapters".to_string()];
        inputs.extend(SHARED.map(str::to_string));
        inputs.push("book/tools/src/bin/bench".to_string());
        pieces.push(Piece {
            name: "bench".to_string(),
            output: "book/src/generated/bench.md".to_string(),
            inputs,
            remake: "cargo run --release -p book-tools --bin bench".to_string(),
        });
    }
    Ok(pieces)
}

/// The names in `folder` that end with `suffix`, without it, sorted. A missing folder has
/// none.
fn names_in(folder: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter_map(|name| name.strip_suffix(suffix).map(str::to_string))
                .filter(|name| !name.is_empty() && !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The lock's lines, name to hash. A missing lock is an empty one; `#` lines are comments.
pub fn read_lock(root: &Path) -> BTreeMap<String, String> {
    let text = fs::read_to_string(root.join(LOCK)).unwrap_or_default();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(' '))
        .map(|(name, hash)| (name.to_string(), hash.trim().to_string()))
        .collect()
}

/// Records that `piece` was just made from today's inputs: its line in the lock now has
/// their hash. Every other line stays as it was.
pub fn record(root: &Path, piece: &Piece) -> Result<(), String> {
    let hash = hash_of(root, piece)?;
    let mut lines = read_lock(root);
    lines.insert(piece.name.clone(), hash);
    let mut text = String::from(
        "# What each generated piece of the book was made from: NAME HASH, the hash of its\n\
         # inputs when its generator last ran (book/tools/src/lock.rs). Written by the\n\
         # generators; book/tools/tests/book.rs fails when a hash no longer matches them.\n",
    );
    for (name, hash) in &lines {
        text.push_str(&format!("{name} {hash}\n"));
    }
    let path: PathBuf = root.join(LOCK);
    fs::write(&path, text).map_err(|error| format!("cannot write {}: {error}", path.display()))
}

/// The piece called `name`, as [`pieces`] finds it today.
pub fn piece(root: &Path, name: &str) -> Result<Piece, String> {
    pieces(root)?
        .into_iter()
        .find(|piece| piece.name == name)
        .ok_or_else(|| format!("no generated piece is called {name}"))
}
