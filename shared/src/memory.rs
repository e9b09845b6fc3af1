//! Memory a burst leaves behind, given back to the system once the server falls idle.
//!
//! Robustness, not a lesson (the book's "Hostile clients" page tells it). When 500 clients
//! each `POST /echo` a megabyte at once, the server holds a gigabyte for a moment and frees
//! it when they leave. But freed is not given back: glibc's allocator keeps what is freed
//! for the next allocation, most of it in the middle of its heap, which it can only shrink
//! from the top. `top` and `/proc` go on showing the server at its peak, long after the
//! burst, and a reader cannot tell that from a leak.
//!
//! `malloc_trim(3)` asks the allocator to give back every whole page it holds free. Doing
//! so while the server is busy would be waste (the next requests fault the pages in again),
//! so a thread of ours looks once a second at how much CPU time the process has used, and
//! trims when a second passes with (almost) none, if the process has done anything at all
//! since the last trim. "Anything at all", not "a busy second": freeing is cheap. When
//! clients read a burst's answers slowly, the server sits idle while they do, and trims
//! then, with their buffers still in use; the buffers are freed as the last of them leave,
//! which takes a few microseconds each, and that must be reason enough to trim again.
//!
//! Only with glibc, Linux's usual C library. Other systems' allocators have their own rules
//! for giving memory back, and there this module does nothing.

use std::thread;
use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// How often the thread looks.
const EVERY: Duration = Duration::from_secs(1);

/// Less CPU time than this in a second is idle.
const IDLE_BELOW: Duration = Duration::from_millis(5);

/// Starts the thread that gives memory back after a burst (once per process: later calls
/// do nothing). [`crate::listener::announce`] calls it, as the server starts to serve.
pub fn give_back_when_idle() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        STARTED.call_once(|| {
            // If no thread can be had, memory is kept as before: nothing worse.
            let _ = thread::Builder::new().name("give-back".into()).spawn(watch);
        });
    }
}

/// The thread: trims once each time the process falls idle after doing something.
fn watch() {
    let mut used = cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID);
    let mut others_at_last_trim = others_cpu_time();
    loop {
        thread::sleep(EVERY);
        let now = cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID);
        let idle = now.saturating_sub(used) < IDLE_BELOW;
        used = now;
        // Our own reads of the clock and trims are not work to trim after: the other
        // threads' time is.
        let others = others_cpu_time();
        if idle && others > others_at_last_trim {
            trim();
            others_at_last_trim = others;
        }
    }
}

/// CPU time the process's threads other than this one have used so far.
fn others_cpu_time() -> Duration {
    let process = cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID);
    process.saturating_sub(cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID))
}

/// CPU time used so far by the whole process (`CLOCK_PROCESS_CPUTIME_ID`, every thread's)
/// or by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
fn cpu_time(clock: ClockId) -> Duration {
    clock_gettime(clock).map_or(Duration::ZERO, Duration::from)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    extern "C" {
        /// glibc's `malloc_trim(3)`: gives back the free pages of every arena; `pad` bytes
        /// are kept at the top of the heap. Returns 1 if it gave any back.
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: `malloc_trim` takes a plain integer and touches only the allocator's own
    // state, which it locks for itself; glibc allows it from any thread at any time.
    unsafe { malloc_trim(0) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
