//! Lines on stderr: `log!` for what an operator should see, `trace!` for `--trace`.
//!
//! Both go through [`write_line`], which never fails and never waits. Writing to stderr is
//! I/O like any other, and it can go wrong in two ways a server must survive:
//!
//! - stderr stops taking lines for good: a reader pipes `--trace` into `head`, which exits
//!   after ten lines; a supervisor that collected our output goes away. Every write then
//!   fails (EPIPE), and `eprintln!` would panic on the first. We ignore the error.
//! - stderr stops taking lines for now: the pipe's reader is a pager the reader walked
//!   away from, or a supervisor that stalls. Once the pipe's buffer (64 KiB on Linux) is
//!   full, a write *blocks* until someone reads, and a loop blocked in a write serves no
//!   one. So before each line we ask `poll` whether stderr can take it at once; if not, the
//!   line is dropped and counted, and the next line that gets through is preceded by
//!   `(N lines dropped: stderr was full)`. The pipe's buffer is the queue: nothing is held
//!   back in memory, the lines that get through keep their order, and none is left
//!   unwritten when the process exits (as lines queued for a writer thread of our own
//!   would be). Only another process writing to the same pipe between our `poll` and our
//!   `write` could still make us wait, for that one line.
//!
//! Except in a chapter's own unit tests (`cfg!(test)`, which the macros ask in the crate
//! that uses them): there the lines go through `eprintln!`, which the test harness
//! captures, so a test that makes the loop log on purpose (a callback that panics) prints
//! nothing unless it fails. `cargo test` captures only what `print!` and `eprint!` write,
//! never a write to the stderr handle; and its capture cannot fail, nor can a test stop a
//! server.
//!
//! Tracing is a global switch rather than a value passed everywhere: it is a window onto
//! the program, not part of its logic, and threading a flag through every function would
//! make the chapters harder to read. Use it as `trace!("poll: {} fds", n)`; when tracing is
//! off the arguments are not even formatted.
//!
//! A trace line is `[   12.345 ms] text`: milliseconds since start on the monotonic clock,
//! then what happened. A line from a named thread other than `main` says whose it is,
//! `[   12.345 ms] [pool-worker-0] text`, so that the lines of a thread pool's workers
//! (chapter 6 on) and of chapter 9's loops can be told apart. The loop of chapters 1-8
//! runs on `main`, so its lines stay as they were. `cargo run -p book-tools --bin timeline`
//! reads these lines back and draws them.

use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::Instant;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

static ENABLED: AtomicBool = AtomicBool::new(false);
static START: OnceLock<Instant> = OnceLock::new();

/// Turns tracing on (from `--trace`).
pub fn enable() {
    START.get_or_init(Instant::now);
    ENABLED.store(true, Ordering::Relaxed);
}

/// Is `--trace` on?
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Milliseconds since tracing was enabled, on the monotonic clock: the number at the start
/// of each trace line, so that a program can line the steps up in time.
pub fn elapsed_ms() -> f64 {
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
}

/// `[name] ` for a named thread other than `main`, and nothing for `main`: see the module
/// documentation. A value that formats itself, so that a trace line costs no allocation.
pub struct ThreadName;

impl fmt::Display for ThreadName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match thread::current().name() {
            None | Some("main") => Ok(()),
            Some(name) => write!(f, "[{name}] "),
        }
    }
}

/// Lines dropped because stderr could not take them at once, not yet reported.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// The longest line we write: `PIPE_BUF`, the most a pipe takes in one write without
/// waiting once `poll` says it has room (POSIX promises at least 512; Linux, macOS and
/// FreeBSD give 4 KiB). A longer line is cut there; ours are a few dozen bytes.
const LONGEST_LINE: usize = 4096;

/// Writes one line to stderr, never failing and never waiting: see the module documentation.
pub fn write_line(line: fmt::Arguments) {
    let stderr = io::stderr();
    // The lock keeps lines whole, and the check and the write together, when threads log
    // at once (chapter 6's workers, chapter 9's loops).
    let mut stderr = stderr.lock();
    let mut ready = [PollFd::new(stderr.as_fd(), PollFlags::POLLOUT)];
    let writable = poll(&mut ready, PollTimeout::ZERO).is_ok_and(|count| count == 1)
        && ready[0].revents().is_some_and(|events| events.contains(PollFlags::POLLOUT));
    if !writable {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // One line, one write: formatted here first, in a buffer on the stack.
    let mut text = Line { bytes: [0; LONGEST_LINE], length: 0 };
    let dropped = DROPPED.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        let _ = writeln!(text, "({dropped} lines dropped: stderr was full)");
    }
    let _ = writeln!(text, "{line}");
    if text.length == LONGEST_LINE {
        text.bytes[LONGEST_LINE - 1] = b'\n'; // cut, but still a line
    }
    let _ = stderr.write_all(&text.bytes[..text.length]);
}

/// A line being formatted, in a fixed buffer: what does not fit is cut off.
struct Line {
    bytes: [u8; LONGEST_LINE],
    length: usize,
}

impl fmt::Write for Line {
    fn write_str(&mut self, piece: &str) -> fmt::Result {
        let room = LONGEST_LINE - self.length;
        let taken = piece.len().min(room);
        self.bytes[self.length..self.length + taken].copy_from_slice(&piece.as_bytes()[..taken]);
        self.length += taken;
        Ok(())
    }
}

/// `log!("format", args...)`: one line on stderr that cannot stop the server (in unit
/// tests, one the test harness captures: see the module documentation).
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {
        if cfg!(test) {
            eprintln!("{}", format_args!($($arg)*))
        } else {
            $crate::trace::write_line(format_args!($($arg)*))
        }
    };
}

/// `trace!("format", args...)`: prints `[   12.345 ms] ...` on stderr when `--trace` is on
/// (with `[thread] ` after the time on a thread other than `main`), as `log!` does.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::trace::enabled() {
            $crate::log!(
                "[{:10.3} ms] {}{}",
                $crate::trace::elapsed_ms(),
                $crate::trace::ThreadName,
                format_args!($($arg)*)
            );
        }
    };
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
