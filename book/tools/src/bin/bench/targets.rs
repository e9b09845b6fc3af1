//! The servers under test: the chapters, built in release mode, and nginx as the peer
//! (`nginx.rs`).
//!
//! Every round starts a fresh server and kills it afterwards, so one scenario's leftovers
//! (a grown buffer, ten thousand closed sockets) never weigh on the next, and the peak
//! memory we read from `/proc` belongs to that scenario alone.
//!
//! A chapter can be more than one target: chapter 7 once per way of waiting
//! (`--backend epoll` and `--backend poll`), chapter 9 with one loop and with two
//! (`--threads 1`, `--threads 2`). The harness finds out from the chapter's `--help`, so a
//! later chapter with the same flags is measured the same way without a change here.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::process::{run_bounded, Guard};

/// How long a server may take to start listening.
pub const START_LIMIT: Duration = Duration::from_secs(5);

/// Idle connections and keep-alive connections must outlive the longest scenario: chapters
/// 4 and later close them after a few seconds by default, which would skew the idle sweep.
pub const PATIENT_TIMEOUT_SECS: u32 = 120;

pub enum Kind {
    /// `flags` are the chapter flags beyond the basic ones: longer timeouts where the
    /// chapter has them, and the variant's own (`--backend poll`, `--threads 2`).
    Chapter { flags: Vec<String> },
    /// `status_page`: built with the stub_status module (it says how many connections).
    /// `echo`: how to have the echo module, if nginx has it (see `nginx::echo_module`).
    /// `workers`: 1 is one process that serves; more is a master and that many workers.
    Nginx { status_page: bool, echo: Option<String>, workers: usize },
}

pub struct Target {
    /// `ch02-poll`, `ch07-epoll (poll)`, `ch09-multicore x2`, `nginx`, `nginx x2`.
    pub name: String,
    pub kind: Kind,
    pub program: PathBuf,
    /// How many cores it sets out to use: event loops, or nginx worker processes. Its
    /// "vs nginx" is against the nginx with as many workers.
    pub loops: usize,
}

/// What every server serves: a root folder with the 8 MiB file, and a scratch folder for
/// nginx's configuration and the servers' logs.
pub struct Site {
    pub root: PathBuf,
    pub scratch: PathBuf,
}

pub const BIG_FILE: &str = "big.bin";
pub const BIG_FILE_SIZE: usize = 8 * 1024 * 1024;
pub const MEDIUM_FILE: &str = "medium.bin";
pub const MEDIUM_FILE_SIZE: usize = 64 * 1024;

impl Site {
    /// Writes the 8 MiB file and the 64 KiB one (its first 64 KiB): bytes from a tiny pseudo-random generator, so that nothing
    /// along the way could make an unfairly small job of a file of zeros.
    pub fn create(folder: &Path) -> std::io::Result<Site> {
        let root = folder.join("root");
        let scratch = folder.join("scratch");
        fs::create_dir_all(&root)?;
        fs::create_dir_all(&scratch)?;
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut bytes = Vec::with_capacity(BIG_FILE_SIZE);
        while bytes.len() < BIG_FILE_SIZE {
            // xorshift64: good enough to look random, and the same file every run.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.extend_from_slice(&state.to_le_bytes());
        }
        fs::write(root.join(BIG_FILE), &bytes)?;
        fs::write(root.join(MEDIUM_FILE), &bytes[..MEDIUM_FILE_SIZE])?;
        Ok(Site { root, scratch })
    }
}

/// A running server. Dropping it kills it.
pub struct Server {
    pub name: String,
    pub address: SocketAddr,
    pub guard: Guard,
}

impl Server {
    /// Every process the server is made of: one for a chapter (its threads included),
    /// nginx's master and its workers.
    pub fn pids(&self) -> Vec<u32> {
        self.guard.pids()
    }

    /// The server's peak resident memory so far, in KiB (`VmHWM`: the "high water mark",
    /// read by the suite's [`suite::resources::memory`]), added up over its processes.
    /// (The processes of nginx x2 share some pages, which the sum counts once for each.)
    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.pids()
            .into_iter()
            .map(|pid| suite::resources::memory(pid).and_then(|memory| Some(memory.peak? / 1024)))
            .sum()
    }
}

/// The chapters present under `chapters/`, as (number, package name), in order: a folder
/// `03-event-loop` is package and binary `ch03-event-loop`.
pub fn discover_chapters(workspace: &Path) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(workspace.join("chapters")) else {
        return found;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let number = name.split('-').next().and_then(|digits| digits.parse().ok());
        if let Some(number) = number {
            if entry.path().join("Cargo.toml").is_file() {
                found.push((number, format!("ch{name}")));
            }
        }
    }
    found.sort();
    found
}

/// `cargo build --release -p PACKAGE --bin BIN`, and where cargo put the program. Cargo's
/// own JSON messages say where, so this works whatever `CARGO_TARGET_DIR` is.
pub fn build(workspace: &Path, package: &str, bin: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace)
        .args(["build", "--release", "--message-format=json-render-diagnostics"])
        .args(["-p", package, "--bin", bin])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit()) // the reader sees cargo's progress and any error
        .output()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if !output.status.success() {
        return Err(format!("cargo build -p {package} failed"));
    }
    let json = String::from_utf8_lossy(&output.stdout);
    json.lines()
        .filter(|line| line.contains("\"reason\":\"compiler-artifact\""))
        .filter_map(|line| json_string(line, "executable"))
        .map(PathBuf::from)
        .find(|path| path.file_name().is_some_and(|name| name == bin))
        .ok_or_else(|| format!("cargo built {package} but did not say where {bin} is"))
}

