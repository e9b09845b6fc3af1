//! The part of the loop that talks to the kernel, the Linux way: `epoll(7)`. New in
//! chapter 7.
//!
//! `poll` hands the kernel the whole list of sockets on every turn, and the kernel walks
//! all of it, so a turn costs time in proportion to every open connection, busy or not:
//! ten thousand idle clients make every `/hello` slow. epoll keeps the list in the kernel
//! instead. We tell it once when a socket comes, changes what it waits for, or goes
//! (`epoll_ctl`), and `epoll_wait` hands back only the sockets that are ready: a turn
//! costs time in proportion to what is ready. (macOS and the BSDs have the same idea as
//! kqueue: `kqueue_backend.rs`, this file's twin.)
//!
//! Level-triggered, as `poll` is and as our callbacks expect: a socket with bytes left
//! unread is reported again on the next turn, so a callback may read less than all of
//! it. (Edge-triggered epoll reports only changes; see the book for what that asks.)

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};

use shared::trace;

use crate::poller::{milliseconds, Event, Interest, Poller, Token};

// ANCHOR: epoll
pub struct EpollBackend {
    epoll: Epoll,
    /// Where `epoll_wait` puts what is ready: at most this many per turn; the rest wait for
    /// the next (level-triggered, they are reported again).
    ready: Vec<EpollEvent>,
}

impl EpollBackend {
    pub fn new() -> io::Result<EpollBackend> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        Ok(EpollBackend { epoll, ready: vec![EpollEvent::empty(); 1024] })
    }
}

/// What to ask epoll for. The token rides along as the event's data, as mio does: epoll
/// hands it back with every event, so we need no table from descriptors to tokens.
fn event(token: Token, interest: Interest) -> EpollEvent {
    let mut flags = EpollFlags::empty();
    flags.set(EpollFlags::EPOLLIN, interest.readable);
    flags.set(EpollFlags::EPOLLOUT, interest.writable);
    EpollEvent::new(flags, token.0)
}

impl Poller for EpollBackend {
    fn add(&mut self, fd: BorrowedFd, token: Token, interest: Interest) -> io::Result<()> {
        Ok(self.epoll.add(fd, event(token, interest))?)
    }

    /// Waiting for nothing (`Interest::NONE`), it stays in the list: epoll reports errors
    /// and hang-ups whatever was asked, as `poll` does, and those the loop must hear.
    fn modify(&mut self, fd: BorrowedFd, token: Token, interest: Interest) -> io::Result<()> {
        Ok(self.epoll.modify(fd, &mut event(token, interest))?)
    }

    fn delete(&mut self, fd: BorrowedFd) -> io::Result<()> {
        Ok(self.epoll.delete(fd)?)
    }

    /// The loop's list of registrations (`_watched`) is not needed: the kernel has its own.
    fn wait(
        &mut self, _watched: &mut dyn Iterator<Item = (Token, BorrowedFd<'_>, Interest)>,
        timeout: Option<Duration>,
    ) -> io::Result<Vec<Event>> {
        trace!("epoll: waiting, timeout {timeout:?}");
        let count = self.epoll.wait(&mut self.ready, milliseconds(timeout))?;
        trace!("epoll: {count} ready");
        let events = self.ready[..count].iter().map(|ready| {
            let flags = ready.events();
            let failed = flags.intersects(EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
            let readable = flags.contains(EpollFlags::EPOLLIN);
            let writable = flags.contains(EpollFlags::EPOLLOUT);
            Event::new(Token(ready.data()), readable, writable, failed)
        });
        Ok(events.collect())
    }
}
// ANCHOR_END: epoll

#[cfg(test)]
#[path = "epoll_backend_tests.rs"]
mod tests;
