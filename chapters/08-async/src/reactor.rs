//! The reactor: chapter 7's epoll, turned around. There, the loop called a handler back
//! when its socket was ready. Here nobody is called back: a task that met `EAGAIN` leaves
//! its `Waker` with the reactor, for that socket and direction, and returns `Pending`;
//! when epoll says the socket is ready, the reactor wakes the task, and the executor polls
//! it again, to retry the read or the write.
//!
//! Each socket is registered once, for both directions, edge-triggered (`EPOLLET`): epoll
//! reports a change (bytes arrived, room appeared) once, not on every wait while it lasts.
//! So the reactor remembers readiness: a direction is ready from its event until the
//! socket says it is drained ([`Source::clear`]), or for good once the peer has hung up.
//! That costs no `epoll_ctl` per wait, and a socket a task is not waiting for (bytes that
//! arrived while it was busy) does not wake the loop over and over.
//!
//! What the reactor needs of the kernel (register once, both ways, edge-triggered; wait)
//! is a small module per mechanism, picked by the system we build for: `reactor/epoll.rs`
//! on Linux, `reactor/kqueue.rs` (`EV_CLEAR`, a hang-up as `EV_EOF`) on macOS and the BSDs.
//! Both say what they saw as an [`Event`]; all the rest here is the same everywhere.
//!
//! One reactor per thread (a thread-local), as the executor and the timers: tasks reach it
//! from wherever they are polled, as Tokio's do.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use shared::self_pipe::SelfPipe;

#[cfg(target_os = "linux")]
mod epoll;
#[cfg(not(target_os = "linux"))]
mod kqueue;
#[cfg(target_os = "linux")]
use epoll::Poller;
#[cfg(not(target_os = "linux"))]
use kqueue::Poller;

// ANCHOR: reactor
/// Names one registered socket; its epoll events carry it back, as chapter 7's tokens did.
/// (async-io calls the same thing a `Source`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source(u64);

/// The doorbell's events carry this instead of a source's number.
const DOORBELL: u64 = u64::MAX;

/// Reading or writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// What the kernel said of one registration (`key`), in the reactor's words: a poller
/// turns each event of its own into one of these.
pub struct Event {
    key: u64,
    readable: bool,
    writable: bool,
    /// The peer has shut its side: nothing more will come to read.
    hung_up: bool,
    /// The socket has failed (a reset) or is gone both ways: nothing will go out either.
    failed: bool,
}

/// What the reactor knows of one direction of one socket.
#[derive(Default)]
struct Readiness {
    /// It may be ready: epoll said so, and nothing has said otherwise since.
    ready: bool,
    /// The peer has hung up (or the socket failed): ready for good, to meet the end-of-file
    /// or the error, which no later event would announce again.
    closed: bool,
    /// The tasks waiting for it to become ready: usually one, but two tasks may share a
    /// socket, and each must be woken.
    waiters: Vec<Waker>,
}

struct Reactor {
    poller: Poller,
    /// What the last wait saw, kept to be reused, as `woken` is.
    events: Vec<Event>,
    sources: BTreeMap<Source, [Readiness; 2]>,
    next: u64,
    /// Wakes the loop from other threads (see `doorbell`).
    doorbell: Arc<SelfPipe>,
    /// The wakers `wait` takes out, kept to be reused: no allocation, turn after turn.
    woken: Vec<Waker>,
}

