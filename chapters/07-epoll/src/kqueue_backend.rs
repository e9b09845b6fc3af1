//! The part of the loop that talks to the kernel, the macOS and BSD way: `kqueue(2)`. New
//! in chapter 7, beside `epoll_backend.rs`, as Redis has `ae_kqueue.c` beside `ae_epoll.c`.
//!
//! The idea is epoll's: the kernel keeps the list of what we watch, and a wait hands back
//! only what is ready. Four things differ, and each shows below:
//!
//! - **Two filters per socket.** kqueue watches (descriptor, filter) pairs: a socket that
//!   may be read and written is two registrations, `EVFILT_READ` and `EVFILT_WRITE`, each
//!   reported on its own. epoll has one registration with a mask of both.
//! - **Changes ride with the wait.** `kevent` takes a list of changes and a list to fill
//!   with events, in one call. So `add` and `modify` only write the change down, and the
//!   next `wait` hands the kernel all of them: no system call per change, as epoll's
//!   `epoll_ctl` costs.
//! - **`EV_EOF`.** kqueue has no hang-up event: a filter's event carries the flag `EV_EOF`
//!   when the peer has shut its side or the connection is gone (and `EV_ERROR` when a
//!   change failed). We count either as a failure, as poll's `POLLHUP` on macOS does.
//! - **`udata`.** Every change carries a number that comes back with its events; like
//!   epoll's data, it holds the token, so we need no table from descriptors to tokens.
//!
//! Level-triggered, as the loop expects, with one exception: a socket that waits for
//! nothing must still hear a hang-up, which kqueue tells only a filter that is on. So its
//! read filter stays on, edge-triggered (`EV_CLEAR`): reported once per change, the end
//! of file included, not on every turn for the bytes we chose to leave unread.
//!
//! Compiled, linted and unit-tested for macOS and FreeBSD; only a reader there runs it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use nix::libc::{time_t, timespec};
use nix::sys::event::EventFilter::{EVFILT_READ, EVFILT_WRITE};
use nix::sys::event::{EvFlags, EventFilter, FilterFlag, KEvent, Kqueue};

use shared::trace;

use crate::poller::{Event, Interest, Poller, Token};

// ANCHOR: kqueue
pub struct KqueueBackend {
    kqueue: Kqueue,
    /// Registrations made or changed since the last wait: the next wait takes them along.
    changes: Vec<KEvent>,
    /// Where `kevent` puts what is ready: at most this many per turn, as with epoll.
    ready: Vec<KEvent>,
}

impl KqueueBackend {
    pub fn new() -> io::Result<KqueueBackend> {
        let ready = vec![change(0, EVFILT_READ, EvFlags::empty(), Token(0)); 1024];
        Ok(KqueueBackend { kqueue: Kqueue::new()?, changes: Vec::new(), ready })
    }

    /// Writes down the two filters' changes for `interest`: reading, level-triggered when
    /// wanted, else edge-triggered (to hear a hang-up, see above); writing, on or off.
    fn want(&mut self, fd: BorrowedFd, token: Token, interest: Interest) {
        let fd = fd.as_raw_fd() as usize;
        let edge = if interest.readable { EvFlags::empty() } else { EvFlags::EV_CLEAR };
        let on = if interest.writable { EvFlags::EV_ENABLE } else { EvFlags::EV_DISABLE };
        self.changes.push(change(fd, EVFILT_READ, EvFlags::EV_ADD | edge, token));
        self.changes.push(change(fd, EVFILT_WRITE, EvFlags::EV_ADD | on, token));
    }
}

/// One change for `kevent`: `filter` of descriptor `fd`, with `token` as its `udata`.
fn change(fd: usize, filter: EventFilter, flags: EvFlags, token: Token) -> KEvent {
    KEvent::new(fd, filter, flags, FilterFlag::empty(), 0, token.0 as isize)
}

impl Poller for KqueueBackend {
    fn add(&mut self, fd: BorrowedFd, token: Token, interest: Interest) -> io::Result<()> {
        self.want(fd, token, interest);
        Ok(())
    }

    /// The read filter is deleted and added anew: kqueue keeps a filter's `EV_CLEAR` as it
    /// was first given, so to switch between level and edge takes a new one. (Both changes
    /// ride with the next wait, in order: no system call here either.)
    fn modify(&mut self, fd: BorrowedFd, token: Token, interest: Interest) -> io::Result<()> {
        let read = change(fd.as_raw_fd() as usize, EVFILT_READ, EvFlags::EV_DELETE, token);
        self.changes.push(read);
        self.want(fd, token, interest);
        Ok(())
    }

    /// At once, not with the next wait: the socket may close before then, and its number
    /// go to a new one, whose changes must not meet this one's. Changes not yet made for it
    /// are dropped. `EV_RECEIPT` has the kernel answer each change (`ENOENT` for a filter
    /// it never had) rather than hand us events that are ready, which the wait must get.
    fn delete(&mut self, fd: BorrowedFd) -> io::Result<()> {
        let fd = fd.as_raw_fd() as usize;
        self.changes.retain(|change| change.ident() != fd);
        let flags = EvFlags::EV_DELETE | EvFlags::EV_RECEIPT;
        let deletes = [EVFILT_READ, EVFILT_WRITE].map(|filter| change(fd, filter, flags, Token(0)));
        let mut receipts = deletes; // room for the kernel's answers
        self.kqueue.kevent(&deletes, &mut receipts, Some(kernel_time(Duration::ZERO)))?;
        Ok(())
    }

    /// The loop's list of registrations (`_watched`) is not needed: the kernel has its own.
    fn wait(
        &mut self, _watched: &mut dyn Iterator<Item = (Token, BorrowedFd<'_>, Interest)>,
        timeout: Option<Duration>,
    ) -> io::Result<Vec<Event>> {
        trace!("kqueue: waiting, timeout {timeout:?}, with {} changes", self.changes.len());
        let waited = self.kqueue.kevent(&self.changes, &mut self.ready, timeout.map(kernel_time));
        // Made even if the wait failed: the kernel takes the changes before it waits (an
        // `EINTR` included), and one it refused comes back as an event, with `EV_ERROR`.
        self.changes.clear();
        let count = waited?;
        trace!("kqueue: {count} ready");
        let events = self.ready[..count].iter().map(|ready| {
            let failed = ready.flags().intersects(EvFlags::EV_EOF | EvFlags::EV_ERROR);
            let readable = ready.filter() == Ok(EVFILT_READ); // one filter per event
            Event::new(Token(ready.udata() as u64), readable, !readable, failed)
        });
        Ok(events.collect())
    }
}

/// A timeout as `kevent` takes it: in nanoseconds, so nothing to round (past the kernel's
/// range, as long as it may).
fn kernel_time(timeout: Duration) -> timespec {
    let tv_sec = time_t::try_from(timeout.as_secs()).unwrap_or(time_t::MAX);
    timespec { tv_sec, tv_nsec: timeout.subsec_nanos().into() }
}
// ANCHOR_END: kqueue

#[cfg(test)]
#[path = "kqueue_backend_tests.rs"]
mod tests;
