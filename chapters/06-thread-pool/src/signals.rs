//! SIGINT and SIGTERM as ordinary events in the loop: the self-pipe trick.
//!
//! A signal can arrive at any instant, between any two machine instructions of the loop.
//! A signal handler may therefore do almost nothing: only "async-signal-safe" calls, and
//! certainly not take a lock, allocate, or touch the server's state. But a graceful
//! shutdown needs the server's state (close the listener, find the idle connections).
//!
//! The trick (Daniel J. Bernstein's, from the 1990s) is to turn the signal into something
//! the loop already knows how to wait for: a readable descriptor. We make a connected pair
//! of sockets, register one end with the loop like any client, and the signal handler only
//! writes one byte into the other end. `write(2)` is async-signal-safe. The byte makes the
//! loop's end readable; `poll` wakes (it also returns early with EINTR when the signal
//! lands while we wait); and on the next turn the loop runs our callback, an ordinary
//! function that may do anything.
//!
//! Why not `signalfd(2)`, Linux's built-in version of the same idea? It needs the signals
//! blocked in *every* thread first (a thread that does not block them still receives them
//! the old way), it exists only on Linux, and it would hide the idea this chapter is about.
//! The self-pipe works wherever `poll` does and shows all its moving parts.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// The end the signal handler writes to. A static, because a signal handler receives
/// nothing but the signal number; an atomic, because it is written before the handlers are
/// installed and read inside them.
static WRITE_END: AtomicI32 = AtomicI32::new(-1);

// ANCHOR: signal_pipe
/// The loop's end of the self-pipe.
pub struct Signals {
    read_end: UnixStream,
}

impl Signals {
    /// Creates the pipe and installs handlers for SIGINT (Ctrl-C) and SIGTERM (what `kill`
    /// and service managers send). Call it once, before anything may send those signals.
    pub fn install() -> io::Result<Signals> {
        // A socket pair, because std can make one on every Unix; a pipe would do the same.
        let (read_end, write_end) = UnixStream::pair()?;
        // Both ends non-blocking. The loop's end, so that draining it stops at "empty"
        // instead of waiting. The handler's end, so that a flood of signals filling the
        // buffer makes `write` fail at once (harmless: a byte is already waiting) instead
        // of blocking the handler, and with it the whole program, forever.
        read_end.set_nonblocking(true)?;
        write_end.set_nonblocking(true)?;
        // The handler's end is never closed: a signal may arrive until the very end of the
        // process, and the handler must never write into a number the kernel has since
        // given to some other file.
        WRITE_END.store(write_end.into_raw_fd(), Ordering::SeqCst);

        // SA_RESTART: a signal that lands during another system call (a blocking read of
        // a file, say) restarts that call instead of failing it with EINTR. `poll` is the
        // exception: it always returns EINTR, which is what wakes the loop early.
        let action =
            SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        for signal in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: `on_signal` is async-signal-safe: it loads an atomic and calls
            // `write(2)` and nothing else, so it is sound wherever the signal interrupts us.
            unsafe { signal::sigaction(signal, &action) }?;
        }
        Ok(Signals { read_end })
    }

    /// Empties the pipe and returns the last signal that arrived, if any. Several signals
    /// since the last turn are just several bytes: one drain handles them all.
    pub fn drain(&self) -> Option<Signal> {
        let mut last = None;
        let mut bytes = [0u8; 64];
        loop {
            match (&self.read_end).read(&mut bytes) {
                Ok(0) => return last, // cannot happen: we never close the write end
                Ok(count) => {
                    let number = i32::from(bytes[count - 1]);
                    last = Signal::try_from(number).ok().or(last);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: empty, which is what we wanted. Anything else: nothing to read.
                Err(_) => return last,
            }
        }
    }
}

impl AsRawFd for Signals {
    fn as_raw_fd(&self) -> RawFd {
        self.read_end.as_raw_fd()
    }
}

/// The signal handler. It writes the signal's number as one byte, and that is all.
extern "C" fn on_signal(signal: libc::c_int) {
    // `write` may set errno, and the code we interrupted may be about to read errno from
    // its own failed call. Put it back as it was.
    let saved_errno = Errno::last_raw();
    let fd = WRITE_END.load(Ordering::SeqCst);
    // SIGINT is 2 and SIGTERM 15: one byte holds the number.
    let byte = signal as u8;
    // SAFETY: `write(2)` is async-signal-safe; it reads one byte from a local. `fd` is the
    // write end, which is never closed (see `install`). If the buffer is full the write
    // fails with EAGAIN, and that is fine: the loop has bytes to read already.
    unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    Errno::set_raw(saved_errno);
}
// ANCHOR_END: signal_pipe
