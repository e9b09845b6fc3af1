//! `sessions`: runs the console sessions the book quotes and writes what they printed.
//!
//! A page never types a program's output by hand. Each console block that shows output is
//! a session, `book/sessions/NAME.sh` (its format: `session.rs`, or `--help`), run from the
//! repository's root in one bash process, exactly as a reader would type it. What it
//! printed goes to `book/src/generated/sessions/NAME.txt`, which the page includes; the
//! hash of what it was made from goes to the lock (`book_tools::lock`), so that the book's check
//! fails once the session or its inputs change and the output was not made again.
//!
//! `book/tools/gen-sessions.sh` runs this program.

mod expect;
mod session;
mod transcript;

use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use book_tools::lock::{self, SESSIONS, SESSION_OUTPUTS};
use suite::chapters::workspace_root;

const USAGE: &str = "\
usage: book/tools/gen-sessions.sh [NAME...]
       (or cargo run -p book-tools --bin sessions -- [NAME...])

Runs the sessions book/sessions/NAME.sh (all of them when none is named), one at a time,
writes what each printed to book/src/generated/sessions/NAME.txt and records the hash of
its inputs in book/src/generated/sessions.lock.

  --status          say which generated pieces of the book are stale, and what remakes them
  --record NAME...  record today's inputs of a piece made by another program
                    (timeline-chNN, bench) or by hand (image-NAME, a diagram checked
                    against the files its depicts: line names) without making it again:
                    only when you know the piece is still right for them

A session file, line by line:
  # inputs: A B ...  what the output depends on: files, or folders taken recursively
                     (their *.rs, *.toml, *.py, *.sh and *.html files), from the root
  # timeout: N       seconds the whole session may take (default 120)
  # ...              a comment
  $ command          shown as `$ command`, and run
  & command          shown as `$ command`, run in the background (a server the page runs
                     in a terminal of its own); no comment at its end
  @ command          run, not shown, output dropped (build first, wait for a server with
                     book/tools/wait-for-port.sh PORT, stop it); if it fails, the session
                     fails
Above a shown command, what the page relies on in its output (expect.rs):
  # expect: PATTERN  a line of its output matches (`*`: any text, `{}`: a number)
  # absent: PATTERN  no line of its output matches
  # range: LOW..HIGH PATTERN
                     every line that matches has its `{}` between LOW and HIGH (and one does):
                     a figure the prose gives as a range, checked on every run
  # quiet            it prints nothing, on purpose
A session fails, and writes nothing, when a shown command prints nothing (unless it only
starts, stops, waits, builds or writes a file, or is `# quiet`), when a suite summary counts
a failure that no `# expect:` of its command matches, or when an expectation does not hold.
A line ending in `\\` continues on the next, and a here-document runs to its end marker.

