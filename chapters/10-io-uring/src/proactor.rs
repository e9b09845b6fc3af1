//! The proactor: chapter 9's reactor, for completion instead of readiness.
//!
//! A reactor says "you may read now", and the task reads. A proactor is asked "read into
//! this buffer" (an operation: an entry in the ring, `ring.rs`), does it, and its
//! completion, "done: N bytes", wakes the task. Until then the kernel may write into the
//! buffer at any moment, whatever became of the task. So an operation takes the memory the
//! kernel uses by value (a buffer, a path, the socket itself), keeps it in its slot here
//! and gives it back with the result, as tokio-uring and monoio do. Dropped early (its
//! task timed out, its client left), it asks the kernel to cancel, and its slot keeps the
//! memory until the cancelled completion comes back.
//!
//! One ring per thread, as chapter 8 had one epoll per thread; [`turn`] is the loop's
//! wait, one `io_uring_enter` that submits what the tasks asked for and reaps what finished.

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use nix::libc;

use shared::self_pipe::SelfPipe;
use shared::trace;

use crate::ring::{__kernel_timespec, io_uring_sqe, Ring};
use crate::ring::{IORING_OP_ACCEPT, IORING_OP_OPENAT2, IOSQE_IO_LINK};

// ANCHOR: proactor
/// Where an operation is.
enum State {
    Waiting(Option<Waker>), // in flight: the task to wake at its next completion, once polled
    Done(i32),              // completed with `res`, which its future has not taken yet
    Abandoned,              // its future is gone: the completion only frees the memory
}

/// An operation: where it is, and the memory the kernel may use until its completion
/// (boxed: it stays put however the map changes), its time limit's included.
struct Slot {
    state: State,
    owned: Box<dyn Any>,
    opcode: u8,
}

/// An abandoned operation that made a descriptor (an accept, an open, done as its task
/// left) hands it to nobody: it must be closed (dropped), or it leaks.
fn orphan(opcode: u8, res: i32) -> Option<OwnedFd> {
    let makes_one = matches!(opcode, IORING_OP_ACCEPT | IORING_OP_OPENAT2);
    // SAFETY: a descriptor the kernel made for this operation, which nobody else has.
    (makes_one && res >= 0).then(|| unsafe { OwnedFd::from_raw_fd(res) })
}

/// This thread's ring, and its operations by `user_data`: the number each entry carries
/// to its completion, never reused (as chapter 7's tokens).
struct Proactor {
    ring: Ring,
    slots: BTreeMap<u64, Slot>,
    next: u64,
    /// Wakes the loop from other threads: a poll of it is always in the ring.
    doorbell: Arc<SelfPipe>,
    /// The wakers `turn` takes out, kept to be reused: no allocation, turn after turn.
    woken: Vec<Waker>,
}

const DOORBELL: u64 = u64::MAX; // the doorbell's poll carries it, not an operation's number
const NOBODY: u64 = u64::MAX - 1; // what nobody waits for (a cancel, a time limit): no slot

thread_local! {
    static PROACTOR: RefCell<Option<Proactor>> = const { RefCell::new(None) };
}

/// Makes this thread's ring, with room for `completions` at once. Its error, where there
/// is no io_uring to be had, says why.
pub fn start(completions: u32) -> io::Result<()> {
    let ring = Ring::new(256, completions.max(256))?; // never fewer than the entries
    let (slots, doorbell) = (BTreeMap::new(), Arc::new(SelfPipe::new()?));
    let mut proactor = Proactor { ring, slots, next: 0, doorbell, woken: Vec::new() };
    proactor.watch_doorbell()?;
    PROACTOR.with(|cell| cell.replace(Some(proactor)));
    Ok(())
}

fn with<T>(f: impl FnOnce(&mut Proactor) -> T) -> T {
    PROACTOR.with(|cell| f(cell.borrow_mut().as_mut().expect("proactor::start ran on this thread")))
}

/// Wakes this thread's loop from its wait: wakers on other threads ring it (`executor.rs`).
pub fn doorbell() -> Arc<SelfPipe> {
    with(|proactor| proactor.doorbell.clone())
}
// ANCHOR_END: proactor

