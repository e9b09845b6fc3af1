//! `--trace`: one line per step on stderr, so a reader can watch the loop work.
//!
//! A global switch rather than a value passed everywhere: tracing is a window onto the
//! program, not part of its logic, and threading a flag through every function would
//! make the chapters harder to read. Use it as `trace!("poll: {} fds", n)`; when tracing
//! is off the arguments are not even formatted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
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

/// Milliseconds since tracing was enabled, printed at the start of each trace line.
pub fn elapsed_ms() -> f64 {
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
}

/// `trace!("format", args...)`: prints `[   12.345 ms] ...` on stderr when `--trace` is on.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::trace::enabled() {
            eprintln!("[{:10.3} ms] {}", $crate::trace::elapsed_ms(), format_args!($($arg)*));
        }
    };
}
