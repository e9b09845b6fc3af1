//! Where a lab's `shared` comes from, so that the lab builds wherever it goes.
//!
//! A chapter finds `shared` in the workbook's workspace. A lab leaves the workbook: it is
//! moved, pushed to a fresh repository, cloned on a student's laptop and on a CI runner.
//! So it names `shared` in one of two ways that need no workbook beside it, and never by
//! an absolute path (which holds only on the machine it was made on):
//!
//! - **vendored** (`--vendor`, the default): `shared/` copied into the lab, its sources
//!   and its sample site, its manifest standing alone, and the lab's `Cargo.toml` saying
//!   `shared = { path = "shared" }`, a path inside the lab, which moves with it;
//! - **from git** (`--shared git=URL@REV`): `shared = { git = URL, rev = REV }`, the
//!   workbook's repository at one pinned commit, which Cargo fetches the first time (then
//!   `cargo build --offline` works). A course that changes `shared` for a term pushes the
//!   workbook and names that commit. Bare `--shared git` takes the workbook's own `origin`
//!   remote and the commit it has checked out.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::cargo_toml::{string, Changes, Fields, Workspace};

/// How the lab names `shared`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shared {
    /// Copied into the lab's `shared/`.
    Vendored,
    /// The repository at `url`, at the commit (or tag) `rev`.
    Git { url: String, rev: String },
    /// `--shared git` without `=URL@REV`: the workbook's `origin` and its `HEAD`, found
    /// when the lab is made ([`workbook_remote`]).
    GitOfWorkbook,
}

/// Reads the value of `--shared`: `git=URL@REV`, or `git` alone.
pub fn parse(value: &str) -> Result<Shared, String> {
    if value == "git" {
        return Ok(Shared::GitOfWorkbook);
    }
    let pinned = value.strip_prefix("git=").ok_or(format!(
        "--shared {value}: expected git=URL@REV (or git, for the workbook's origin at its \
         HEAD); a copy in the lab is --vendor"
    ))?;
    // The revision follows the last `@`; a URL may hold one of its own (`ssh://git@host/`).
    let (url, rev) = pinned
        .rsplit_once('@')
        .filter(|(url, rev)| !url.is_empty() && !rev.is_empty() && !rev.contains(['/', ':']))
        .ok_or(format!("--shared {value}: expected git=URL@REV, a revision after the last @"))?;
    Ok(Shared::Git { url: url.to_string(), rev: rev.to_string() })
}

/// The workbook's `origin` remote and the commit it has checked out, for bare `--shared
/// git`. A student can fetch that commit only once it is pushed; a change to `shared` not
/// yet committed is not in it, so both are refused rather than pinned silently.
pub fn workbook_remote(workbook: &Path) -> Result<Shared, String> {
    let git = |arguments: &[&str]| -> Result<String, String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(workbook)
            .args(arguments)
            .output()
            .map_err(|error| format!("--shared git: cannot run git: {error}"))?;
        match output.status.success() {
            true => Ok(String::from_utf8_lossy(&output.stdout).trim().to_string()),
            false => Err(String::from_utf8_lossy(&output.stderr).trim().to_string()),
        }
    };
    let url = git(&["remote", "get-url", "origin"]).map_err(|_| {
        "--shared git: the workbook has no `origin` remote; push it where students can fetch \
         it (`git remote add origin URL && git push origin HEAD`), or say --shared \
         git=URL@REV"
            .to_string()
    })?;
    let rev = git(&["rev-parse", "HEAD"]).map_err(|error| format!("--shared git: {error}"))?;
    if !git(&["status", "--porcelain", "--", "shared", "Cargo.toml"])?.is_empty() {
        return Err(format!(
            "--shared git: shared/ has changes not committed, which commit {rev} does not hold; \
             commit and push them first"
        ));
    }
    Ok(Shared::Git { url, rev })
}

impl Shared {
    /// What a crate at `depth` folders below the lab's root (0 for the lab itself, 1 for
    /// the grader) writes for a path dependency on `path`, a folder of the workbook.
    pub fn fields(&self, path: &str, depth: usize) -> Result<Fields, String> {
        if path != "shared" {
            return Err(format!("a path dependency on the workbook's {path}, which a lab lacks"));
        }
        match self {
            Shared::Vendored => {
                Ok(vec![("path".to_string(), string(&format!("{}shared", "../".repeat(depth))))])
            }
            Shared::Git { url, rev } => {
                Ok(vec![("git".to_string(), string(url)), ("rev".to_string(), string(rev))])
            }
            Shared::GitOfWorkbook => Err("the workbook's remote was not looked up".to_string()),
        }
    }

