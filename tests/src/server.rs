//! A chapter's server as a child process, started and stopped by the suite.
//!
//! Every server runs on `127.0.0.1` with `--port 0`, so any number of tests can run at
//! once, and we learn the real port from the contract's first line on stdout,
//! `listening on http://HOST:PORT`. The [`Server`] guard kills and reaps the process when
//! it goes out of scope, on every path: a failing assertion, a panic, an early return.
//!
//! The program is one of ours or a reader's own ([`Program`]): the runner's `--command`
//! starts any server, in any language, the same way, with the same flags.
//!
//! The same type also stands for a server the suite did *not* start (the runner's
//! `--addr`): then there is no process to manage, and probes that need one skip.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::chapters::Chapter;
use crate::flags::{Needed, FLAGS};

/// How long a server may take to print its first line.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a reader's command may take to print its first line the first time the runner
/// starts it: it may compile first (`cargo run`, `go run`). Every later start gets
/// [`START_TIMEOUT`].
pub const FIRST_START_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of the server's stderr we keep for messages.
const STDERR_KEPT: usize = 16 * 1024;
/// How much we keep of a server started with `--trace`: the whole trace of a short run,
/// for a program that reads it back (the `timeline` tool).
const TRACE_KEPT: usize = 4 * 1024 * 1024;

/// How to run a server: one of ours, or a reader's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Program {
    /// A chapter's program, which the suite built.
    Binary(PathBuf),
    /// A reader's command line, in any language (the runner's `--command 'python3
    /// my_server.py'`). `sh` runs it as `exec CMD "$@"`, with the contract's flags as the
    /// arguments: the shell's quoting never touches them (a `--root` with a space in it
    /// arrives whole), and `exec` makes the command the process we started, so signals
    /// reach it, its exit status is its own, and `/proc/PID/` is the server's. So CMD must
    /// be one command (a program and its arguments); anything more goes in a script.
    Shell(String),
}

impl Program {
    /// A [`Command`] that runs the program with `args`, with at most `fd_limit` open files.
    /// A shell command gets a process group of its own (see [`ProcessGroup`]).
    pub fn command(&self, args: &[OsString], fd_limit: Option<u32>) -> Command {
        // std can only lower a child's limit with `unsafe` code run between fork and exec;
        // the shell's `ulimit` does the same, safely.
        let ulimit = fd_limit.map(|limit| format!("ulimit -n {limit} && ")).unwrap_or_default();
        let mut command = match (self, fd_limit) {
            (Program::Binary(binary), None) => Command::new(binary),
            // `exec` turns the shell into the server: the same process, so the pid we know
            // (and kill, and read /proc of) is the server's. "$0" "$@" are the binary and
            // its arguments, passed through untouched by the shell's quoting.
            (Program::Binary(binary), Some(_)) => {
                let mut command = Command::new("sh");
                command.arg("-c").arg(format!("{ulimit}exec \"$0\" \"$@\"")).arg(binary);
                command
            }
            (Program::Shell(line), _) => {
                let mut command = Command::new("sh");
                // "sh" is the script's $0: the name the shell's own errors begin with.
                command.arg("-c").arg(format!("{ulimit}exec {line} \"$@\"")).arg("sh");
                // A group of its own, so that everything it starts can be killed with it.
                command.process_group(0);
                command
            }
        };
        command.args(args);
        command
    }

    /// Who a message should name: the chapter for one of ours, the command for a reader's.
    pub fn label(&self, chapter: &Chapter) -> String {
        match self {
            Program::Binary(_) => chapter.name.to_string(),
            Program::Shell(line) => format!("`{line}`"),
        }
    }

    /// What the `Server` header of its answers must say: our chapters name themselves
    /// (`Server: ch03-event-loop`); a reader's server may say anything.
    pub fn server_name(&self, chapter: &Chapter) -> Option<&'static str> {
        match self {
            Program::Binary(_) => Some(chapter.name),
            Program::Shell(_) => None,
        }
    }

    /// "`python3 my_server.py --host 127.0.0.1 --port 0`": what a reader would type to see
    /// for themselves what the suite saw. Only for a reader's command: our chapters are
    /// named by the chapter alone.
    pub fn typed(&self, args: &[OsString]) -> Option<String> {
        let Program::Shell(line) = self else { return None };
        Some(format!("`{line} {}`", args_text(args)))
    }
}