// ANCHOR: start
impl Proactor {
    /// Queues `entry`, with the memory it may use, and a `timer` linked after it, if any
    /// (`LINK_TIMEOUT`): the kernel cancels the entry once it has passed, or drops it when
    /// the entry completes first. No cancel of ours, and no list of timers walked.
    fn queue(
        &mut self, entry: io_uring_sqe, timer: Option<io_uring_sqe>, owned: Box<dyn Any>,
    ) -> u64 {
        let user_data = self.next;
        self.next += 1;
        let entry = io_uring_sqe { user_data, ..entry };
        // SAFETY: the entries point into `owned` (the promise of `submit`), which stays put
        // in its slot until the entry's completion. A chain goes in one push.
        let pushed = unsafe {
            match timer {
                None => self.ring.push(&[entry]),
                Some(timer) => self.ring.push(&[
                    io_uring_sqe { flags: IOSQE_IO_LINK, ..entry },
                    io_uring_sqe { user_data: NOBODY, ..timer },
                ]),
            }
        };
        let state = match pushed {
            Ok(()) => State::Waiting(None),
            Err(error) => State::Done(-error.raw_os_error().unwrap_or(libc::EIO)), // not queued
        };
        self.slots.insert(user_data, Slot { state, owned, opcode: entry.opcode });
        user_data
    }

    /// Its future was dropped: a done operation's slot comes back, to be freed (with a
    /// descriptor made for nobody, to be closed); else the kernel is asked to cancel it.
    fn abandon(&mut self, user_data: u64) -> Option<(Slot, Option<OwnedFd>)> {
        let slot = self.slots.get_mut(&user_data)?;
        if let State::Done(res) = slot.state {
            let slot = self.slots.remove(&user_data)?;
            let orphan = orphan(slot.opcode, res);
            return Some((slot, orphan));
        }
        slot.state = State::Abandoned;
        // The entry with this `user_data` completes with `-ECANCELED` (or its own result).
        let cancel = io_uring_sqe { user_data: NOBODY, ..io_uring_sqe::async_cancel(user_data) };
        // SAFETY: a cancel points at no memory. Should the ring refuse it, the operation
        // ends in its own time, or when the ring does.
        let _ = unsafe { self.ring.push(&[cancel]) };
        None
    }

    /// Keeps a poll of the doorbell in the ring (rung, it completes, and `turn` renews it).
    fn watch_doorbell(&mut self) -> io::Result<()> {
        let poll = io_uring_sqe::poll_add(self.doorbell.as_fd().as_raw_fd(), libc::POLLIN);
        let poll = io_uring_sqe { user_data: DOORBELL, ..poll };
        // SAFETY: a poll points at no memory; the pipe lives as long as the proactor.
        unsafe { self.ring.push(&[poll]) }
    }
}
// ANCHOR_END: start

// ANCHOR: turn
/// The loop's wait: submits what was queued since the last turn, waits until an operation
/// completes or `timeout` passes, and wakes the tasks of every completion. One system call.
pub fn turn(timeout: Option<Duration>) -> io::Result<()> {
    let (mut freed, mut orphans) = (Vec::new(), Vec::new());
    let mut woken = with(|proactor| -> io::Result<Vec<Waker>> {
        trace!("io_uring: waiting, timeout {timeout:?}");
        let submitted = proactor.ring.submit_and_wait(timeout)?;
        let Proactor { ring, slots, woken, .. } = proactor;
        let mut rung = false;
        let completed = ring.reap(|completion| {
            let Some(slot) = slots.get_mut(&completion.user_data) else {
                rung |= completion.user_data == DOORBELL;
                return;
            };
            match std::mem::replace(&mut slot.state, State::Done(completion.res)) {
                State::Waiting(waker) => woken.extend(waker),
                // The kernel is done with an abandoned operation's memory at last.
                State::Abandoned => {
                    orphans.extend(orphan(slot.opcode, completion.res));
                    freed.extend(slots.remove(&completion.user_data));
                }
                State::Done(_) => {} // one completion per entry: never
            }
        })?;
        trace!("io_uring: submitted {submitted}, completed {completed}, one system call");
        if rung {
            proactor.doorbell.drain(); // the tasks it was rung for are queued already
            proactor.watch_doorbell()?;
        }
        Ok(std::mem::take(&mut proactor.woken))
    })?;
    // Woken, freed and closed once the proactor is not borrowed: a waker is anybody's code.
    woken.drain(..).for_each(Waker::wake);
    drop((freed, orphans));
    with(|proactor| proactor.woken = woken); // empty, its room kept for the next turn
    Ok(())
}
// ANCHOR_END: turn