    /// In the README's words: how the lab has `shared`.
    pub fn in_words(&self) -> String {
        match self {
            Shared::Git { url, rev } => {
                format!("takes the workbook's `shared` crate from git, `{url}` at `{rev}`")
            }
            _ => "carries its own copy of the workbook's `shared` crate, in `shared/`".to_string(),
        }
    }

    /// The line the lab's `Cargo.toml` opens with, after what it was made from.
    pub fn said(&self) -> String {
        match self {
            Shared::Git { url, rev } => format!("`shared` is {url} at {rev}."),
            _ => "`shared` is the copy in shared/, which moves with the lab.".to_string(),
        }
    }
}

/// Copies the workbook's `shared` into `lab/shared`: its sources (with their unit tests)
/// and its sample site, and its manifest standing alone, as a member of the lab's
/// workspace. Its tests of the workbook (`shared/tests/`, which read the book) stay.
pub fn vendor(workbook: &Path, lab: &Path, workspace: &Workspace) -> Result<(), String> {
    let from = workbook.join("shared");
    let to = lab.join("shared");
    for folder in ["src", "site"] {
        copy_folder(&from.join(folder), &to.join(folder))?;
    }
    let manifest = fs::read_to_string(from.join("Cargo.toml"))
        .map_err(|error| format!("cannot read shared/Cargo.toml: {error}"))?;
    let locate = |path: &str| Shared::Vendored.fields(path, 1);
    let changes = Changes {
        was: "shared",
        name: "shared",
        description: "The tiny common part every chapter of the Event Loop Workbook uses, \
                      copied into the lab",
        locate: &locate,
        chapter_folder: "shared",
        workspace: None,
    };
    let text = workspace.standalone(&manifest, &changes)?;
    let preamble = "# The workbook's shared/Cargo.toml, copied into the lab by its lab command.\n";
    fs::write(to.join("Cargo.toml"), format!("{preamble}{text}"))
        .map_err(|error| format!("cannot write shared/Cargo.toml: {error}"))
}

/// Copies the workbook's suite into `lab/grader` for a handout, so that a student grades
/// with what the course grades with, and needs nothing else: its library and its runner
/// (`tests/src`), not `tests/src/bin/` (the old names of the book's tools, which moved to
/// `book/tools/`), nor its own tests of the workbook (`tests/tests/`), and no chapter: the
/// suite holds the contract, not an answer. Its manifest names `shared` as the lab does.
pub fn vendor_grader(
    workbook: &Path, lab: &Path, workspace: &Workspace, shared: &Shared,
) -> Result<(), String> {
    let from = workbook.join("tests");
    let to = lab.join("grader");
    copy_folder_but(&from.join("src"), &to.join("src"), &["bin"])?;
    let manifest = fs::read_to_string(from.join("Cargo.toml"))
        .map_err(|error| format!("cannot read tests/Cargo.toml: {error}"))?;
    let locate = |path: &str| shared.fields(path, 1);
    let changes = Changes {
        was: "suite",
        name: "suite",
        description: "The Event Loop Workbook's HTTP suite, the grader, copied into the lab",
        locate: &locate,
        chapter_folder: "tests",
        workspace: None,
    };
    let text = workspace.standalone(&manifest, &changes)?;
    let preamble = "# The workbook's tests/Cargo.toml (the suite), copied into the handout by its \
                    lab command.\n";
    fs::write(to.join("Cargo.toml"), format!("{preamble}{text}"))
        .map_err(|error| format!("cannot write grader/Cargo.toml: {error}"))
}

/// Copies a folder and everything under it, as it is, but the entries named in `but`.
fn copy_folder_but(from: &Path, to: &Path, but: &[&str]) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|error| format!("cannot create {}: {error}", to.display()))?;
    let entries =
        fs::read_dir(from).map_err(|error| format!("cannot list {}: {error}", from.display()))?;
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(|name| but.contains(&name)) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if source.is_dir() {
            copy_folder(&source, &target)?;
        } else {
            fs::copy(&source, &target)
                .map_err(|error| format!("cannot copy {}: {error}", source.display()))?;
        }
    }
    Ok(())
}

/// Copies a folder and everything under it, as it is.
pub fn copy_folder(from: &Path, to: &Path) -> Result<(), String> {
    copy_folder_but(from, to, &[])
}

#[cfg(test)]
#[path = "standalone_tests.rs"]
mod tests;
