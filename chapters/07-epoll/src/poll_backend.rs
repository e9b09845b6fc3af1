//! The part of the loop that talks to the kernel, `poll(2)`: one file per way of waiting,
//! as Redis has `ae_select.c` and `ae_epoll.c` (and chapter 7 `epoll_backend.rs` and
//! `kqueue_backend.rs`). `poll`
//! keeps no memory: every turn we hand it the whole list of sockets and what we want from
//! each, as chapter 2 did.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags};

use shared::trace;

use crate::poller::{milliseconds, Event, Interest, Poller, Token};

/// `poll` as a [`Poller`]: it keeps no list, so there is nothing to tell it when a
/// registration comes, changes or goes (the trait's `add`, `modify` and `delete` do
/// nothing); it walks the whole list on every wait instead.
pub struct PollBackend;

impl Poller for PollBackend {
    fn wait(
        &mut self, watched: &mut dyn Iterator<Item = (Token, BorrowedFd<'_>, Interest)>,
        timeout: Option<Duration>,
    ) -> io::Result<Vec<Event>> {
        wait(watched, timeout)
    }
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
    let ready = poll(&mut fds, milliseconds(timeout))?;
    trace!("poll: {ready} ready");
    let events = fds.iter().zip(tokens).filter_map(|(fd, token)| {
        let revents = fd.revents().unwrap_or(PollFlags::empty());
        let failed = revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP);
        let readable = revents.contains(PollFlags::POLLIN);
        let writable = revents.contains(PollFlags::POLLOUT);
        (readable || writable || failed).then(|| Event::new(token, readable, writable, failed))
    });
    Ok(events.collect())
}
// ANCHOR_END: wait
