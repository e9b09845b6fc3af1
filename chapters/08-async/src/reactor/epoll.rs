//! The reactor's side of epoll (Linux): what the reactor needs of the kernel, and no more.
//! Each descriptor is registered once, edge-triggered (`EPOLLET`), and `EPOLLRDHUP` asks
//! to be told when the peer shuts its side; a wait says what changed as [`Event`]s.

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};

use shared::trace;

use super::{Direction, Event};

pub struct Poller {
    epoll: Epoll,
    /// Where `epoll_wait` puts what is ready: at most this many per turn.
    ready: Vec<EpollEvent>,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        Ok(Poller { epoll, ready: vec![EpollEvent::empty(); 1024] })
    }

    /// Watches `fd` in `directions`, edge-triggered, for good; its events carry `key`.
    pub fn add(&self, fd: BorrowedFd, key: u64, directions: &[Direction]) -> io::Result<()> {
        let mut flags = EpollFlags::EPOLLET | EpollFlags::EPOLLRDHUP;
        for direction in directions {
            flags |= match direction {
                Direction::Read => EpollFlags::EPOLLIN,
                Direction::Write => EpollFlags::EPOLLOUT,
            };
        }
        Ok(self.epoll.add(fd, EpollEvent::new(flags, key))?)
    }

    pub fn delete(&self, fd: BorrowedFd) -> io::Result<()> {
        Ok(self.epoll.delete(fd)?)
    }

    /// Waits until something is ready or `timeout` passes, and puts what in `events`.
    pub fn wait(&mut self, timeout: Option<Duration>, events: &mut Vec<Event>) -> io::Result<()> {
        trace!("epoll: waiting, timeout {timeout:?}");
        let timeout = timeout.map_or(EpollTimeout::NONE, |timeout| {
            // Rounded up, as in chapter 4: never wake just before a timer is due.
            let ms = timeout.as_nanos().div_ceil(1_000_000);
            EpollTimeout::try_from(ms).unwrap_or(EpollTimeout::MAX)
        });
        let count = self.epoll.wait(&mut self.ready, timeout)?;
        trace!("epoll: {count} ready");
        events.clear();
        events.extend(self.ready[..count].iter().map(|ready| {
            let flags = ready.events();
            Event {
                key: ready.data(),
                readable: flags.contains(EpollFlags::EPOLLIN),
                writable: flags.contains(EpollFlags::EPOLLOUT),
                hung_up: flags.contains(EpollFlags::EPOLLRDHUP),
                failed: flags.intersects(EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP),
            }
        }));
        Ok(())
    }
}

#[cfg(test)]
#[path = "poller_tests.rs"]
mod tests;
