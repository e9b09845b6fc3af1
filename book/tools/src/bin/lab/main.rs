//! `cargo run -p book-tools --bin lab -- N DIR`: every chapter is a lab.
//!
//! A course wants its students to write the next stage, not only read it. This makes
//! `DIR` a crate of its own that holds chapter N-1's program under the student's package
//! name, ready to become chapter N:
//!
//! - `src/`: the chapter's sources, with the chapter's name (which the program gives
//!   itself: `Config::from_args("ch03-event-loop", ...)`, its log lines) made the
//!   student's. `diff -ru chapters/03-event-loop/src DIR/src` shows that line at first,
//!   and the student's work after.
//! - `Cargo.toml`: the chapter's, standing alone (`cargo_toml.rs`): what it took from the
//!   workbook's workspace written out, `shared` copied into the lab or from git at a
//!   pinned revision, never by a path out of the lab (`standalone.rs`), and a
//!   `[workspace]` of its own, so that Cargo never takes it for a member of the
//!   workbook's, wherever it is.
//! - `shared/`: the workbook's `shared`, when the lab carries its own copy (the default).
//! - `Cargo.lock`: the workbook's, so that it builds with the same versions of the same
//!   crates, and needs nothing the workbook has not downloaded already.
//! - `README.md`: what chapter N adds, the commands that grade it (`readme.rs`), and what
//!   fails as handed out, from a recorded grading (`handed_out.rs`, `lab record N`).
//! - `grade.sh` and `.github/workflows/grade.yml`: the lab's CI, whose every step is a
//!   call of the script, and GitHub Classroom's points per row (`workflow.rs`).
//! - `grader/`, with `--handout` only: the suite, so that a student needs nothing of the
//!   workbook, which holds chapter N and the answers (`standalone.rs`).
//!
//! The suite grades it as it grades any reader's server: `cargo run -p suite --
//! --command DIR/target/release/NAME --chapter N`. As made, that fails chapter N's new
//! rows of the capability table (and any older check whose chapter N version asks more),
//! and `--chapter N-1` passes.
//!
//! `--sketch` makes the lighter lab, an hour's work rather than a chapter's: sketch N-1
//! (`chapters/NN-name/examples/chNN-sketch.rs`, chapter N-1's idea in one small program)
//! as `src/main.rs`, the same `Cargo.toml` and `Cargo.lock`, and a README whose assignment
//! is sketch N's idea in sketch N's own words (the opening of its doc comment), graded with
//! `--sketch` on the checks sketch N is graded on (`suite::manifest::SKETCHES`).
//!
//! `lab similarity DIR N`, for the teacher, says how much of a student's code is chapter
//! N's own, MOSS-style (`similarity.rs`).

mod api_tests;
mod cargo_toml;
mod handed_out;
mod readme;
mod similarity;
mod standalone;
mod workflow;

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use suite::chapters::{self, Chapter, CHAPTERS};

use cargo_toml::{Changes, Workspace};
use standalone::Shared;

