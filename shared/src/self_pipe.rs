//! A descriptor that other code makes readable, so that an event loop waiting in `poll`
//! wakes up: the self-pipe trick.
//!
//! An event loop sleeps in one place, `poll(2)`, and wakes only when a descriptor it
//! watches is ready. Two things that are not descriptors need to wake it: a signal
//! (SIGTERM, chapter 3) and a thread that has finished a job (the thread pool, chapter 6).
//! The trick, Daniel J. Bernstein's from the 1990s, turns both into a descriptor: a
//! connected pair of sockets. The loop watches one end like any client; whoever wants to
//! wake it writes one byte into the other end. `write(2)` is one of the few calls a signal
//! handler may make, and any thread may make it.
//!
//! Why not Linux's `eventfd` or `signalfd`? They do the same with one descriptor, but only
//! on Linux; this works wherever `poll` does, macOS and the BSDs included.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

// ANCHOR: self_pipe
/// The two ends of the self-pipe. Share it between threads with an `Arc`.
pub struct SelfPipe {
    /// The end the loop watches: readable while a wake-up is pending.
    read_end: UnixStream,
    /// The end [`SelfPipe::wake`] writes to.
    write_end: UnixStream,
}

impl SelfPipe {
    pub fn new() -> io::Result<SelfPipe> {
        let (read_end, write_end) = UnixStream::pair()?;
        // Both ends non-blocking. The read end, so that draining stops at "empty" instead
        // of waiting. The write end, so that a flood of wake-ups filling the buffer makes
        // `write` fail at once (harmless: a byte is already waiting) instead of blocking
        // the thread, or the signal handler, that wrote it.
        read_end.set_nonblocking(true)?;
        write_end.set_nonblocking(true)?;
        Ok(SelfPipe { read_end, write_end })
    }

    /// Makes the read end readable, carrying `byte` (the signal number, for signals). Only
    /// `write(2)`: safe to call from any thread, and from a signal handler.
    pub fn wake_with(&self, byte: u8) {
        // A full buffer (EAGAIN) means a wake-up is pending already; nothing else can go
        // wrong that the woken side could do anything about.
        let _ = nix::unistd::write(&self.write_end, &[byte]);
    }

    /// Makes the read end readable.
    pub fn wake(&self) {
        self.wake_with(0);
    }

    /// Empties the pipe, so that the loop sleeps again until the next wake-up, and returns
    /// the last byte that was in it (`None` if it was empty). Many wake-ups since the last
    /// drain are many bytes: one drain answers them all.
    pub fn drain(&self) -> Option<u8> {
        let mut last = None;
        let mut bytes = [0u8; 64];
        loop {
            match (&self.read_end).read(&mut bytes) {
                Ok(0) => return last, // cannot happen while we hold the write end
                Ok(count) => last = Some(bytes[count - 1]),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: empty, which is what we wanted. Anything else: nothing to read.
                Err(_) => return last,
            }
        }
    }
}
// ANCHOR_END: self_pipe

/// The loop watches the read end.
impl AsFd for SelfPipe {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.read_end.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

    fn readable(pipe: &SelfPipe) -> bool {
        let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).expect("poll") == 1
    }

    #[test]
    fn wake_makes_it_readable_until_drained() {
        let pipe = SelfPipe::new().expect("self-pipe");
        assert!(!readable(&pipe));
        pipe.wake();
        pipe.wake_with(15);
        assert!(readable(&pipe));
        assert_eq!(pipe.drain(), Some(15), "the last byte wins");
        assert!(!readable(&pipe));
        assert_eq!(pipe.drain(), None);
    }

    #[test]
    fn a_flood_of_wake_ups_never_blocks() {
        let pipe = SelfPipe::new().expect("self-pipe");
        for _ in 0..1_000_000 {
            pipe.wake(); // the buffer fills long before this; each extra write fails at once
        }
        assert!(readable(&pipe));
        assert_eq!(pipe.drain(), Some(0));
        assert!(!readable(&pipe));
    }
}
