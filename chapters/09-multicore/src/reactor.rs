//! The reactor: chapter 7's epoll, turned around. There, the loop called a handler back
//! when its socket was ready. Here nobody is called back: a task that met `EAGAIN` leaves
//! its `Waker` with the reactor, for that socket and direction, and returns `Pending`;
//! when epoll says the socket is ready, the reactor wakes the task, and the executor polls
//! it again, to retry the read or the write.
//!
//! Each socket is registered once, for both directions, edge-triggered (`EPOLLET`): epoll
//! reports a change (bytes arrived, room appeared) once, not on every wait while it lasts.
//! So the reactor remembers readiness: a direction is ready from its event until the
//! socket answers `EAGAIN` again ([`Io::clear`]). That costs no `epoll_ctl` per wait,
//! and a socket a task is not waiting for (bytes that arrived while it was busy) does not
//! wake the loop over and over: the price is that we read until `EAGAIN` (see `net.rs`).
//!
//! One reactor per thread (a thread-local), as the executor and the timers: tasks reach it
//! from wherever they are polled, as Tokio's do.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::os::fd::BorrowedFd;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};

use shared::trace;

/// Names one registered socket; its epoll events carry it back, as chapter 7's tokens did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Io(u64);

/// Reading or writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// What the reactor knows of one direction of one socket.
#[derive(Default)]
struct Readiness {
    /// It may be ready: epoll said so, and no `EAGAIN` has said otherwise since.
    ready: bool,
    /// The task waiting for it to become ready.
    waiter: Option<Waker>,
}

// ANCHOR: reactor
struct Reactor {
    epoll: Epoll,
    events: Vec<EpollEvent>,
    sources: HashMap<Io, [Readiness; 2]>,
    next: u64,
}

thread_local! {
    static REACTOR: RefCell<Option<Reactor>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's reactor, made on first use.
fn with<T>(f: impl FnOnce(&mut Reactor) -> io::Result<T>) -> io::Result<T> {
    REACTOR.with(|reactor| {
        let mut reactor = reactor.borrow_mut();
        if reactor.is_none() {
            let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
            let events = vec![EpollEvent::empty(); 1024];
            *reactor = Some(Reactor { epoll, events, sources: HashMap::new(), next: 0 });
        }
        f(reactor.as_mut().expect("made just above"))
    })
}
// ANCHOR_END: reactor

impl Io {
    // ANCHOR: register
    /// Starts watching `fd`, both ways, once for its whole life. Both directions start out
    /// ready: a task tries first, and learns from `EAGAIN` that it must wait.
    pub fn register(fd: BorrowedFd) -> io::Result<Io> {
        with(|reactor| {
            let io = Io(reactor.next);
            reactor.next += 1;
            let both = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT | EpollFlags::EPOLLET;
            reactor.epoll.add(fd, EpollEvent::new(both, io.0))?;
            let ready = || Readiness { ready: true, waiter: None };
            reactor.sources.insert(io, [ready(), ready()]);
            Ok(io)
        })
    }

    /// Stops watching `fd`: call it before the socket closes (`Drop` of its owner).
    pub fn deregister(self, fd: BorrowedFd) {
        let _ = with(|reactor| {
            reactor.sources.remove(&self);
            Ok(reactor.epoll.delete(fd)?)
        });
    }
    // ANCHOR_END: register

    // ANCHOR: poll_ready
    /// `Ready` if `direction` may be ready; else keeps the task's waker, to wake it when
    /// epoll says so, and returns `Pending`.
    pub fn poll_ready(self, direction: Direction, cx: &mut Context) -> Poll<()> {
        let ready = with(|reactor| {
            let Some(source) = reactor.sources.get_mut(&self) else { return Ok(true) };
            let readiness = &mut source[direction as usize];
            if !readiness.ready {
                readiness.waiter = Some(cx.waker().clone());
            }
            Ok(readiness.ready)
        });
        if ready.unwrap_or(true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// The socket said `EAGAIN`: not ready, until epoll says it is again.
    pub fn clear(self, direction: Direction) {
        let _ = with(|reactor| {
            if let Some(source) = reactor.sources.get_mut(&self) {
                source[direction as usize].ready = false;
            }
            Ok(())
        });
    }
    // ANCHOR_END: poll_ready
}

// ANCHOR: wait
/// Waits until a socket is ready or `timeout` passes, and wakes the tasks waiting for the
/// sockets that are. (The executor's turn calls it; see `executor.rs`.)
pub fn wait(timeout: Option<Duration>) -> io::Result<()> {
    trace!("epoll: waiting, timeout {timeout:?}");
    let timeout = timeout.map_or(EpollTimeout::NONE, |timeout| {
        // Rounded up, as in chapter 4: never wake just before a timer is due.
        EpollTimeout::try_from(timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(EpollTimeout::MAX)
    });
    with(|reactor| {
        let count = match reactor.epoll.wait(&mut reactor.events, timeout) {
            Ok(count) => count,
            Err(nix::errno::Errno::EINTR) => 0, // a signal: nothing ready yet
            Err(error) => return Err(error.into()),
        };
        trace!("epoll: {count} ready");
        for event in &reactor.events[..count] {
            let Some(source) = reactor.sources.get_mut(&Io(event.data())) else { continue };
            let flags = event.events();
            let failed = flags.intersects(EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
            for (direction, flag) in
                [(Direction::Read, EpollFlags::EPOLLIN), (Direction::Write, EpollFlags::EPOLLOUT)]
            {
                if failed || flags.contains(flag) {
                    let readiness = &mut source[direction as usize];
                    readiness.ready = true;
                    // Waking only puts the task in the run queue; it runs later, not here.
                    if let Some(waiter) = readiness.waiter.take() {
                        waiter.wake();
                    }
                }
            }
        }
        Ok(())
    })
}
// ANCHOR_END: wait
