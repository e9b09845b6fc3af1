//! Lines on stderr: `log!` for what an operator should see, `trace!` for `--trace`.
//!
//! Both go through [`write_line`], which ignores write errors. `eprintln!` panics when it
//! cannot write, and stderr can stop taking lines at any time: a reader pipes `--trace`
//! into `head`, which exits after ten lines; a supervisor that collected our output goes
//! away. A server must not die because nobody is listening to it any more.
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
//! runs on `main`, so its lines stay as they were. `cargo run -p suite --bin timeline`
//! reads these lines back and draws them.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::Instant;

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

/// Writes one line to stderr, and never fails: see the module documentation.
pub fn write_line(line: fmt::Arguments) {
    // One `write` per line (the lock holds the line together when threads log at once).
    let _ = writeln!(io::stderr().lock(), "{line}");
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