What the page shows: each shown command, then what it and any background job printed,
in the order it was printed, without cargo's status lines and build warnings, the
repository's path shown as `.`, and lines wider than the book's column wrapped.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("--help" | "-h") => {
            println!("{USAGE}");
            Ok(())
        }
        Some("--status") => status(&root),
        Some("--record") if args.len() > 1 => record(&root, &args[1..]),
        Some(flag) if flag.starts_with('-') => Err(format!("unknown argument {flag}\n{USAGE}")),
        _ => run_all(&root, &args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("sessions: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the named sessions, or all; goes on past a failure, and fails at the end.
fn run_all(root: &Path, names: &[String]) -> Result<(), String> {
    let names = if names.is_empty() {
        lock::pieces(root)?
            .into_iter()
            .filter(|piece| piece.output.starts_with(SESSION_OUTPUTS))
            .map(|piece| piece.name)
            .collect()
    } else {
        names.to_vec()
    };
    let mut failed = Vec::new();
    for name in &names {
        let started = Instant::now();
        match run_session(root, name) {
            Ok(lines) => eprintln!(
                "sessions: {name}: wrote {SESSION_OUTPUTS}/{name}.txt ({lines} lines) in {:.1} s",
                started.elapsed().as_secs_f64()
            ),
            Err(message) => {
                eprintln!("sessions: {name}: {message}");
                failed.push(name.clone());
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{} of {} sessions failed: {}", failed.len(), names.len(), failed.join(" ")))
    }
}

/// Runs one session and writes its output and its lock line; says how many lines it wrote.
fn run_session(root: &Path, name: &str) -> Result<usize, String> {
    let file = root.join(SESSIONS).join(format!("{name}.sh"));
    let text = fs::read_to_string(&file)
        .map_err(|error| format!("cannot read {SESSIONS}/{name}.sh: {error}"))?;
    let session = session::parse(&text)?;
    let piece = lock::piece(root, name)?;
    lock::hash_of(root, &piece)?; // every input exists, before we spend time running it
    for port in session::ports(&session) {
        if is_listening(port) {
            return Err(format!(
                "something already listens on port {port}, which this session's server needs; \
                 stop it first"
            ));
        }
    }

    let work = Work::new(name)?;
    let root_text = root.to_string_lossy().into_owned();
    let script = work.0.join("session.sh");
    let output = work.0.join("output");
    let setup_log = work.0.join("setup.log");
    fs::write(&script, session::script(&session, &root_text))
        .map_err(|error| format!("cannot write {}: {error}", script.display()))?;
    let printed =
        File::create(&output).map_err(|error| format!("cannot create output: {error}"))?;
    let also = printed.try_clone().map_err(|error| format!("cannot share output: {error}"))?;
    let mut child = Command::new("bash")
        .arg(&script)
        .current_dir(root)
        .env("SESSION_SETUP_LOG", &setup_log)
        .env("CARGO_TERM_COLOR", "never")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .stdout(printed)
        .stderr(also)
        // A group of its own, so that everything the session started can be stopped at
        // once at the end, whatever happened.
        .process_group(0)
        .spawn()
        .map_err(|error| format!("cannot run bash: {error}"))?;
    let group = child.id();
    let deadline = Instant::now() + session.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => thread::sleep(Duration::from_millis(50)),
            Err(error) => {
                stop_group(group);
                return Err(format!("cannot wait for bash: {error}"));
            }
        }
    };
    // What was printed before the session ended is the session; what its leftovers print
    // as they are stopped is not.
    let length = fs::metadata(&output).map(|metadata| metadata.len()).unwrap_or(0);
    stop_group(group);
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "still running after {} s (its `# timeout:`); stopped",
            session.timeout.as_secs()
        ));
    };
    if status.code() == Some(97) || status.code() == Some(98) {
        let log = fs::read_to_string(&setup_log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("a setup step failed; its output ends:\n{}", tail.join("\n")));
    }
    let bytes = fs::read(&output).map_err(|error| format!("cannot read output: {error}"))?;
    let raw = String::from_utf8_lossy(&bytes[..(length as usize).min(bytes.len())]);
    let page = transcript::transcript(&raw, &session.steps, &root_text, &script.to_string_lossy())?;
    let problems = expect::check(&page, &session.steps);
    if !problems.is_empty() {
        // Kept for a look, where it cannot pass for the page's.
        let kept = std::env::temp_dir().join(format!("sessions-{name}.txt"));
        let _ = fs::write(&kept, &page);
        return Err(format!(
            "its output is not what the page expects (kept in {}; {SESSION_OUTPUTS}/{name}.txt \
             is unchanged):\n  {}",
            kept.display(),
            problems.join("\n  ")
        ));
    }
    let target = root.join(SESSION_OUTPUTS).join(format!("{name}.txt"));
    fs::create_dir_all(root.join(SESSION_OUTPUTS))
        .map_err(|error| format!("cannot create {SESSION_OUTPUTS}: {error}"))?;
    fs::write(&target, &page)
        .map_err(|error| format!("cannot write {}: {error}", target.display()))?;
    lock::record(root, &piece)?;
    if !status.success() {
        eprintln!("sessions: {name}: note: its last command ended with {status}");
    }
    Ok(page.lines().count())
}

/// Stops every process of the session's group: politely, then not.
fn stop_group(group: u32) {
    for signal in ["TERM", "KILL"] {
        let _ = Command::new("kill")
            .args(["-s", signal, "--", &format!("-{group}")])
            .stderr(Stdio::null())
            .status();
        thread::sleep(Duration::from_millis(200));
    }
}

/// Does anything on this machine listen on TCP port `port`? (Linux's /proc/net tables:
/// the local address's port in hex, state 0A.)
fn is_listening(port: u16) -> bool {
    let wanted = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        fs::read_to_string(table).unwrap_or_default().lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 3 && fields[1].ends_with(&wanted) && fields[3] == "0A"
        })
    })
}

/// A folder for one session's script and output, removed however the run ends.
struct Work(PathBuf);

impl Work {
    fn new(name: &str) -> Result<Work, String> {
        let path = std::env::temp_dir().join(format!("sessions-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path)
            .map_err(|error| format!("cannot create {}: {error}", path.display()))?;
        Ok(Work(path))
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Which pieces are stale, and the command that makes each again.
fn status(root: &Path) -> Result<(), String> {
    let locked = lock::read_lock(root);
    let mut stale = 0;
    for piece in lock::pieces(root)? {
        let today = lock::hash_of(root, &piece)?;
        let state = match locked.get(&piece.name) {
            _ if !root.join(&piece.output).is_file() => "missing",
            Some(hash) if *hash == today => "fresh",
            Some(_) => "stale",
            None => "not in the lock",
        };
        if state != "fresh" {
            stale += 1;
        }
        println!("{state:<16} {:<28} {}", piece.name, piece.remake);
    }
    println!("{stale} to make again");
    Ok(())
}

/// Records the lock lines of pieces made by other programs, without making them.
fn record(root: &Path, names: &[String]) -> Result<(), String> {
    for name in names {
        let piece = lock::piece(root, name)?;
        if piece.output.starts_with(SESSION_OUTPUTS) {
            return Err(format!(
                "{name} is a session: run it (book/tools/gen-sessions.sh {name}), do not only \
                 record it"
            ));
        }
        lock::record(root, &piece)?;
        eprintln!("sessions: recorded {name}'s inputs as they are today");
    }
    Ok(())
}