thread_local! {
    static REACTOR: RefCell<Option<Reactor>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's reactor, made on first use.
fn with<T>(f: impl FnOnce(&mut Reactor) -> io::Result<T>) -> io::Result<T> {
    REACTOR.with(|reactor| {
        let mut reactor = reactor.borrow_mut();
        if reactor.is_none() {
            let poller = Poller::new()?;
            let doorbell = Arc::new(SelfPipe::new()?);
            poller.add(doorbell.as_fd(), DOORBELL, &[Direction::Read])?;
            let (events, sources, woken) = (Vec::new(), BTreeMap::new(), Vec::new());
            *reactor = Some(Reactor { poller, events, sources, next: 0, doorbell, woken });
        }
        f(reactor.as_mut().expect("made just above"))
    })
}

/// The self-pipe that wakes this thread's reactor from its wait: a task's waker rings it
/// when it is woken from another thread (see `executor.rs`).
pub fn doorbell() -> io::Result<Arc<SelfPipe>> {
    with(|reactor| Ok(reactor.doorbell.clone()))
}
// ANCHOR_END: reactor

impl Source {
    // ANCHOR: register
    /// Starts watching `fd`, both ways, once for its whole life. Both directions start out
    /// ready: a task tries first, and learns from `EAGAIN` that it must wait.
    pub fn register(fd: BorrowedFd) -> io::Result<Source> {
        with(|reactor| {
            let source = Source(reactor.next);
            reactor.next += 1;
            reactor.poller.add(fd, source.0, &[Direction::Read, Direction::Write])?;
            let ready = || Readiness { ready: true, closed: false, waiters: Vec::new() };
            reactor.sources.insert(source, [ready(), ready()]);
            Ok(source)
        })
    }

    /// Stops watching `fd`: call it before the socket closes (`Drop` of its owner).
    pub fn deregister(self, fd: BorrowedFd) {
        let _ = with(|reactor| {
            reactor.sources.remove(&self);
            reactor.poller.delete(fd)
        });
    }
    // ANCHOR_END: register

    // ANCHOR: poll_ready
    /// `Ready` if `direction` may be ready; else keeps the task's waker, to wake it when
    /// epoll says so, and returns `Pending`. Every task that waits is woken: a waker is
    /// kept once however often its task polls, and never replaced by another task's (which
    /// would lose the first task's wake-up: it would wait forever).
    pub fn poll_ready(self, direction: Direction, cx: &mut Context) -> Poll<()> {
        self.poll_until(direction, cx, |readiness| readiness.ready)
    }

    /// `Ready` once the socket has failed (a reset, say): how a task that has stopped
    /// reading still learns that its peer is gone. It waits with the writers, whom an error
    /// wakes too; woken for room to write, it looks, and waits again.
    pub fn poll_failed(self, cx: &mut Context) -> Poll<()> {
        self.poll_until(Direction::Write, cx, |writers| writers.closed)
    }

    fn poll_until(
        self, direction: Direction, cx: &mut Context, done: fn(&Readiness) -> bool,
    ) -> Poll<()> {
        let done = with(|reactor| {
            let Some(source) = reactor.sources.get_mut(&self) else { return Ok(true) };
            let readiness = &mut source[direction as usize];
            let waiting = readiness.waiters.iter().any(|waiter| waiter.will_wake(cx.waker()));
            if !done(readiness) && !waiting {
                readiness.waiters.push(cx.waker().clone());
            }
            Ok(done(readiness))
        });
        if done.unwrap_or(true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// The socket said it has nothing more (`EAGAIN`, or a read or write that did less than
    /// asked): not ready, until epoll says it is again. Unless the peer has hung up: then
    /// a read that got the last bytes is followed by the end-of-file, with no event between.
    pub fn clear(self, direction: Direction) {
        let _ = with(|reactor| {
            if let Some(source) = reactor.sources.get_mut(&self) {
                let readiness = &mut source[direction as usize];
                readiness.ready = readiness.closed;
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
    let mut woken = with(|reactor| {
        match reactor.poller.wait(timeout, &mut reactor.events) {
            Ok(()) => {}
            // A signal: nothing ready yet.
            Err(error) if error.kind() == io::ErrorKind::Interrupted => reactor.events.clear(),
            Err(error) => return Err(error),
        }
        for event in &reactor.events {
            if event.key == DOORBELL {
                reactor.doorbell.drain(); // the tasks it was rung for are queued already
                continue;
            }
            let Some(source) = reactor.sources.get_mut(&Source(event.key)) else { continue };
            let hung_up = event.failed || event.hung_up;
            for (direction, ready, closed) in [
                (Direction::Read, event.readable, hung_up),
                (Direction::Write, event.writable, event.failed),
            ] {
                if closed || ready {
                    let readiness = &mut source[direction as usize];
                    readiness.ready = true;
                    readiness.closed |= closed;
                    reactor.woken.append(&mut readiness.waiters);
                }
            }
        }
        Ok(std::mem::take(&mut reactor.woken))
    })?;
    // Woken once the reactor is no longer borrowed: a waker is any code at all, and one
    // that called back into the reactor would find it borrowed, and panic.
    woken.drain(..).for_each(Waker::wake);
    with(|reactor| {
        reactor.woken = woken; // empty, with its room kept for the next turn
        Ok(())
    })
}
// ANCHOR_END: wait

#[cfg(test)]
#[path = "reactor_tests.rs"]
mod tests;
