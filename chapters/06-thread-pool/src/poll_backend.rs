//! The part of the loop that talks to the kernel, `poll(2)`: one file per way of waiting,
//! as Redis has `ae_select.c` and `ae_epoll.c`. `poll` keeps no memory: every turn we hand
//! it the whole list of sockets and what we want from each, as chapter 2 did. The words
//! the loop and `poll` share ([`Token`], [`Interest`], [`Event`]) live here, below the loop.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::trace;

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

/// One thing `poll` reported: this registration is ready to read and/or to write.
pub struct Event {
    pub token: Token,
    pub readable: bool,
    pub writable: bool,
    /// An error or a hang-up (new in chapter 4): told even to one that waits for nothing.
    pub failed: bool,
}

// ANCHOR: wait
/// Waits until one of the `watched` sockets is ready for what it is watched for, or
/// `timeout` passes (`None`: no limit), and returns what is ready (Redis: `aeApiPoll`).
pub fn wait<'fd>(
    watched: impl Iterator<Item = (Token, BorrowedFd<'fd>, Interest)>, timeout: Option<Duration>,
) -> io::Result<Vec<Event>> {
    let (mut fds, mut tokens) = (Vec::new(), Vec::new());
    for (token, fd, interest) in watched {
        let mut flags = PollFlags::empty();
        flags.set(PollFlags::POLLIN, interest.readable);
        flags.set(PollFlags::POLLOUT, interest.writable);
        // Waiting for nothing, it stays in: `poll` reports errors and hang-ups even then,
        // and a client that leaves while we read no more from it must still be heard
        // (new in chapter 4; see `EventLoop::call`).
        fds.push(PollFd::new(fd, flags));
        tokens.push(token); // `poll` answers by position in `fds`; we want tokens
    }
    trace!("poll: waiting on {} fds, timeout {timeout:?}", fds.len());
    // `None` waits as long as it takes; past `poll`'s range (24 days), as long as it may. In
    // whole milliseconds rounded *up*, or it wakes just before a timer is due, to poll again.
    let timeout = timeout.map_or(PollTimeout::NONE, |timeout| {
        PollTimeout::try_from(timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(PollTimeout::MAX)
    });
    let ready = poll(&mut fds, timeout)?;
    trace!("poll: {ready} ready");
    let events = fds.iter().zip(tokens).filter_map(|(fd, token)| {
        let revents = fd.revents().unwrap_or(PollFlags::empty());
        // An error or hang-up counts as readable and writable, as in Redis: the handler's
        // next `read` or `write` meets the problem (EOF, ECONNRESET, EPIPE) on its own path.
        let failed = revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP);
        let readable = failed || revents.contains(PollFlags::POLLIN);
        let writable = failed || revents.contains(PollFlags::POLLOUT);
        (readable || writable).then_some(Event { token, readable, writable, failed })
    });
    Ok(events.collect())
}
// ANCHOR_END: wait