const USAGE: &str = "\
usage: cargo run -p book-tools --bin lab -- [--name NAME] [--sketch] [--handout]
                                           [--vendor | --shared git=URL@REV] N DIR
       cargo run -p book-tools --bin lab -- similarity DIR N    (how much of DIR is chapter N's)
       cargo run -p book-tools --bin lab -- record N    (grade lab N as made, for its README)

Makes DIR (a new or empty folder, anywhere) a crate of its own holding chapter N-1's
program under the package name NAME, for a student to make it chapter N. It carries the
workbook's `shared` crate (or names it in git), builds with the workbook's Cargo.lock, so
it builds wherever it is moved, and its README.md says what chapter N adds and how the
suite grades it:

  cd DIR && cargo build --release
  cargo run -p suite -- --command DIR/target/release/NAME --chapter N     (from the workbook)

  N            the chapter to write: 2 up to the last chapter
  DIR          the lab's folder: one that does not exist yet, or is empty
  --name NAME  the package's name, which its program gives itself (letters, digits, `-`
               and `_`; default: DIR's own name)
  --sketch     the lighter lab: sketch N-1 (chapter N-1's idea in one small program) as
               src/main.rs, to become sketch N, graded with --sketch on sketch N's checks
  --handout    what a student is handed, and nothing else: the lab (with `shared`), and
               the suite in grader/ to grade it with (`cargo run --release -p suite --
               --command target/release/NAME --chapter N`, or ./grade.sh); no path into
               the workbook, and nothing of chapter N or later nor their answers
  --vendor     `shared` copied into the lab's shared/, named by the path `shared` (the
               default): the lab needs nothing but crates.io's crates, which the
               workbook's Cargo.lock pins
  --shared git=URL@REV
               `shared` from the git repository URL (the workbook's) at the commit or tag
               REV, which Cargo fetches (`git=https://github.com/COURSE/workbook@1a2b3c4`).
               `--shared git` alone takes the workbook's own `origin` remote and the
               commit it has checked out: a teacher sets the default by pushing the
               workbook where students can fetch it (`git remote add origin URL`,
               `git push origin HEAD`) and making labs from that commit";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    chapter: &'static Chapter,
    folder: PathBuf,
    name: Option<String>,
    /// The lighter lab: sketch N-1, to become sketch N.
    sketch: bool,
    /// How the lab has `shared`.
    shared: Shared,
    /// A handout: the lab and the grader, without the workbook (nor its answers).
    handout: bool,
    /// Say nothing of what was made (`lab record` makes a handout to grade, not to read).
    quiet: bool,
}

/// A refusal: the one line to print, and whether the usage should follow it.
#[derive(Debug, PartialEq, Eq)]
struct Refused {
    message: String,
    usage: bool,
}

fn refuse(message: impl Into<String>) -> Refused {
    Refused { message: message.into(), usage: false }
}

/// Reads the command line. `Ok(None)` is `--help`.
fn parse_args(words: impl Iterator<Item = String>) -> Result<Option<Request>, Refused> {
    let usage = |message: String| Refused { message, usage: true };
    let mut name = None;
    let mut sketch = false;
    let mut shared = None;
    let mut handout = false;
    let mut positional = Vec::new();
    let mut words = words;
    while let Some(word) = words.next() {
        match word.as_str() {
            "--help" | "-h" => return Ok(None),
            "--name" => name = Some(words.next().ok_or(usage("--name needs a value".into()))?),
            "--sketch" => sketch = true,
            "--handout" => handout = true,
            "--vendor" | "--shared" => {
                let choice = match word.as_str() {
                    "--vendor" => Shared::Vendored,
                    _ => standalone::parse(
                        &words
                            .next()
                            .ok_or(usage("--shared needs a value: git=URL@REV, or git".into()))?,
                    )
                    .map_err(usage)?,
                };
                if shared.as_ref().is_some_and(|earlier| *earlier != choice) {
                    return Err(usage("--vendor and --shared: say one".into()));
                }
                shared = Some(choice);
            }
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(usage(format!("unknown flag {flag}")))
            }
            _ => positional.push(word),
        }
    }
    let [number, folder] = positional.as_slice() else {
        return Err(usage(format!(
            "expected the chapter and a folder, N DIR; got {} argument(s)",
            positional.len()
        )));
    };
    let last = CHAPTERS.last().map_or(0, |chapter| chapter.number);
    let chapter = number
        .parse::<u8>()
        .ok()
        .filter(|number| (2..=last).contains(number))
        .and_then(chapters::chapter)
        .ok_or(usage(format!(
            "no lab for chapter {number}: N is a chapter from 2 to {last} (the lab starts \
             from chapter N-1's program)"
        )))?;
    if let Some(name) = &name {
        check_name(name).map_err(usage)?;
    }
    let shared = shared.unwrap_or(Shared::Vendored);
    let folder = PathBuf::from(folder);
    Ok(Some(Request { chapter, folder, name, sketch, shared, handout, quiet: false }))
}

/// Is this a package name Cargo takes, and not one of the chapters'?
fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) || !name.chars().all(allowed) {
        return Err(format!(
            "{name:?} cannot be a package's name: a letter first, then letters, digits, `-` \
             and `_`"
        ));
    }
    if CHAPTERS.iter().any(|chapter| chapter.name == name) {
        return Err(format!("{name} is a chapter's name; the lab's program names itself"));
    }
    Ok(())
}

/// The package name a folder suggests: its own name, with what a package name cannot
/// hold made `-`, and `lab-` in front when it does not start with a letter.
fn name_from_folder(folder: &Path) -> String {
    let base = folder.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
    let mut name = String::new();
    for c in base.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' };
        if !(c == '-' && (name.is_empty() || name.ends_with('-'))) {
            name.push(c);
        }
    }
    let name = name.trim_end_matches('-');
    match name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        true => name.to_string(),
        false if name.is_empty() => "lab".to_string(),
        false => format!("lab-{name}"),
    }
}

