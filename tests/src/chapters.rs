//! The chapters the suite knows, and how their programs are built for the tests.
//!
//! A chapter takes part as soon as its directory exists under `chapters/`. Until then its
//! tests are skipped, and the suite says so once, loudly.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// One stage of the workbook.
#[derive(Debug, PartialEq, Eq)]
pub struct Chapter {
    /// 1 for chapter 1: the column of the capability table.
    pub number: u8,
    /// The package and binary name, also sent as the `Server` header.
    pub name: &'static str,
    /// The directory under `chapters/`.
    pub directory: &'static str,
}

// ANCHOR: chapters
/// Every chapter, in order. Adding a chapter is one line here, one column in each of the
/// manifest's rows, and its number in tests/suite.rs (a test checks that one).
pub const CHAPTERS: &[Chapter] = &[
    Chapter::new(1, "ch01-blocking", "01-blocking"),
    Chapter::new(2, "ch02-poll", "02-poll"),
    Chapter::new(3, "ch03-event-loop", "03-event-loop"),
    Chapter::new(4, "ch04-scheduler", "04-scheduler"),
    Chapter::new(5, "ch05-promises", "05-promises"),
    Chapter::new(6, "ch06-thread-pool", "06-thread-pool"),
    Chapter::new(7, "ch07-epoll", "07-epoll"),
    Chapter::new(8, "ch08-async", "08-async"),
    Chapter::new(9, "ch09-multicore", "09-multicore"),
    Chapter::new(10, "ch10-io-uring", "10-io-uring"),
    Chapter::new(11, "ch11-multishot", "11-multishot"),
];
// ANCHOR_END: chapters

/// The chapter with this number, if there is one.
pub fn chapter(number: u8) -> Option<&'static Chapter> {
    CHAPTERS.iter().find(|chapter| chapter.number == number)
}

/// The workspace this crate belongs to.
pub fn workspace_root() -> PathBuf {
    // `tests/` sits directly under the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

impl Chapter {
    const fn new(number: u8, name: &'static str, directory: &'static str) -> Chapter {
        Chapter { number, name, directory }
    }

    /// Has this chapter been written yet?
    pub fn is_present(&self) -> bool {
        workspace_root().join("chapters").join(self.directory).join("Cargo.toml").is_file()
    }

    /// Does it need Linux? Chapters 10 and 11 wait with io_uring, which only Linux has:
    /// elsewhere they refuse to start, in one line (`shared::system::needs_linux`).
    pub fn needs_linux(&self) -> bool {
        self.number >= 10
    }

    /// "ch01": how the manifest's sentences name a chapter.
    pub fn short_name(&self) -> &'static str {
        self.name.get(..4).unwrap_or(self.name)
    }

    /// `chNN-sketch`: the example that holds the chapter's sketch, and the program's name.
    pub fn sketch_name(&self) -> String {
        format!("{}-sketch", self.short_name())
    }

    /// `chapters/NN-name/examples/chNN-sketch.rs`, from the workspace's root.
    pub fn sketch_path(&self) -> PathBuf {
        Path::new("chapters")
            .join(self.directory)
            .join("examples")
            .join(format!("{}.rs", self.sketch_name()))
    }

    /// Has this chapter's sketch been written yet?
    pub fn has_sketch(&self) -> bool {
        workspace_root().join(self.sketch_path()).is_file()
    }

    /// The sketch's program, built on first use, as [`Chapter::binary`] builds the chapter's.
    pub fn sketch_binary(&self, build_dir: &Path) -> Result<PathBuf, String> {
        static BUILT: [OnceLock<Result<PathBuf, String>>; CHAPTERS.len()] =
            [const { OnceLock::new() }; CHAPTERS.len()];
        let index = usize::from(self.number - 1);
        BUILT[index].get_or_init(|| build(self, Target::Sketch, build_dir)).clone()
    }

    /// The chapter's program, built on first use (once per process, however many tests
    /// ask at the same time). `build_dir` is a Cargo target directory of its own.
    ///
    /// Why a nested `cargo build`: an integration test only gets the binaries of its own
    /// package, and the chapters are other packages. Why a separate target directory: the
    /// `cargo test` that runs us holds the lock on its own target directory until the
    /// tests end, so building into that one would wait forever.
    pub fn binary(&self, build_dir: &Path) -> Result<PathBuf, String> {
        static BUILT: [OnceLock<Result<PathBuf, String>>; CHAPTERS.len()] =
            [const { OnceLock::new() }; CHAPTERS.len()];
        // Chapter n sits at index n - 1 (the test `chapters_are_numbered_in_order`).
        let index = usize::from(self.number - 1);
        BUILT[index].get_or_init(|| build(self, Target::Program, build_dir)).clone()
    }
}