/// "--host 127.0.0.1 --port 0", for messages.
pub fn args_text(args: &[OsString]) -> String {
    let args: Vec<String> = args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
    args.join(" ")
}

/// The process group of a reader's command: it and everything it started (`cargo run`
/// and the program it builds, a launcher and its interpreter, worker processes), killed
/// all together when this is dropped, and when the runner is interrupted
/// ([`kill_every_group`]). Our chapters are one process each and need none.
pub struct ProcessGroup {
    id: u32,
}

/// The groups alive now, for [`kill_every_group`]; and whether that has been called, so
/// that no new group starts after it.
static GROUPS: Mutex<(Vec<u32>, bool)> = Mutex::new((Vec::new(), false));

impl ProcessGroup {
    /// Spawns `command` (made by [`Program::command`]), and keeps its group if it has one.
    /// Spawning under the lock means an interrupt cannot slip between the spawn and the
    /// record of it.
    pub fn spawn(command: &mut Command, program: &Program) -> std::io::Result<Spawned> {
        let mut groups = GROUPS.lock().unwrap_or_else(PoisonError::into_inner);
        if groups.1 {
            return Err(std::io::Error::other("the suite is stopping"));
        }
        let child = command.spawn()?;
        let group = match program {
            Program::Binary(_) => None,
            // process_group(0): the group's id is the leader's pid.
            Program::Shell(_) => {
                groups.0.push(child.id());
                Some(ProcessGroup { id: child.id() })
            }
        };
        Ok(Spawned { child, group })
    }

    fn kill(&self) {
        kill_groups(&[self.id]);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
        let mut groups = GROUPS.lock().unwrap_or_else(PoisonError::into_inner);
        groups.0.retain(|&id| id != self.id);
    }
}

/// A process just started: the child, and its group if it has its own.
pub struct Spawned {
    pub child: Child,
    pub group: Option<ProcessGroup>,
}

/// SIGKILL to every process in these groups, with kill(1) (std can only signal a child).
/// A group that has ended is no error.
fn kill_groups(ids: &[u32]) {
    if ids.is_empty() {
        return;
    }
    let groups = ids.iter().map(|id| format!("-{id}"));
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--"])
        .args(groups)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Kills every reader's server still running, and lets no new one start: for the runner,
/// when it is interrupted (Ctrl-C). Their groups do not get the terminal's SIGINT, so
/// without this they would outlive the suite.
pub fn kill_every_group() -> usize {
    let mut groups = GROUPS.lock().unwrap_or_else(PoisonError::into_inner);
    groups.1 = true;
    kill_groups(&groups.0);
    groups.0.len()
}

/// The command line a probe wants its server started with.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--host HOST` instead of `127.0.0.1` (the IPv6 probe's `::1`).
    pub host: Option<String>,
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
    /// `--trace`: a line on stderr for every step of the loop. Up to 4 MiB of them is kept
    /// for [`Server::stderr_text`], not only the last few KiB.
    pub trace: bool,
    /// Close our end of the server's stderr as soon as its first line is on stdout, so
    /// that every line it logs from then on fails to write (EPIPE), as when a reader pipes
    /// `--trace` into `head`. What it printed is then lost to messages.
    pub close_stderr: bool,
    /// Keep our end of the server's stderr open and never read it, so that once the pipe
    /// is full every write to it would wait, as when `--trace` is piped into a pager the
    /// reader walked away from. What it printed is then lost to messages.
    pub unread_stderr: bool,
}

impl Options {
    pub fn is_default(&self) -> bool {
        self.host.is_none()
            && self.root.is_none()
            && self.upstream.is_none()
            && self.fs_delay_ms.is_none()
            && self.if_supported.is_empty()
            && self.fd_limit.is_none()
            && !self.trace
            && !self.close_stderr
            && !self.unread_stderr
    }
}

