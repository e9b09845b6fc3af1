//! The processes the harness starts, and the promise that each of them dies with us.
//!
//! A benchmark that leaves a server or an nginx running behind it poisons the next run (the
//! port is taken, a core is busy). So every child lives inside a [`Guard`] that kills and
//! reaps it when dropped: at the end of a round, on an early `return`, and while a panic
//! unwinds. Every external command runs through [`run_bounded`], which kills it at a
//! deadline, so no tool can hang the harness. (Ctrl-C reaches the whole foreground process
//! group, children included, so an interrupted run cleans up too.)
//!
//! nginx with worker processes needs one more step: SIGKILL to its master would leave the
//! workers running, listening on the port. Its guard is made with a stop signal
//! ([`Guard::stop_with`]): the master is asked to stop first and takes its workers with it,
//! and any child still there afterwards is killed by its PID.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

// ANCHOR: guard
/// A child process that is killed (SIGKILL) and reaped when the guard is dropped.
pub struct Guard {
    child: Child,
    /// Sent first, for a program whose children must be stopped by it (nginx's master).
    stop_signal: Option<&'static str>,
}

/// How long a program asked to stop may take before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(5);

impl Guard {
    pub fn spawn(command: &mut Command) -> io::Result<Guard> {
        Ok(Guard { child: command.spawn()?, stop_signal: None })
    }

    /// Stop with `signal` (such as `TERM`) rather than SIGKILL, and give it time.
    pub fn stop_with(mut self, signal: &'static str) -> Guard {
        self.stop_signal = Some(signal);
        self
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process and its children (nginx's workers): everything it is made of. Threads
    /// are not listed; the kernel counts them inside their process already.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.pid()];
        pids.extend(children(self.pid()));
        pids
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Has it exited already? (A server that died on its own is a result worth reporting.)
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends a signal by name (`INT`, `TERM`) with the `kill` command: the standard
    /// library can only send SIGKILL, and a traced or profiled process must be allowed to
    /// write its summary before it goes.
    pub fn signal(&self, name: &str) -> io::Result<()> {
        signal(self.pid(), name)
    }

    /// Waits for the process to exit by itself, at most `limit`.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let children = children(self.pid());
        if let Some(name) = self.stop_signal {
            if self.exited().is_none() && self.signal(name).is_ok() {
                self.wait_for_exit(STOP_LIMIT);
            }
        }
        if self.exited().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait(); // reap it, or it lingers as a zombie
                                   // Children that outlived their parent (a master that was killed, not stopped).
        for pid in children {
            if Path::new(&format!("/proc/{pid}")).exists() {
                let _ = signal(pid, "KILL");
            }
        }
    }
}
// ANCHOR_END: guard

/// Sends a signal by name with the `kill` command.
fn signal(pid: u32, name: &str) -> io::Result<()> {
    let status = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("kill -s {name} {pid} failed")))
    }
}

/// The PIDs of a process's children, from `/proc/PID/task/TID/children` (one list per
/// thread: a child belongs to the thread that started it). Empty where Linux lacks it.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let text = fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(text.split_whitespace().filter_map(|child| child.parse::<u32>().ok()));
    }
    found
}

/// What a bounded command printed, and how it ended (`None`: killed at the deadline).
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub status: Option<ExitStatus>,
}

/// Runs a command to completion, but kills it if it is still running after `limit`.
pub fn run_bounded(command: &mut Command, limit: Duration) -> io::Result<Output> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut guard = Guard::spawn(command)?;
    // Read both pipes on threads: a child that fills one pipe while we wait on the other
    // would otherwise block forever.
    let stdout = drain(guard.child().stdout.take());
    let stderr = drain(guard.child().stderr.take());
    let status = guard.wait_for_exit(limit);
    drop(guard); // kills it if it is still running, which closes the pipes
    Ok(Output {
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        status,
    })
}

/// Reads a pipe to its end on a thread, as (lossy) text.
pub fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Finds an installed program: on `PATH`, or in the `sbin` folders where nginx lives
/// but which an ordinary user's `PATH` often lacks.
pub fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let extra = ["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from);
    std::env::split_paths(&path).chain(extra).map(|folder| folder.join(name)).find(|candidate| {
        fs::metadata(candidate)
            .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    })
}

/// A fresh folder under the system's temporary directory, removed when dropped.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(prefix: &str) -> io::Result<TempDir> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&path)?;
        Ok(TempDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}
