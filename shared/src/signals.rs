//! SIGINT and SIGTERM as ordinary events in the loop, through a [`SelfPipe`].
//!
//! A signal can arrive at any instant, between any two machine instructions of the loop.
//! A signal handler may therefore do almost nothing: only "async-signal-safe" calls, and
//! certainly not take a lock, allocate, or touch the server's state. But a graceful
//! shutdown needs the server's state (close the listener, find the idle connections).
//!
//! So the handler only writes the signal's number as one byte into a [`SelfPipe`], whose read
//! end the loop watches like any client. The byte makes it readable; `poll` wakes (it also
//! returns early with EINTR when the signal lands while we wait); and the loop runs the
//! callback for it, an ordinary function that may do anything.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};

use crate::self_pipe::SelfPipe;

/// The self-pipe the handler writes to. A static, because a signal handler receives nothing
/// but the signal number. It lives until the process ends, so a signal that arrives at the
/// very end still finds it: the handler never writes into a closed descriptor.
static PIPE: OnceLock<SelfPipe> = OnceLock::new();

/// The loop's side: readable once SIGINT or SIGTERM has arrived.
pub struct Signals {
    pipe: &'static SelfPipe,
}

impl Signals {
    /// Installs handlers for SIGINT (Ctrl-C) and SIGTERM (what `kill` and service managers
    /// send). Call it once, before anything may send those signals. If it cannot (out of
    /// descriptors at startup, say), it says so in one line and exits with status 1, as a
    /// port in use does.
    pub fn install() -> Signals {
        Signals::try_install().unwrap_or_else(|error| {
            crate::log!("cannot install signal handlers: {error}");
            std::process::exit(1);
        })
    }

    // ANCHOR: install
    fn try_install() -> io::Result<Signals> {
        if PIPE.get().is_none() {
            // Only the first call's pipe is kept; a second `install` reuses it.
            let _ = PIPE.set(SelfPipe::new()?);
        }
        let pipe = PIPE.get().ok_or_else(|| io::Error::other("no self-pipe for signals"))?;
        // SA_RESTART: a signal that lands during another system call (a blocking read of a
        // file, say) restarts that call instead of failing it with EINTR. `poll` is the
        // exception: it always returns EINTR, which is what wakes the loop early.
        let action =
            SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        for signal in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: `on_signal` is async-signal-safe: it reads a static that is set before
            // this line and never changes again, and calls `write(2)`; nothing else.
            unsafe { signal::sigaction(signal, &action) }.map_err(io::Error::from)?;
        }
        Ok(Signals { pipe })
    }
    // ANCHOR_END: install

    /// Empties the pipe and returns the last signal that arrived, if any.
    pub fn take(&self) -> Option<Signal> {
        let byte = self.pipe.drain()?;
        Signal::try_from(i32::from(byte)).ok()
    }
}

impl AsFd for Signals {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.pipe.as_fd()
    }
}

// ANCHOR: on_signal
/// The signal handler. It writes the signal's number as one byte, and that is all.
extern "C" fn on_signal(signal: libc::c_int) {
    // `write` may set errno, and the code we interrupted may be about to read errno from
    // its own failed call. Put it back as it was.
    let saved_errno = Errno::last_raw();
    if let Some(pipe) = PIPE.get() {
        pipe.wake_with(signal as u8); // SIGINT is 2, SIGTERM 15: one byte holds them
    }
    Errno::set_raw(saved_errno);
}
// ANCHOR_END: on_signal