/// The ways the harness runs a chapter, given the flags it knows: (name suffix, flags,
/// event loops). A chapter with neither flag is run one way, as it comes.
fn ways(knows: impl Fn(&str) -> bool) -> Vec<(&'static str, Vec<&'static str>, usize)> {
    if knows("--backend") {
        // Chapter 7: epoll (named, so the plain name stays epoll if the default changes)
        // and poll, side by side.
        vec![("", vec!["--backend", "epoll"], 1), (" (poll)", vec!["--backend", "poll"], 1)]
    } else if knows("--threads") {
        // Chapter 9: one loop, and two (beside nginx x2). Its default is one per core.
        vec![(" x1", vec!["--threads", "1"], 1), (" x2", vec!["--threads", "2"], 2)]
    } else {
        vec![("", Vec::new(), 1)]
    }
}

/// The string value of `"key":"..."` in one line of cargo's JSON (paths rarely need
/// escapes; a path that has them is unescaped for `\\` and `\"`, the only ones cargo uses).
fn json_string(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut value = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => value.push(chars.next()?),
            c => value.push(c),
        }
    }
    None
}

impl Target {
    /// A chapter, built, as one target or several (see the top of this file). Asks its
    /// `--help` which optional flags it knows, to lengthen its timeouts where it has them.
    pub fn chapter(workspace: &Path, package: &str) -> Result<Vec<Target>, String> {
        let program = build(workspace, package, package)?;
        let help = run_bounded(Command::new(&program).arg("--help"), START_LIMIT)
            .map_err(|error| format!("cannot run {package}: {error}"))?;
        let knows = |flag: &str| help.stdout.contains(flag) || help.stderr.contains(flag);
        let mut flags = Vec::new();
        for flag in ["--keep-alive-timeout", "--header-timeout"] {
            if knows(flag) {
                flags.push(flag.to_string());
                flags.push(PATIENT_TIMEOUT_SECS.to_string());
            }
        }
        Ok(ways(knows)
            .into_iter()
            .map(|(suffix, extra, loops)| Target {
                name: format!("{package}{suffix}"),
                kind: Kind::Chapter {
                    flags: flags
                        .iter()
                        .cloned()
                        .chain(extra.into_iter().map(String::from))
                        .collect(),
                },
                program: program.clone(),
                loops,
            })
            .collect())
    }

    pub fn is_nginx(&self) -> bool {
        matches!(self.kind, Kind::Nginx { .. })
    }

    /// Starts the server on a free port of 127.0.0.1, and waits until it listens.
    pub fn start(&self, site: &Site) -> Result<Server, String> {
        self.start_with(site, &[])
    }

    /// The same, with variables added to the server's environment, such as `LD_PRELOAD`
    /// for the allocation counter (`allocations.rs`).
    pub fn start_with(
        &self, site: &Site, environment: &[(&str, &OsStr)],
    ) -> Result<Server, String> {
        match &self.kind {
            Kind::Chapter { flags } => self.start_chapter(site, flags, environment),
            Kind::Nginx { .. } => crate::nginx::start(self, site, environment),
        }
    }

    // ANCHOR: start_chapter
    fn start_chapter(
        &self, site: &Site, flags: &[String], environment: &[(&str, &OsStr)],
    ) -> Result<Server, String> {
        let log = log_file(site, &self.name)?;
        let mut command = Command::new(&self.program);
        command
            .envs(environment.iter().copied())
            .args(["--host", "127.0.0.1", "--port", "0", "--root"])
            .arg(&site.root)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        let mut guard = Guard::spawn(&mut command)
            .map_err(|error| format!("cannot start {}: {error}", self.name))?;

        // The contract: the first line on stdout is `listening on http://HOST:PORT`. Read
        // it on a thread so that a server that never says it cannot hang us; the thread
        // then drains stdout until the server exits, so the pipe can never fill up.
        let stdout = guard.child().stdout.take();
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = sender.send(first);
            }
            for _ in lines {}
        });
        let line = match receiver.recv_timeout(START_LIMIT) {
            Ok(line) => line,
            Err(_) => {
                return Err(match guard.exited() {
                    Some(status) => format!("{} exited ({status}) before listening", self.name),
                    None => format!(
                        "{} did not start listening within {} s",
                        self.name,
                        START_LIMIT.as_secs()
                    ),
                })
            }
        };
        let address = line
            .strip_prefix("listening on http://")
            .and_then(|address| address.trim().parse().ok())
            .ok_or_else(|| format!("{}: unexpected first line {line:?}", self.name))?;
        Ok(Server { name: self.name.clone(), address, guard })
    }
    // ANCHOR_END: start_chapter
}

/// Appends a server's stderr to a log in the scratch folder, for a post-mortem.
pub fn log_file(site: &Site, name: &str) -> Result<File, String> {
    File::options()
        .create(true)
        .append(true)
        .open(site.scratch.join(format!("{name}.stderr")))
        .map_err(|error| format!("cannot open a log file: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chapter_is_run_each_way_its_flags_allow() {
        let plain = ways(|_| false);
        assert_eq!(plain, vec![("", Vec::new(), 1)]);
        let epoll = ways(|flag| flag == "--backend");
        assert_eq!(epoll[1], (" (poll)", vec!["--backend", "poll"], 1));
        let threads = ways(|flag| flag == "--threads");
        assert_eq!(threads[1], (" x2", vec!["--threads", "2"], 2));
    }

    #[test]
    fn finds_where_cargo_put_the_program() {
        let line = r#"{"reason":"compiler-artifact","executable":"/t/release/ch02-poll","x":1}"#;
        assert_eq!(json_string(line, "executable").as_deref(), Some("/t/release/ch02-poll"));
        assert_eq!(json_string(r#"{"executable":null}"#, "executable"), None);
    }
}