fn main() -> ExitCode {
    let words: Vec<String> = std::env::args().skip(1).collect();
    if words.first().is_some_and(|word| word == "similarity") {
        return similarity::main(&words[1..]);
    }
    if words.first().is_some_and(|word| word == "record") {
        return match handed_out::record(&words[1..]) {
            Ok(said) => {
                println!("{said}");
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("lab record: {message}");
                ExitCode::FAILURE
            }
        };
    }
    let request = match parse_args(words.into_iter()) {
        Ok(Some(request)) => request,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(refused) => return refused_with(refused),
    };
    match make(&request) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Refused(refused)) => refused_with(refused),
        Err(Failure::Broke(message)) => {
            eprintln!("lab: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Says why, and exits 2, as the suite does for a command line it refuses.
fn refused_with(refused: Refused) -> ExitCode {
    eprintln!("lab: {}", refused.message);
    if refused.usage {
        eprintln!("{USAGE}");
    }
    ExitCode::from(2)
}

/// Why a lab was not made: a request we refuse (exit 2), or an error on the way (exit 1).
enum Failure {
    Refused(Refused),
    Broke(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Broke(message)
    }
}

/// Makes the lab, or leaves no trace of it.
fn make(request: &Request) -> Result<(), Failure> {
    let workbook = fs::canonicalize(chapters::workspace_root())
        .map_err(|error| format!("cannot find the workbook: {error}"))?;
    let chapter = request.chapter;
    let previous = chapters::chapter(chapter.number - 1).expect("N is 2 or more");
    let chapter_folder = workbook.join("chapters").join(previous.directory);
    if !previous.is_present() {
        return Err(Failure::Refused(refuse(format!(
            "chapter {}'s program is not in this workbook (no {})",
            previous.number,
            chapter_folder.join("Cargo.toml").display()
        ))));
    }
    if request.sketch {
        for (sketch, why) in [(previous, "the lab's program"), (chapter, "its assignment")] {
            if !sketch.has_sketch() {
                return Err(Failure::Refused(refuse(format!(
                    "sketch {} ({why}) is not in this workbook (no {})",
                    sketch.number,
                    workbook.join(sketch.sketch_path()).display()
                ))));
            }
        }
    }
    let folder = &request.folder;
    let existed = folder.exists();
    if existed {
        let empty = fs::read_dir(folder).map(|mut entries| entries.next().is_none());
        if !matches!(empty, Ok(true)) {
            return Err(Failure::Refused(refuse(format!(
                "{} exists and is not an empty folder: a lab goes in a new one",
                folder.display()
            ))));
        }
    }
    let name = match &request.name {
        Some(name) => name.clone(),
        None => {
            let name = name_from_folder(folder);
            check_name(&name).map_err(|message| {
                Failure::Refused(refuse(format!("{message} (give another with --name)")))
            })?;
            name
        }
    };
    let lab = absolute(folder)?;
    if lab.starts_with(workbook.join("chapters")) {
        return Err(Failure::Refused(refuse(format!(
            "{} is inside the workbook's chapters/, where Cargo and the suite would take it \
             for a chapter",
            folder.display()
        ))));
    }
    let shared = match &request.shared {
        Shared::GitOfWorkbook => standalone::workbook_remote(&workbook)
            .map_err(|message| Failure::Refused(refuse(message)))?,
        shared => shared.clone(),
    };
    fs::create_dir_all(&lab)
        .map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
    let made = Made {
        lab: &lab,
        workbook: &workbook,
        chapter,
        previous,
        name: &name,
        shared,
        handout: request.handout,
    };
    match fill(&made, request.sketch) {
        Ok(renamed) => {
            if !request.quiet {
                print_made(&made, renamed, request.sketch);
            }
            Ok(())
        }
        Err(failure) => {
            // Nothing half made stays behind: the folder as it was, or gone.
            let _ = match existed {
                true => fs::read_dir(&lab).map(|entries| {
                    for path in entries.flatten().map(|entry| entry.path()) {
                        let _ = match path.is_dir() {
                            true => fs::remove_dir_all(path),
                            false => fs::remove_file(path),
                        };
                    }
                }),
                false => fs::remove_dir_all(&lab),
            };
            Err(Failure::Broke(failure))
        }
    }
}

/// `folder` as an absolute path without links or `..`, whether it exists yet or not.
fn absolute(folder: &Path) -> Result<PathBuf, String> {
    let cannot = |error: std::io::Error| format!("cannot find {}: {error}", folder.display());
    // The part that exists, made canonical (links followed), and the rest as it is.
    let mut existing = lexical(&std::path::absolute(folder).map_err(cannot)?);
    let mut rest = Vec::new();
    while !existing.exists() {
        rest.extend(existing.file_name().map(|name| name.to_owned()));
        if !existing.pop() {
            break;
        }
    }
    let mut path = fs::canonicalize(&existing).map_err(cannot)?;
    path.extend(rest.iter().rev());
    Ok(path)
}

/// What a lab is made of, once the command line is understood: where it goes, where from.
struct Made<'a> {
    /// The lab's folder and the workbook's, absolute.
    lab: &'a Path,
    workbook: &'a Path,
    /// The chapter (or sketch) to write, and the one the lab starts from.
    chapter: &'a Chapter,
    previous: &'a Chapter,
    /// The package's name, and its program's.
    name: &'a str,
    /// How the lab has `shared`.
    shared: Shared,
    /// A handout, which carries the grader and names nothing of the workbook.
    handout: bool,
}

/// Says in how many lines of the sources it gave the program the student's name.
fn fill(made: &Made, sketch: bool) -> Result<usize, String> {
    let Made { lab, workbook, chapter, previous, name, shared, handout } = made;
    let (chapter, previous) = (*chapter, *previous);
    let read = |path: &Path| {
        fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))
    };
    let write = |path: &Path, text: &str| {
        fs::write(path, text).map_err(|error| format!("cannot write {}: {error}", path.display()))
    };
    let chapter_folder = workbook.join("chapters").join(previous.directory);

    let workspace = Workspace::parse(&read(&workbook.join("Cargo.toml"))?)?;
    let description = match sketch {
        false => format!(
            "Chapter {} of the Event Loop Workbook, written from chapter {}'s program",
            chapter.number, previous.number
        ),
        true => format!(
            "Sketch {} of the Event Loop Workbook, written from sketch {}",
            chapter.number, previous.number
        ),
    };
    let locate = |from_root: &str| shared.fields(from_root, 0);
    let changes = Changes {
        was: previous.name,
        name,
        description: &description,
        locate: &locate,
        chapter_folder: &format!("chapters/{}", previous.directory),
        // A handout's grader is a member of the lab's workspace: one Cargo.lock, one target/.
        workspace: Some(if *handout { &["grader"] } else { &[] }),
    };
    let manifest = workspace.standalone(&read(&chapter_folder.join("Cargo.toml"))?, &changes)?;
    let preamble = format!(
        "# chapters/{}/Cargo.toml, standing alone: made by the workbook's lab (README.md says\n\
         # more). {}\n",
        previous.directory,
        shared.said()
    );
    write(&lab.join("Cargo.toml"), &(preamble + &manifest))?;
    fs::copy(workbook.join("Cargo.lock"), lab.join("Cargo.lock"))
        .map_err(|error| format!("cannot copy the workbook's Cargo.lock: {error}"))?;
    if *shared == Shared::Vendored {
        standalone::vendor(workbook, lab, &workspace)?;
    }
    if *handout {
        standalone::vendor_grader(workbook, lab, &workspace, shared)?;
    }
    let shared_in_words = shared.in_words();
    // The CI: grade.sh, and the workflow whose steps call it.
    write(&lab.join("grade.sh"), &workflow::grade_sh(name, chapter.number, sketch))?;
    make_executable(&lab.join("grade.sh"))?;
    let workflows = lab.join(".github/workflows");
    fs::create_dir_all(&workflows)
        .map_err(|error| format!("cannot create {}: {error}", workflows.display()))?;
    write(&workflows.join("grade.yml"), &workflow::grade_yml(chapter, sketch))?;
    write(&lab.join(".gitignore"), "/target\n/grades\n")?;
    let ci = workflow::readme_section(chapter, sketch, *handout);
    if sketch {
        // Sketch N-1 alone, as the lab's program, its name (`chNN-sketch`) made the student's.
        fs::create_dir_all(lab.join("src"))
            .map_err(|error| format!("cannot create src/: {error}"))?;
        let from = workbook.join(previous.sketch_path());
        let renamed = copy_tree(&from, &lab.join("src/main.rs"), &previous.sketch_name(), name)?;
        // Sketches 10 and 11 borrow the chapter's ring (`#[path = "../src/ring.rs"]`).
        let from_folder = from.parent().unwrap_or(workbook);
        copy_included(&read(&from)?, from_folder, &lab.join("src"), lab)?;
        let assignment = read(&workbook.join(chapter.sketch_path()))?;
        let readme = readme::sketch_readme(&readme::SketchLab {
            chapter,
            previous,
            name,
            folder: &lab.display().to_string(),
            workbook: &workbook.display().to_string(),
            program: &lab.join("target/release").join(name).display().to_string(),
            idea: &readme::idea(&assignment),
            shared: &shared_in_words,
            handout: *handout,
            ci: ci.clone(),
        });
        write(&lab.join("README.md"), &readme)?;
        return Ok(renamed);
    }
    // The chapter's folder but its manifest (and a `target/`, should there be one).
    let mut renamed = 0;
    let entries = fs::read_dir(&chapter_folder)
        .map_err(|error| format!("cannot list {}: {error}", chapter_folder.display()))?;
    for entry in entries.flatten() {
        if !matches!(entry.file_name().to_str(), Some("Cargo.toml" | "target")) {
            let to = lab.join(entry.file_name());
            renamed += copy_tree(&entry.path(), &to, previous.name, name)?;
        }
    }

    // Chapters the suite cannot see from outside bring tests of the code (`api_tests.rs`).
    let api_tests = api_tests::find(workbook, chapter)?;
    api_tests::install(lab, &api_tests)?;

    let page = find_page(workbook, chapter);
    let program = lab.join("target").join("release").join(name);
    let readme = readme::readme(&readme::Lab {
        chapter,
        previous,
        name,
        folder: &lab.display().to_string(),
        workbook: &workbook.display().to_string(),
        program: &program.display().to_string(),
        page,
        chapter_written: chapter.is_present(),
        shared: &shared_in_words,
        handout: *handout,
        handed_out: recorded(workbook, chapter.number)?,
        ci,
    });
    let readme = match api_tests.is_empty() {
        true => readme,
        false => api_tests::with_section(&readme, &api_tests::section(chapter, &api_tests)),
    };
    write(&lab.join("README.md"), &readme)?;
    Ok(renamed)
}