/// A running server under test.
pub struct Server {
    pub chapter: &'static Chapter,
    /// Who messages name: the chapter (`ch03-event-loop`), a reader's command (in
    /// backquotes), or "the server you started" (`--addr`).
    pub label: String,
    pub address: SocketAddr,
    /// What its `Server` header must say: the chapter's name for one of ours. `None` for
    /// a reader's server (`--command`, `--addr`), which may name itself as it likes.
    pub server_name: Option<&'static str>,
    /// The first line it printed on stdout (`listening on http://127.0.0.1:41234`); empty
    /// for a server the suite did not start.
    pub listening: String,
    /// `None` for a server the suite did not start.
    child: Option<Child>,
    /// A reader's command's process group, killed with it.
    group: Option<ProcessGroup>,
    /// The process's exit status, once it has been reaped.
    exit: Option<ExitStatus>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The [`Options::if_supported`] flags this chapter rejected.
    pub dropped_flags: Vec<&'static str>,
    /// Our end of its stderr, held and never read ([`Options::unread_stderr`]): the pipe
    /// stays open for as long as the server runs.
    _unread_stderr: Option<ChildStderr>,
}

impl Server {
    /// A server someone else started.
    pub fn external(chapter: &'static Chapter, address: SocketAddr) -> Server {
        Server {
            chapter,
            // Not the chapter's name: the chapter only says what the server is held to.
            label: "the server you started".to_string(),
            address,
            server_name: None,
            listening: String::new(),
            child: None,
            group: None,
            exit: None,
            stderr: Arc::default(),
            dropped_flags: Vec::new(),
            _unread_stderr: None,
        }
    }

    /// Starts `program` with `options` and waits for its first line.
    pub fn start(
        chapter: &'static Chapter, program: &Program, options: &Options,
    ) -> Result<Server, String> {
        Server::start_within(chapter, program, options, START_TIMEOUT)
    }

    /// [`Server::start`], giving the program `patience` to print its first line (the
    /// runner's first start of a reader's command, which may have to compile first).
    pub fn start_within(
        chapter: &'static Chapter, program: &Program, options: &Options, patience: Duration,
    ) -> Result<Server, String> {
        let spawn = |with_optional_flags| {
            Server::spawn(chapter, program, options, with_optional_flags, patience)
        };
        match spawn(true) {
            Err(Refused::UnknownFlag(_)) if !options.if_supported.is_empty() => {
                let mut server = spawn(false).map_err(|refused| refused.to_string())?;
                server.dropped_flags = options.if_supported.iter().map(|(flag, _)| *flag).collect();
                Ok(server)
            }
            result => result.map_err(|refused| refused.to_string()),
        }
    }

    /// The contract's command line for `options`, as every chapter takes it.
    fn arguments(options: &Options, with_optional_flags: bool) -> Vec<OsString> {
        let host = options.host.as_deref().unwrap_or("127.0.0.1");
        let mut args: Vec<OsString> =
            ["--host", host, "--port", "0"].into_iter().map(OsString::from).collect();
        let mut flag = |name: &str, value: OsString| args.extend([name.into(), value]);
        if let Some(root) = &options.root {
            flag("--root", root.into());
        }
        if let Some(upstream) = options.upstream {
            flag("--upstream", upstream.to_string().into());
        }
        if let Some(ms) = options.fs_delay_ms {
            flag("--fs-delay-ms", ms.to_string().into());
        }
        if options.trace {
            args.push("--trace".into());
        }
        if with_optional_flags {
            for (name, value) in &options.if_supported {
                args.extend([(*name).into(), value.into()]);
            }
        }
        args
    }