/// What of a chapter's package to build.
#[derive(Clone, Copy)]
enum Target {
    /// Its program, `chNN-name`.
    Program,
    /// Its sketch, the example `chNN-sketch`.
    Sketch,
}

/// Runs `cargo build -p chNN-name --bins` (or `--example chNN-sketch`) and finds the
/// program it made.
fn build(chapter: &Chapter, target: Target, build_dir: &Path) -> Result<PathBuf, String> {
    let (what, name, selector) = match target {
        Target::Program => {
            (chapter.name.to_string(), chapter.name.to_string(), "--bins".to_string())
        }
        Target::Sketch => {
            let sketch = chapter.sketch_name();
            (format!("{}'s sketch", chapter.name), sketch.clone(), format!("--example={sketch}"))
        }
    };
    let started = Instant::now();
    // Straight to stderr, past the test harness's capture: a first build takes a while,
    // and a silent pause looks like a hang.
    let _ = writeln!(
        std::io::stderr(),
        "suite: building {what} into {} (once per run)",
        build_dir.display()
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", &selector, "--message-format=json-render-diagnostics"])
        .args(["-p", chapter.name])
        .arg("--target-dir")
        .arg(build_dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .map_err(|error| format!("cannot run cargo to build {what}: {error}"))?;
    if !output.status.success() {
        // The end of cargo's report holds the summary; a broken chapter can print pages.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        return Err(format!(
            "cargo build -p {} {selector} failed ({}); the end of its output:\n{tail}",
            chapter.name, output.status
        ));
    }
    // Each line of stdout is a JSON message; the one for our binary names its path as
    // `"executable":"/…/ch01-blocking"`. Reading it back is sturdier than guessing the
    // layout of the target directory (profiles, cross-compiling targets).
    let stdout = String::from_utf8_lossy(&output.stdout);
    let binary = stdout
        .lines()
        .filter(|line| line.contains(&format!("\"name\":\"{name}\"")))
        .find_map(|line| {
            let start = line.find("\"executable\":\"")? + "\"executable\":\"".len();
            let end = start + line[start..].find('"')?;
            Some(PathBuf::from(&line[start..end]))
        })
        .ok_or_else(|| format!("cargo built {what} but named no executable"))?;
    let _ = writeln!(
        std::io::stderr(),
        "suite: {what} ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables indexed by chapter (the manifest's columns, the builds above) take
    /// chapter n to be entry n - 1, and the names follow the contract's `chNN-name`.
    #[test]
    fn chapters_are_numbered_in_order() {
        for (index, chapter) in CHAPTERS.iter().enumerate() {
            assert_eq!(usize::from(chapter.number), index + 1, "{chapter:?}");
            let prefix = format!("ch{:02}-", chapter.number);
            assert!(chapter.name.starts_with(&prefix), "{chapter:?}");
            assert_eq!(chapter.directory, &chapter.name[2..], "{chapter:?}");
        }
    }

    /// A sketch is an example of its chapter's package, named so that the examples of all
    /// chapters, which Cargo puts in one folder, never collide.
    #[test]
    fn a_sketch_lives_in_its_chapters_examples() {
        let four = chapter(4).expect("chapter 4");
        assert_eq!(four.sketch_name(), "ch04-sketch");
        assert_eq!(four.sketch_path(), Path::new("chapters/04-scheduler/examples/ch04-sketch.rs"));
        let names: std::collections::BTreeSet<String> =
            CHAPTERS.iter().map(Chapter::sketch_name).collect();
        assert_eq!(names.len(), CHAPTERS.len());
    }
}
