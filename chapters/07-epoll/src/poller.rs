//! What the loop and its backends share: the words [`Token`], [`Interest`] and [`Event`],
//! and the [`Poller`] trait that each backend implements. New in chapter 7: with one
//! backend, chapter 6 kept the words in `poll_backend.rs`; with two, they move here, where
//! the loop and both backends look down at them (as Redis's `ae.h` sits under `ae_epoll.c`).

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::poll::PollTimeout;

/// Names one registration. Tokens are never reused, so an old token can never name a newer
/// registration by mistake: it names nothing. (mio calls it the same.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Token(pub u64);

/// What a registration waits for: "may I read without waiting?", "may I write?", as `poll` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interest {
    pub readable: bool,
    pub writable: bool,
}

impl Interest {
    /// Wait for nothing for now; the registration stays.
    pub const NONE: Interest = Interest { readable: false, writable: false };
    pub const READABLE: Interest = Interest { readable: true, writable: false };
}

// ANCHOR: poller
/// One thing the kernel reported: this registration is ready to read and/or to write.
pub struct Event {
    pub token: Token,
    pub readable: bool,
    pub writable: bool,
    /// An error or a hang-up (new in chapter 4): told even to one that waits for nothing.
    pub failed: bool,
}

impl Event {
    /// What a backend saw, in the loop's words. An error or a hang-up counts as readable
    /// and writable, as in Redis: the handler's next `read` or `write` meets the problem
    /// (EOF, ECONNRESET, EPIPE) on its own path. Every backend says it through here.
    pub fn new(token: Token, readable: bool, writable: bool, failed: bool) -> Event {
        Event { token, readable: failed || readable, writable: failed || writable, failed }
    }
}

/// New in chapter 7: the kernel's side of the loop, one implementation per mechanism, as
/// Redis has `ae_epoll.c`, `ae_kqueue.c` and `ae_select.c` behind the same four functions.
/// A mechanism that keeps its list of sockets in the kernel (epoll, kqueue) is told when a
/// registration comes, changes or goes; one handed the whole list on every wait (poll)
/// needs nothing, which is what these three do unless a backend says otherwise.
pub trait Poller {
    fn add(&mut self, _fd: BorrowedFd, _token: Token, _interest: Interest) -> io::Result<()> {
        Ok(())
    }
    fn modify(&mut self, _fd: BorrowedFd, _token: Token, _interest: Interest) -> io::Result<()> {
        Ok(())
    }
    fn delete(&mut self, _fd: BorrowedFd) -> io::Result<()> {
        Ok(())
    }
    /// Waits until something is ready or `timeout` passes. `watched` is the loop's whole
    /// list of registrations, for a mechanism that needs it on every wait.
    fn wait(
        &mut self, watched: &mut dyn Iterator<Item = (Token, BorrowedFd<'_>, Interest)>,
        timeout: Option<Duration>,
    ) -> io::Result<Vec<Event>>;
}
// ANCHOR_END: poller

/// `None` waits as long as it takes; past the kernel's range (24 days), as long as it may. In
/// whole milliseconds rounded *up*, or the loop wakes just before a timer is due, to wait again.
pub fn milliseconds(timeout: Option<Duration>) -> PollTimeout {
    timeout.map_or(PollTimeout::NONE, |timeout| {
        PollTimeout::try_from(timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(PollTimeout::MAX)
    })
}