    /// One start: run the program, drain its pipes, wait for its first line, and read the
    /// address from it, or say why there is none.
    fn spawn(
        chapter: &'static Chapter, program: &Program, options: &Options, with_optional_flags: bool,
        patience: Duration,
    ) -> Result<Server, Refused> {
        let args = Server::arguments(options, with_optional_flags);
        let label = program.label(chapter);
        let Spawned { mut child, group } = Server::run(program, &args, options.fd_limit)
            .map_err(|error| Refused::Other(format!("cannot run {label}: {error}")))?;
        let stderr = StderrPipe::take(&mut child, options);
        let first_line = first_line_of_stdout(&mut child);
        let mut server = Server {
            chapter,
            label,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            server_name: program.server_name(chapter),
            listening: String::new(),
            child: Some(child),
            group,
            exit: None,
            stderr: Arc::clone(&stderr.kept),
            dropped_flags: Vec::new(),
            _unread_stderr: stderr.unread,
        };
        // For a reader's command, the whole command line, so they can run it themselves.
        let ran = program.typed(&args).map(|typed| format!(" (ran {typed})")).unwrap_or_default();
        let line = match first_line.recv_timeout(patience) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(Refused::Other(server.silent(patience, &ran)))
            }
            // stdout closed without a line: the program ended (or is ending).
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let typed = program.typed(&args).is_some();
                return Err(server.ended_early(stderr.drain, options, typed, &ran));
            }
        };
        // The read end's last holder: from now on the server's writes to stderr fail.
        drop(stderr.to_close);
        server.address = listening_address(&line).map_err(|hint| {
            Refused::Other(format!(
                "{}'s first line on stdout is {line:?}, not `listening on \
                 http://HOST:PORT` with the real port{hint}{ran}",
                server.label
            ))
        })?;
        server.listening = line;
        Ok(server)
    }

    /// Starts the program with the contract's pipes: no stdin, stdout and stderr to us.
    fn run(program: &Program, args: &[OsString], fd_limit: Option<u32>) -> io::Result<Spawned> {
        let mut command = program.command(args, fd_limit);
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        ProcessGroup::spawn(&mut command, program)
    }

    /// Why a server that is still running printed no first line within `patience`.
    fn silent(&self, patience: Duration, ran: &str) -> String {
        format!(
            "{} printed no first line on stdout within {} s{ran}: the contract wants \
             `listening on http://HOST:PORT` at once, flushed (stdout is a pipe here, not a \
             terminal, and many languages then hold output back: flush it, e.g. Python's \
             print(..., flush=True)){}",
            self.label,
            patience.as_secs(),
            self.stderr_note()
        )
    }

    /// Why a server ended without its first line: its exit status, what that status and its
    /// stderr suggest, and the end of its stderr. A refused later chapter's flag (exit 2,
    /// naming it) is [`Refused::UnknownFlag`], for [`Server::start_within`] to start it
    /// again without.
    fn ended_early(
        &mut self, stderr_drain: Option<JoinHandle<()>>, options: &Options, typed: bool, ran: &str,
    ) -> Refused {
        let status = self.wait_for_exit(Instant::now() + Duration::from_secs(5));
        // The process has ended, so its stderr is closed: wait until all of it has been
        // read before judging what it said.
        if let (Some(_), Some(drain)) = (status, stderr_drain) {
            let _ = drain.join();
        }
        let stderr = self.stderr_text();
        // Ours say "unknown flag --threads"; a reader's may say it another way
        // ("unrecognized arguments: --threads 2"), but names the flag.
        let optional =
            options.if_supported.iter().map(|(flag, _)| *flag).find(|flag| stderr.contains(flag));
        let names_a_flag = stderr.contains("unknown flag") || optional.is_some();
        let code = status.and_then(|status| status.code());
        let message = format!(
            "{} exited without printing `listening on http://HOST:PORT` ({}{}){ran}{}",
            self.label,
            status.map_or("still running".to_string(), |status| status.to_string()),
            why_it_ended(code, typed, optional),
            self.stderr_note()
        );
        match code == Some(2) && names_a_flag {
            true => Refused::UnknownFlag(message),
            false => Refused::Other(message),
        }
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

    /// What the server printed on stderr (the last few KiB; all of a trace, see
    /// [`Options::trace`]).
    pub fn stderr_text(&self) -> String {
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
        // The group first, while its leader is not yet reaped: until then, its id cannot
        // be taken by another process.
        drop(self.group.take());
        if let Some(child) = self.child.as_mut() {
            if self.exit.is_none() {
                let _ = child.kill();
                let _ = child.wait(); // reap it, or it lingers as a zombie
            }
        }
    }
}