/// Lets its owner run `path` (`./grade.sh`), as `chmod 755` does.
fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|error| format!("cannot make {} executable: {error}", path.display()))
}

/// The README's section on what fails as handed out, from lab N's recorded grading, if
/// it has been recorded (`lab record N`).
fn recorded(workbook: &Path, lab: u8) -> Result<Option<String>, String> {
    let path = handed_out::recording_path(workbook, lab);
    let Ok(text) = fs::read_to_string(&path) else {
        return Ok(None);
    };
    let recording =
        handed_out::parse(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    Ok(Some(handed_out::section(lab, &recording)))
}

/// Copies `from` into `to`, folders and all, with `chapter_name` in the Rust sources made
/// `name`. Says in how many lines it made that change.
fn copy_tree(from: &Path, to: &Path, chapter_name: &str, name: &str) -> Result<usize, String> {
    if from.is_dir() {
        fs::create_dir_all(to)
            .map_err(|error| format!("cannot create {}: {error}", to.display()))?;
        let entries = fs::read_dir(from)
            .map_err(|error| format!("cannot list {}: {error}", from.display()))?;
        let mut renamed = 0;
        for entry in entries.flatten() {
            renamed += copy_tree(&entry.path(), &to.join(entry.file_name()), chapter_name, name)?;
        }
        return Ok(renamed);
    }
    let cannot = |error: std::io::Error| format!("cannot copy {}: {error}", from.display());
    if from.extension().is_some_and(|extension| extension == "rs") {
        let text = fs::read_to_string(from).map_err(cannot)?;
        fs::write(to, text.replace(chapter_name, name)).map_err(cannot)?;
        return Ok(text.lines().filter(|line| line.contains(chapter_name)).count());
    }
    fs::copy(from, to).map_err(cannot)?;
    Ok(0)
}

/// Copies the files `source` takes in by `#[path = "..."]`, found from `from_folder`, to
/// the same path from `to_folder`, and the files they take in, in turn. Without them a
/// sketch that borrows a chapter's module (sketch 10's `../src/ring.rs`) would not build.
fn copy_included(
    source: &str, from_folder: &Path, to_folder: &Path, lab: &Path,
) -> Result<(), String> {
    for line in source.lines() {
        let Some(path) =
            line.trim().strip_prefix("#[path = \"").and_then(|rest| rest.strip_suffix("\"]"))
        else {
            continue;
        };
        let (from, to) = (from_folder.join(path), lexical(&to_folder.join(path)));
        if !to.starts_with(lab) {
            return Err(format!(
                "{} takes in {path}, which would be outside the lab",
                from_folder.display()
            ));
        }
        if to.exists() {
            continue;
        }
        let text = fs::read_to_string(&from)
            .map_err(|error| format!("cannot read {}: {error}", from.display()))?;
        if let Some(folder) = to.parent() {
            fs::create_dir_all(folder)
                .map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
        }
        fs::write(&to, &text).map_err(|error| format!("cannot write {}: {error}", to.display()))?;
        // A file taken in by `#[path]` finds its own `#[path]` files beside itself.
        let beside = (from.parent().unwrap_or(from_folder), to.parent().unwrap_or(to_folder));
        copy_included(&text, beside.0, beside.1, lab)?;
    }
    Ok(())
}

/// `path` without `.` and `..` (the path need not exist).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            part => out.push(part),
        }
    }
    out
}

