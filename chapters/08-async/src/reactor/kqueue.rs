//! The reactor's side of kqueue (macOS and the BSDs), the twin of `epoll.rs`. Each
//! direction is a filter of its own (`EVFILT_READ`, `EVFILT_WRITE`), registered once,
//! edge-triggered (`EV_CLEAR`); a filter's event says `EV_EOF` when its direction has
//! closed: the peer shut its side (reading), or the connection is gone (writing).
//!
//! Compiled, linted and unit-tested for macOS and FreeBSD; only a reader there runs it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use nix::libc::{time_t, timespec};
use nix::sys::event::EventFilter::{EVFILT_READ, EVFILT_WRITE};
use nix::sys::event::{EvFlags, FilterFlag, KEvent, Kqueue};

use shared::trace;

use super::{Direction, Event};

pub struct Poller {
    kqueue: Kqueue,
    /// Where `kevent` puts what is ready: at most this many per turn.
    ready: Vec<KEvent>,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        let nothing = KEvent::new(0, EVFILT_READ, EvFlags::empty(), FilterFlag::empty(), 0, 0);
        Ok(Poller { kqueue: Kqueue::new()?, ready: vec![nothing; 1024] })
    }

    /// Watches `fd` in `directions`, edge-triggered, for good; its events carry `key` (as
    /// `udata`). Both filters in one call: kqueue takes a list of changes.
    pub fn add(&self, fd: BorrowedFd, key: u64, directions: &[Direction]) -> io::Result<()> {
        let changes: Vec<KEvent> = directions
            .iter()
            .map(|direction| {
                let filter = match direction {
                    Direction::Read => EVFILT_READ,
                    Direction::Write => EVFILT_WRITE,
                };
                let flags = EvFlags::EV_ADD | EvFlags::EV_CLEAR;
                let fd = fd.as_raw_fd() as usize;
                KEvent::new(fd, filter, flags, FilterFlag::empty(), 0, key as isize)
            })
            .collect();
        self.kqueue.kevent(&changes, &mut [], None)?;
        Ok(())
    }

    /// Both filters go, in one call.
    pub fn delete(&self, fd: BorrowedFd) -> io::Result<()> {
        let fd = fd.as_raw_fd() as usize;
        let deletes = [EVFILT_READ, EVFILT_WRITE]
            .map(|filter| KEvent::new(fd, filter, EvFlags::EV_DELETE, FilterFlag::empty(), 0, 0));
        self.kqueue.kevent(&deletes, &mut [], None)?;
        Ok(())
    }

    /// Waits until something is ready or `timeout` passes, and puts what in `events`: one
    /// for each filter that fired, so a socket may come twice, once each way.
    pub fn wait(&mut self, timeout: Option<Duration>, events: &mut Vec<Event>) -> io::Result<()> {
        trace!("kqueue: waiting, timeout {timeout:?}");
        let timeout = timeout.map(|timeout| timespec {
            tv_sec: time_t::try_from(timeout.as_secs()).unwrap_or(time_t::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        });
        let count = self.kqueue.kevent(&[], &mut self.ready, timeout)?;
        trace!("kqueue: {count} ready");
        events.clear();
        events.extend(self.ready[..count].iter().map(|ready| {
            let closed = ready.flags().contains(EvFlags::EV_EOF);
            let reading = ready.filter() == Ok(EVFILT_READ);
            Event {
                key: ready.udata() as u64,
                readable: reading,
                writable: !reading,
                hung_up: reading && closed,
                failed: !reading && closed,
            }
        }));
        Ok(())
    }
}

#[cfg(test)]
#[path = "poller_tests.rs"]
mod tests;