/// What becomes of a server's stderr. Both pipes are drained by threads for the whole
/// life of the process: a server that fills a pipe nobody reads would block in its next
/// print. Unless the probe wants stderr closed ([`Options::close_stderr`]: held, unread,
/// until the first line has come) or never read ([`Options::unread_stderr`]).
struct StderrPipe {
    /// What the server printed: the last few KiB, or all of a trace.
    kept: Arc<Mutex<Vec<u8>>>,
    /// The thread that drains it, to wait for before judging what an ended server said.
    drain: Option<JoinHandle<()>>,
    /// Held until the first line has come, then closed.
    to_close: Option<ChildStderr>,
    /// Held, never read, for as long as the server runs.
    unread: Option<ChildStderr>,
}

impl StderrPipe {
    fn take(child: &mut Child, options: &Options) -> StderrPipe {
        let mut pipe = StderrPipe {
            kept: Arc::new(Mutex::new(Vec::new())),
            drain: None,
            to_close: None,
            unread: None,
        };
        if options.close_stderr {
            pipe.to_close = child.stderr.take();
        } else if options.unread_stderr {
            pipe.unread = child.stderr.take();
        } else if let Some(stderr) = child.stderr.take() {
            let limit = if options.trace { TRACE_KEPT } else { STDERR_KEPT };
            pipe.drain = Some(drain_keeping_the_last(stderr, Arc::clone(&pipe.kept), limit));
        }
        pipe
    }
}

/// Reads `pipe` until it closes, keeping the last `limit` bytes in `kept`.
fn drain_keeping_the_last(
    mut pipe: ChildStderr, kept: Arc<Mutex<Vec<u8>>>, limit: usize,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(count @ 1..) = pipe.read(&mut chunk) {
            let mut kept = kept.lock().unwrap_or_else(|poison| poison.into_inner());
            kept.extend_from_slice(&chunk[..count]);
            if kept.len() > limit {
                let excess = kept.len() - limit;
                kept.drain(..excess);
            }
        }
    })
}

/// Drains the server's stdout for the whole life of the process; its first line comes out
/// of the channel, and the channel closes without one if stdout closes first.
fn first_line_of_stdout(child: &mut Child) -> mpsc::Receiver<String> {
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
    first_line_arrives
}

/// What an exit status (and a later chapter's flag its stderr names, `optional`) says
/// about a server that ended before its first line, as the end of a sentence; empty when
/// it says nothing. `typed`: a reader's command, run by the shell.
fn why_it_ended(code: Option<i32>, typed: bool, optional: Option<&str>) -> String {
    match code {
        Some(127) if typed => ": the shell found no such program. The suite runs `exec CMD \
                               ARGS`, so CMD must be one program and its arguments; put \
                               anything more (a `cd`, a variable) in a script"
            .to_string(),
        Some(126) => ": the program is not executable".to_string(),
        Some(2) => {
            let names: Vec<&str> = FLAGS
                .iter()
                .filter(|flag| matches!(flag.needed, Needed::Always))
                .map(|flag| flag.name)
                .collect();
            format!(
                ": a refused command line? Every chapter takes {}; `cargo run -p suite -- \
                 --flags-table` lists the flags of later chapters",
                names.join(", ")
            )
        }
        // Refused, but not the way the suite can tell: it would have started the server
        // again without the flag.
        Some(_) if optional.is_some() => format!(
            ": its stderr names {}, a later chapter's flag; refuse a flag you do not know \
             with exit status 2, and the suite starts you again without it",
            optional.unwrap_or_default()
        ),
        _ => String::new(),
    }
}

/// The address in the contract's first line, `listening on http://HOST:PORT`; or a hint
/// for the message (maybe empty) when there is none.
fn listening_address(line: &str) -> Result<SocketAddr, &'static str> {
    let address = line.strip_prefix("listening on http://");
    // `SocketAddr` reads an IPv6 address only in brackets (`[::1]:41234`), as URLs write
    // it: `::1:41234` is no address a client can use.
    address.and_then(|address| address.parse().ok()).ok_or(match address {
        Some(address) if address.matches(':').count() > 1 && !address.starts_with('[') => {
            " (an IPv6 host goes in brackets, as in a URL: `http://[::1]:PORT`)"
        }
        _ => "",
    })
}

/// Why a server did not start, in words for a message.
enum Refused {
    /// It rejected a flag as unknown (exit 2, naming it): a flag from a later chapter.
    UnknownFlag(String),
    Other(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::UnknownFlag(message) | Refused::Other(message) => f.write_str(message),
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
