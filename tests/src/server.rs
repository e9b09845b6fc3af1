//! A chapter's server as a child process, started and stopped by the suite.
//!
//! Every server runs on `127.0.0.1` with `--port 0`, so any number of tests can run at
//! once, and we learn the real port from the contract's first line on stdout,
//! `listening on http://HOST:PORT`. The [`Server`] guard kills and reaps the process when
//! it goes out of scope, on every path: a failing assertion, a panic, an early return.
//!
//! The same type also stands for a server the suite did *not* start (the runner's
//! `--addr`): then there is no process to manage, and probes that need one skip.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::chapters::Chapter;

/// How long a server may take to print its first line.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of the server's stderr we keep for messages.
const STDERR_KEPT: usize = 16 * 1024;

/// The command line a probe wants its server started with.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--root DIR`
    pub root: Option<PathBuf>,
    /// `--upstream HOST:PORT`
    pub upstream: Option<SocketAddr>,
    /// `--fs-delay-ms N`
    pub fs_delay_ms: Option<u64>,
    /// Flags that only later chapters know (`--header-timeout 0.5`). The server is first
    /// started with them; a chapter that rejects them as unknown is started without them,
    /// and [`Server::dropped_flags`] says so. That a chapter lacks the flag is then part
    /// of what the probe observes, not a reason to give up.
    pub if_supported: Vec<(&'static str, String)>,
    /// Start the server with at most this many open file descriptors (`ulimit -n`), so a
    /// probe can run it out of them with a few hundred connections instead of thousands.
    pub fd_limit: Option<u32>,
    /// `--trace`: a line on stderr for every step of the loop.
    pub trace: bool,
    /// Close our end of the server's stderr as soon as its first line is on stdout, so
    /// that every line it logs from then on fails to write (EPIPE), as when a reader pipes
    /// `--trace` into `head`. What it printed is then lost to messages.
    pub close_stderr: bool,
}

impl Options {
    pub fn is_default(&self) -> bool {
        self.root.is_none()
            && self.upstream.is_none()
            && self.fs_delay_ms.is_none()
            && self.if_supported.is_empty()
            && self.fd_limit.is_none()
            && !self.trace
            && !self.close_stderr
    }
}

/// A running server under test.
pub struct Server {
    pub chapter: &'static Chapter,
    pub address: SocketAddr,
    /// `None` for a server the suite did not start.
    child: Option<Child>,
    /// The process's exit status, once it has been reaped.
    exit: Option<ExitStatus>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The [`Options::if_supported`] flags this chapter rejected.
    pub dropped_flags: Vec<&'static str>,
}

impl Server {
    /// A server someone else started.
    pub fn external(chapter: &'static Chapter, address: SocketAddr) -> Server {
        Server {
            chapter,
            address,
            child: None,
            exit: None,
            stderr: Arc::default(),
            dropped_flags: Vec::new(),
        }
    }

    /// Starts `binary` with `options` and waits for its first line.
    pub fn start(
        chapter: &'static Chapter, binary: &Path, options: &Options,
    ) -> Result<Server, String> {
        match Server::spawn(chapter, binary, options, true) {
            Err(Refused::UnknownFlag(_)) if !options.if_supported.is_empty() => {
                let mut server = Server::spawn(chapter, binary, options, false)
                    .map_err(|refused| refused.to_string())?;
                server.dropped_flags = options.if_supported.iter().map(|(flag, _)| *flag).collect();
                Ok(server)
            }
            result => result.map_err(|refused| refused.to_string()),
        }
    }