/// The chapter's page in the book (`book/src/chNN-*.md`), from the workbook's root, and
/// its opening.
fn find_page(workbook: &Path, chapter: &Chapter) -> Option<(String, readme::Page)> {
    let file = format!("book/src/ch{:02}-", chapter.number);
    let mut pages: Vec<PathBuf> = fs::read_dir(workbook.join("book/src"))
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let relative = path.strip_prefix(workbook).unwrap_or(path).to_string_lossy();
            relative.starts_with(&file) && relative.ends_with(".md")
        })
        .collect();
    pages.sort();
    let path = pages.into_iter().next()?;
    let page = readme::page(&fs::read_to_string(&path).ok()?)?;
    Some((path.strip_prefix(workbook).ok()?.display().to_string(), page))
}

/// What was made, and what to do next.
fn print_made(made: &Made, renamed: usize, sketch: bool) {
    let Made { lab, chapter, previous, name, shared, .. } = made;
    let shared = match shared {
        Shared::Git { url, rev } => format!("`shared` from {url} at {rev}"),
        _ => "`shared` copied into shared/".to_string(),
    };
    let (what, src) = match sketch {
        false => ("chapter", format!("chapters/{}/src", previous.directory)),
        true => ("sketch", previous.sketch_path().display().to_string()),
    };
    let program = match sketch {
        false => "'s program",
        true => "",
    };
    println!(
        "lab: made {}, {what} {}{program} as the package {name}, to become {what} {}:",
        lab.display(),
        previous.number,
        chapter.number
    );
    let folder = if sketch { "src/main.rs " } else { "src/        " };
    let lines = suite::report::plural(renamed, "line");
    println!("  {folder} {src}, its name made {name} in {lines}");
    println!("  Cargo.toml   a crate of its own, which builds wherever it goes; {shared}");
    println!("  Cargo.lock   the workbook's: the same versions, nothing new to download");
    println!("  README.md    what {what} {} adds, and how the suite grades it", chapter.number);
    let sketch_flag = if sketch { " --sketch" } else { "" };
    if made.handout {
        println!(
            "  grader/      the suite, to grade it with; nothing of chapter {} or later",
            chapter.number
        );
        println!("next, in the lab:");
        println!("  cd {} && cargo build --release", lab.display());
        println!(
            "  cargo run --release -q -p suite -- --command target/release/{name} --chapter {}{sketch_flag}",
            chapter.number
        );
        return;
    }
    println!("next, in the lab and then in the workbook:");
    println!("  cd {} && cargo build --release", lab.display());
    println!(
        "  cargo run -p suite -- --command {} --chapter {}{}",
        lab.join("target/release").join(name).display(),
        chapter.number,
        sketch_flag
    );
}

#[cfg(test)]
#[path = "main_tests.rs"]
mod tests;