/// Ends this thread's ring once its tasks are gone. Their operations' cancels are only
/// queued, so, as tokio-uring's driver does, it turns until every operation has completed
/// (its memory freed, its descriptor closed: an open listener would take clients nobody
/// answers until the process exits) or `bound` has passed; then drops the ring.
pub fn finish(bound: Duration) {
    let deadline = Instant::now() + bound;
    while with(|proactor| !proactor.slots.is_empty()) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || turn(Some(left)).is_err() {
            break;
        }
    }
    PROACTOR.with(|cell| drop(cell.take()));
}

/// Past `finish`'s bound, the kernel may write into what is still in flight until the
/// ring closes: that memory is leaked, never freed, at a loop's end the lesser harm.
impl Drop for Proactor {
    fn drop(&mut self) {
        std::mem::take(&mut self.slots).into_values().for_each(|slot| std::mem::forget(slot.owned));
    }
}

// ANCHOR: op
/// An operation in the ring, as a future: ready with its result (`res`: a count, a
/// descriptor; or the error) and the memory it owned. Dropped before then, it cancels.
#[must_use = "an operation's result and memory come back only when it is awaited"]
pub struct Op<T: 'static> {
    user_data: u64,
    finished: bool,
    owned: PhantomData<fn() -> T>, // in the slot, not here: this future may be dropped
    /// The slot is in this thread's ring: a raw pointer makes an `Op` `!Send`.
    on_this_thread: PhantomData<*const ()>,
}

/// Starts an operation: `build` makes its entry from `owned`, already boxed where it will
/// stay until the completion; the future gives `owned` back with the result. Past `limit`
/// (if any), the operation is cancelled (`-ECANCELED`).
///
/// # Safety
/// The entry's pointers point into `owned` and nowhere else (or at memory that outlives
/// every operation): nothing else is kept alive for the kernel.
pub unsafe fn submit<T: 'static>(
    owned: T, limit: Option<Duration>, build: impl FnOnce(&mut T) -> io_uring_sqe,
) -> Op<T> {
    // Boxed with its time limit, which the kernel reads too (as it takes the entries).
    let mut owned = Box::new((owned, limit.map(__kernel_timespec::from)));
    let entry = build(&mut owned.0);
    let timer = owned.1.as_ref().map(io_uring_sqe::link_timeout);
    let user_data = with(|proactor| proactor.queue(entry, timer, owned));
    Op { user_data, finished: false, owned: PhantomData, on_this_thread: PhantomData }
}

impl<T: 'static> Future for Op<T> {
    type Output = (io::Result<u32>, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context) -> Poll<Self::Output> {
        let user_data = self.user_data;
        let done = with(|proactor| {
            let slot = proactor.slots.get_mut(&user_data).expect("a slot lives until its op ends");
            match &mut slot.state {
                State::Done(_) => proactor.slots.remove(&user_data),
                State::Waiting(waker) => {
                    if !waker.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
                        *waker = Some(cx.waker().clone());
                    }
                    None
                }
                State::Abandoned => unreachable!("only a dropped op is abandoned"),
            }
        });
        let Some(Slot { state: State::Done(res), owned, .. }) = done else { return Poll::Pending };
        self.finished = true;
        let owned = owned.downcast::<(T, Option<__kernel_timespec>)>();
        let (owned, _limit) = *owned.expect("an op gets back the memory it gave");
        let result = if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(res as u32) };
        Poll::Ready((result, owned))
    }
}

impl<T> Drop for Op<T> {
    fn drop(&mut self) {
        if !self.finished {
            // try_with: at a thread's end, the proactor may be gone. What `abandon` hands
            // back is freed here, after the borrow.
            let _ = PROACTOR.try_with(|cell| {
                cell.borrow_mut().as_mut().and_then(|proactor| proactor.abandon(self.user_data))
            });
        }
    }
}
// ANCHOR_END: op

#[cfg(test)]
#[cfg(target_os = "linux")] // they need io_uring
#[path = "proactor_tests.rs"]
mod tests;
