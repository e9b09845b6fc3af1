//! The `Waker`: a file descriptor other threads can make readable, to wake the event loop.
//!
//! The event loop sleeps in `poll(2)`, and `poll` only wakes up for file descriptors. A
//! worker thread that has just finished a job has no socket to write to, so we give it
//! one: an `eventfd(2)`, a kernel object holding a 64-bit counter. Writing adds to the
//! counter; while the counter is above zero the descriptor is *readable*; reading returns
//! the counter and sets it back to zero. The loop registers it for readability like any
//! socket, and a worker wakes the loop by writing to it.
//!
//! The name is mio's: `mio::Waker` is the same idea (on Linux, the same eventfd; on macOS,
//! where there is no eventfd, mio uses a pipe or kqueue's user events instead).
//!
//! Ten wakes before the loop gets round to reading cost one turn of the loop, not ten: the
//! counter just grows, and one read clears it. That is what lets many finished jobs share
//! one wake-up.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::eventfd::{EfdFlags, EventFd};

// ANCHOR: waker
/// Wakes a thread sleeping in `poll` from any other thread.
#[derive(Debug)]
pub struct Waker {
    event_fd: EventFd,
}

impl Waker {
    /// A new waker, not yet woken (not readable).
    pub fn new() -> io::Result<Waker> {
        // Non-blocking, so that `reset` on an unwoken waker answers EAGAIN at once instead
        // of blocking the loop; close-on-exec, so that a child process never inherits it.
        let flags = EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC;
        let event_fd = EventFd::from_flags(flags)?;
        Ok(Waker { event_fd })
    }

    /// Makes the descriptor readable (if it was not already). Safe to call from any thread,
    /// as often as you like.
    pub fn wake(&self) -> io::Result<()> {
        loop {
            match self.event_fd.write(1) {
                Ok(_) => return Ok(()),
                // A signal arrived mid-call: try again.
                Err(Errno::EINTR) => continue,
                // The counter would overflow (it is at u64::MAX - 1). It can only get there
                // if it is already far above zero, so the descriptor is already readable
                // and the wake we wanted has happened.
                Err(Errno::EAGAIN) => return Ok(()),
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Clears the descriptor: after this it is not readable until the next `wake`. The
    /// event loop calls this when `poll` reports the descriptor readable; without it the
    /// descriptor would stay readable and `poll` would return at once, forever (a busy loop).
    pub fn reset(&self) -> io::Result<()> {
        loop {
            match self.event_fd.read() {
                // One read sets the whole counter back to zero, however many wakes it holds.
                Ok(_wakes) => return Ok(()),
                Err(Errno::EINTR) => continue,
                // Nobody woke us since the last reset: nothing to clear.
                Err(Errno::EAGAIN) => return Ok(()),
                Err(error) => return Err(error.into()),
            }
        }
    }
}
// ANCHOR_END: waker

/// So the event loop can register the waker with `poll` like any socket (its raw
/// descriptor is `waker.as_fd().as_raw_fd()`).
impl AsFd for Waker {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.event_fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

    /// Is the waker readable right now? (`poll` with a zero timeout never waits.)
    fn readable(waker: &Waker) -> bool {
        let mut fds = [PollFd::new(waker.as_fd(), PollFlags::POLLIN)];
        let ready = poll(&mut fds, PollTimeout::ZERO).expect("poll");
        ready == 1 && fds[0].any() == Some(true)
    }

    #[test]
    fn a_new_waker_is_not_readable() {
        let waker = Waker::new().expect("eventfd");
        assert!(!readable(&waker));
        // Resetting a waker nobody woke is harmless (EAGAIN is swallowed).
        waker.reset().expect("reset");
        assert!(!readable(&waker));
    }

    #[test]
    fn many_wakes_are_cleared_by_one_reset() {
        let waker = Waker::new().expect("eventfd");
        for _ in 0..1000 {
            waker.wake().expect("wake");
        }
        assert!(readable(&waker));
        waker.reset().expect("reset");
        assert!(!readable(&waker), "one reset clears every wake");
        waker.wake().expect("wake");
        assert!(readable(&waker), "and the next wake is seen again");
    }

    #[test]
    fn a_wake_from_another_thread_ends_a_poll() {
        let waker = Waker::new().expect("eventfd");
        std::thread::scope(|scope| {
            scope.spawn(|| waker.wake().expect("wake"));
            // Block up to 10 s: the deadline, not a guess. The wake ends it far sooner.
            let mut fds = [PollFd::new(waker.as_fd(), PollFlags::POLLIN)];
            let ready = poll(&mut fds, PollTimeout::from(10_000u16)).expect("poll");
            assert_eq!(ready, 1, "the other thread's wake must end the poll");
        });
    }
}