    fn spawn(
        chapter: &'static Chapter, binary: &Path, options: &Options, with_optional_flags: bool,
    ) -> Result<Server, Refused> {
        let mut command = match options.fd_limit {
            None => Command::new(binary),
            Some(limit) => {
                // std can only lower a child's limit with `unsafe` code run between fork
                // and exec; the shell's `ulimit` does the same, safely. `exec` then turns
                // the shell into the server: the same process, so the pid we know (and
                // kill, and read /proc of) is the server's. "$0" "$@" are the binary and
                // its arguments, passed through untouched by the shell's quoting.
                let mut command = Command::new("sh");
                command
                    .arg("-c")
                    .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                    .arg(binary);
                command
            }
        };
        command.args(["--host", "127.0.0.1", "--port", "0"]);
        if let Some(root) = &options.root {
            command.arg("--root").arg(root);
        }
        if let Some(upstream) = options.upstream {
            command.arg("--upstream").arg(upstream.to_string());
        }
        if let Some(ms) = options.fs_delay_ms {
            command.arg("--fs-delay-ms").arg(ms.to_string());
        }
        if options.trace {
            command.arg("--trace");
        }
        if with_optional_flags {
            for (flag, value) in &options.if_supported {
                command.arg(flag).arg(value);
            }
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| Refused::Other(format!("cannot run {}: {error}", binary.display())))?;

        // Both pipes are drained by threads for the whole life of the process: a server
        // that fills a pipe nobody reads would block in its next print. (Unless the probe
        // wants stderr closed: then it is held, unread, until the first line has come.)
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut stderr_reader = None;
        let mut stderr_to_close = None;
        if options.close_stderr {
            stderr_to_close = child.stderr.take();
        } else if let Some(mut pipe) = child.stderr.take() {
            let kept = Arc::clone(&stderr);
            stderr_reader = Some(thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(count @ 1..) = pipe.read(&mut chunk) {
                    let mut kept = kept.lock().unwrap_or_else(|poison| poison.into_inner());
                    kept.extend_from_slice(&chunk[..count]);
                    if kept.len() > STDERR_KEPT {
                        let excess = kept.len() - STDERR_KEPT;
                        kept.drain(..excess);
                    }
                }
            }));
        }
        let (first_line, first_line_arrives) = mpsc::channel();
        if let Some(pipe) = child.stdout.take() {
            thread::spawn(move || {
                let mut lines = BufReader::new(pipe).lines();
                if let Some(Ok(line)) = lines.next() {
                    let _ = first_line.send(line);
                }
                for _ in lines {} // the rest is not ours to judge; keep the pipe empty
            });
        }
        let mut server = Server {
            chapter,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            child: Some(child),
            exit: None,
            stderr,
            dropped_flags: Vec::new(),
        };

        let line = match first_line_arrives.recv_timeout(START_TIMEOUT) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(Refused::Other(format!(
                    "{} printed no first line within {} s{}",
                    chapter.name,
                    START_TIMEOUT.as_secs(),
                    server.stderr_note()
                )))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed without a line: the program ended (or is ending).
                let status = server.wait_for_exit(Instant::now() + Duration::from_secs(5));
                // The process has ended, so its stderr is closed: wait until all of it
                // has been read before judging what it said.
                if let (Some(_), Some(reader)) = (status, stderr_reader) {
                    let _ = reader.join();
                }
                let stderr = server.stderr_text();
                if status.and_then(|status| status.code()) == Some(2)
                    && stderr.contains("unknown flag")
                {
                    return Err(Refused::UnknownFlag(stderr));
                }
                return Err(Refused::Other(format!(
                    "{} exited without printing `listening on ...` ({}){}",
                    chapter.name,
                    status.map_or("still running".to_string(), |status| status.to_string()),
                    server.stderr_note()
                )));
            }
        };
        // The read end's last holder: from now on the server's writes to stderr fail.
        drop(stderr_to_close);
        server.address = line
            .strip_prefix("listening on http://")
            .and_then(|address| address.parse().ok())
            .ok_or_else(|| {
                Refused::Other(format!(
                    "{}'s first line is {line:?}, not `listening on http://HOST:PORT`",
                    chapter.name
                ))
            })?;
        Ok(server)
    }

    /// The process id of a server we started (for `/proc/PID/`, see [`crate::resources`]).
    /// `None` for someone else's server, and once ours has been reaped: its pid may then
    /// already belong to another process.
    pub fn pid(&self) -> Option<u32> {
        match (&self.child, self.exit) {
            (Some(child), None) => Some(child.id()),
            _ => None,
        }
    }

    /// Sends a signal by name (`TERM`, `INT`) with kill(1): std can only send SIGKILL,
    /// and the suite keeps to std.
    pub fn signal(&self, name: &str) -> Result<(), String> {
        let child = self.child.as_ref().ok_or("not our process to signal")?;
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(child.id().to_string())
            .status()
            .map_err(|error| format!("cannot run kill: {error}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill -{name} {} failed: {status}", child.id()))
        }
    }

    /// Has the process ended? Reaps it if so. `None` while it runs (or if it is not ours).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            let child = self.child.as_mut()?;
            self.exit = child.try_wait().ok().flatten();
        }
        self.exit
    }

    /// Waits until the process ends or `deadline` passes.
    pub fn wait_for_exit(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            if self.child.is_none() || Instant::now() >= deadline {
                return None;
            }
            // std has no "wait with a timeout", so we look again shortly.
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// What the server printed on stderr (the last few KiB).
    fn stderr_text(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|poison| poison.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    }

    /// "; stderr: ..." for a message, or nothing if the server printed nothing.
    pub fn stderr_note(&self) -> String {
        let text = self.stderr_text();
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            let tail: Vec<&str> = text.lines().rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("; its stderr ends: {}", tail.join(" | "))
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            if self.exit.is_none() {
                let _ = child.kill();
                let _ = child.wait(); // reap it, or it lingers as a zombie
            }
        }
    }
}

/// Why a server did not start.
enum Refused {
    /// It rejected a flag as unknown (exit 2): a flag from a later chapter.
    UnknownFlag(String),
    Other(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::UnknownFlag(stderr) => write!(f, "rejected a flag: {}", stderr.trim()),
            Refused::Other(message) => f.write_str(message),
        }
    }
}
