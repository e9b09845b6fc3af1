//! The proactor: chapter 9's reactor, for completion instead of readiness.
//!
//! A reactor says "you may read now", and the task reads. A proactor is asked "read into
//! this buffer" (an operation: an entry in the ring, `ring.rs`), does it, and its
//! completion, "done: N bytes", wakes the task. Until then the kernel may write into the
//! buffer at any moment, whatever became of the task. So an operation takes the memory the
//! kernel uses by value (a buffer, a path, the socket itself) and gives it back with the
//! result, as tokio-uring and monoio do; dropped early, it is cancelled, and its slot keeps
//! the memory until the last completion. New in chapter 11: an entry may complete many
//! times (multishot: a completion per arrival, `F_MORE` while armed, kept in its slot until
//! taken); slots are a slab, reused (no allocation); the provided buffers live here.
//!
//! One ring per thread, as chapter 8 had one epoll per thread; [`turn`] is the loop's
//! wait, one `io_uring_enter` that submits what the tasks asked for and reaps what finished.

use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use nix::libc;

use shared::buffer::Buffer;
use shared::self_pipe::SelfPipe;
use shared::trace;

use crate::buffers::BufferRing;
use crate::ring::{__kernel_timespec, io_uring_sqe, Ring};
use crate::ring::{IORING_CQE_F_BUFFER, IORING_CQE_F_MORE};
use crate::ring::{IORING_OP_ACCEPT, IORING_OP_OPENAT2, IOSQE_IO_LINK};

// ANCHOR: proactor
/// One completion, as the kernel posts it: `res`, and `flags` (`F_MORE`, `F_BUFFER`).
pub use crate::ring::io_uring_cqe as Completion;

// ANCHOR: slot
/// Where an operation is.
#[derive(Default)]
enum State {
    Waiting(Option<Waker>), // in flight: the task to wake at its next completion, once polled
    #[default]
    Done,     // its last completion lacked `F_MORE` (or the slot is free): no more will come
    Abandoned(Box<dyn Any>), // its future is gone: its memory, freed at the last completion
}

/// An operation's place, reused from one operation to the next (its queue's room too).
#[derive(Default)]
struct Slot {
    state: State,
    completions: VecDeque<Completion>, // not yet taken by its future, oldest first
    user_data: UserData, // this use (a new generation each): a late cancel of an old one misses
    limit: __kernel_timespec, // a time limit's timespec: it stays put here (a slot is boxed)
    opcode: u8,
}

/// An entry's `user_data`, laid out once (as liburing's `proxy.c` lays out `struct userdata`).
#[derive(Clone, Copy, PartialEq, Default)]
struct UserData {
    index: u32,
    generation: u32,
}

impl UserData {
    fn from_u64(user_data: u64) -> UserData {
        UserData { index: user_data as u32, generation: (user_data >> 32) as u32 }
    }

    fn to_u64(self) -> u64 {
        u64::from(self.generation) << 32 | u64::from(self.index)
    }
}
// ANCHOR_END: slot

/// What an abandoned operation's completion brings to nobody: a buffer or a descriptor.
fn orphan(opcode: u8, completion: Completion, buffers: &mut BufferRing) -> Option<OwnedFd> {
    if completion.flags & IORING_CQE_F_BUFFER != 0 {
        buffers.give_back(BufferRing::id(completion.flags));
    }
    let makes_one = matches!(opcode, IORING_OP_ACCEPT | IORING_OP_OPENAT2);
    // SAFETY: a descriptor the kernel made for this operation, which nobody else has.
    (makes_one && completion.res >= 0).then(|| unsafe { OwnedFd::from_raw_fd(completion.res) })
}

/// This thread's ring, its operations' slots, and its provided buffers.
struct Proactor {
    ring: Ring,
    #[allow(clippy::vec_box)]
    slots: Vec<Box<Slot>>, // boxed, so that each stays put (a time limit is in it)
    free: Vec<u32>,                    // the free ones
    buffers: ManuallyDrop<BufferRing>, // dropped only once nothing in flight may write into one
    /// Wakes the loop from other threads: a poll of it is always in the ring.
    doorbell: Arc<SelfPipe>,
    /// The wakers `turn` takes out, kept to be reused: no allocation, turn after turn.
    woken: Vec<Waker>,
    holding: Vec<UserData>, // receives that held `HELD_AT_MOST` buffers at the last reap
}

// ANCHOR: held
/// How many buffers a receive may hold untaken a turn after they came: its task ran since
/// and did not read (it waits to send, say), so it is stopped; the bytes wait in the socket.
const HELD_AT_MOST: usize = 4;
// ANCHOR_END: held

const DOORBELL: u64 = u64::MAX; // the doorbell's poll carries it, not an operation's number
const NOBODY: u64 = u64::MAX - 1; // what nobody waits for (a cancel, a time limit): no slot

thread_local! {
    static PROACTOR: RefCell<Option<Proactor>> = const { RefCell::new(None) };
}

/// Makes this thread's ring, with room for `completions` at once. Its error, where there
/// is no io_uring to be had, says why.
pub fn start(completions: u32) -> io::Result<()> {
    let ring = Ring::new(256, completions.max(256))?; // never fewer than the entries
    let buffers = ManuallyDrop::new(BufferRing::new(&ring)?);
    let (slots, free, doorbell) = (Vec::new(), Vec::new(), Arc::new(SelfPipe::new()?));
    let (woken, holding) = (Vec::new(), Vec::new());
    let mut proactor = Proactor { ring, slots, free, buffers, doorbell, woken, holding };
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

/// New: copies the bytes a receive's completion brought onto `to`, and gives the buffer back.
pub fn take_bytes(completion: Completion, to: &mut Buffer) {
    let (id, len) = (BufferRing::id(completion.flags), completion.res.max(0) as usize);
    with(|proactor| proactor.buffers.take(id, len, |bytes| to.extend_from_slice(bytes)));
}
// ANCHOR_END: proactor

// ANCHOR: start
impl Proactor {
    // ANCHOR: queue
    /// Queues `entry` in a free slot, with a timer linked after it if there is a `limit`
    /// (`LINK_TIMEOUT`): the kernel cancels the entry once it has passed, or drops it when
    /// the entry completes first. No cancel of ours, and no list of timers walked.
    fn queue(&mut self, entry: io_uring_sqe, limit: Option<Duration>) -> UserData {
        let index = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Box::default());
            self.slots.len() as u32 - 1
        });
        let slot = &mut self.slots[index as usize];
        let user_data = UserData { index, generation: slot.user_data.generation.wrapping_add(1) };
        (slot.user_data, slot.state, slot.opcode) = (user_data, State::Waiting(None), entry.opcode);
        let entry = io_uring_sqe { user_data: user_data.to_u64(), ..entry };
        // SAFETY: the entry points into its operation's memory (`submit`), the timer into its slot.
        let pushed = unsafe {
            match limit {
                None => self.ring.push(&[entry]),
                Some(limit) => {
                    slot.limit = limit.into();
                    let timer = io_uring_sqe::link_timeout(&slot.limit);
                    let entry = io_uring_sqe { flags: entry.flags | IOSQE_IO_LINK, ..entry };
                    self.ring.push(&[entry, io_uring_sqe { user_data: NOBODY, ..timer }])
                }
            }
        };
        if let Err(error) = pushed {
            let res = -error.raw_os_error().unwrap_or(libc::EIO); // not queued: failed at once
            slot.completions.push_back(Completion { user_data: entry.user_data, res, flags: 0 });
            slot.state = State::Done;
        }
        user_data
    }
    // ANCHOR_END: queue

    /// Asks the kernel to end operation `user_data`: `-ECANCELED` (or its result), no `F_MORE`.
    fn cancel(&mut self, user_data: UserData) {
        let cancel = io_uring_sqe::async_cancel(user_data.to_u64());
        let cancel = io_uring_sqe { user_data: NOBODY, ..cancel };
        // SAFETY: a cancel points at no memory. Should the ring refuse it, the operation
        // ends in its own time, or when the ring does.
        let _ = unsafe { self.ring.push(&[cancel]) };
    }

    /// Its future was dropped: its memory kept and the operation cancelled; or, done, freed.
    fn abandon(
        &mut self, user_data: UserData, owned: Box<dyn Any>,
    ) -> (Option<Box<dyn Any>>, Vec<OwnedFd>) {
        let slot = &mut self.slots[user_data.index as usize]; // on: its future had it
        let (opcode, buffers) = (slot.opcode, &mut self.buffers);
        let orphans = slot.completions.drain(..).filter_map(|c| orphan(opcode, c, buffers));
        let orphans = orphans.collect();
        if let State::Done = slot.state {
            self.free.push(user_data.index);
            return (Some(owned), orphans);
        }
        slot.state = State::Abandoned(owned); // and its waker gone: its task may be gone too
        self.cancel(user_data);
        (None, orphans)
    }

    /// Stops the receives that held `HELD_AT_MOST` buffers at the last reap and still do.
    fn stop_the_unread(&mut self) {
        while let Some(user_data) = self.holding.pop() {
            let slot = &self.slots[user_data.index as usize];
            let armed = slot.user_data == user_data && matches!(slot.state, State::Waiting(_));
            if armed && slot.completions.len() >= HELD_AT_MOST {
                self.cancel(user_data);
            }
        }
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
        proactor.stop_the_unread();
        trace!("io_uring: waiting, timeout {timeout:?}");
        let submitted = proactor.ring.submit_and_wait(timeout)?;
        let Proactor { ring, slots, free, buffers, woken, holding, .. } = proactor;
        let mut rung = false;
        let completed = ring.reap(|completion| {
            let user_data = UserData::from_u64(completion.user_data);
            let slot = slots.get_mut(user_data.index as usize);
            let Some(slot) = slot.filter(|slot| slot.user_data == user_data) else {
                rung |= completion.user_data == DOORBELL;
                return;
            };
            let more = completion.flags & IORING_CQE_F_MORE != 0; // it will complete again
            if let State::Waiting(waker) = &mut slot.state {
                woken.extend(waker.take());
                slot.completions.push_back(completion);
                let held = completion.flags & IORING_CQE_F_BUFFER != 0;
                if held && more && slot.completions.len() == HELD_AT_MOST {
                    holding.push(user_data); // if its task does not take them: stop
                }
            } else {
                // An abandoned operation's: free what it brought, and at the last, its memory.
                orphans.extend(orphan(slot.opcode, completion, buffers));
            }
            if !more {
                if let State::Abandoned(owned) = std::mem::take(&mut slot.state) {
                    freed.push(owned);
                    free.push(user_data.index);
                }
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
    while with(|proactor| proactor.slots.iter().any(|slot| !matches!(slot.state, State::Done))) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || turn(Some(left)).is_err() {
            break;
        }
    }
    PROACTOR.with(|cell| drop(cell.take()));
}

/// Past `finish`'s bound, the kernel may write into what is still in flight until the
/// ring closes: that memory, and the buffers, are leaked, at a loop's end the lesser harm.
impl Drop for Proactor {
    fn drop(&mut self) {
        if self.slots.iter().all(|slot| matches!(slot.state, State::Done)) {
            // SAFETY: dropped once, here; nothing in flight can write into a buffer.
            unsafe { ManuallyDrop::drop(&mut self.buffers) };
        }
        self.slots.iter_mut().for_each(|slot| std::mem::forget(std::mem::take(&mut slot.state)));
    }
}

// ANCHOR: op
/// An operation in the ring, as a future: ready with its result (`res`: a count, a
/// descriptor; or the error) and the memory it owned. Dropped before then, it cancels.
/// A multishot one gives its completions one by one ([`Op::poll_next`]).
#[must_use = "an operation's result and memory come back only when it is awaited"]
pub struct Op<T: 'static> {
    user_data: Option<UserData>, // which slot, and which use of it; `None` once its last is taken
    owned: Option<T>, // the memory the kernel may use, kept here (not in the slot) while this lives
    /// The slot is in this thread's ring: a raw pointer makes an `Op` `!Send`.
    on_this_thread: PhantomData<*const ()>,
}

/// Nothing of an `Op` is pinned: `owned` may move, since no entry points into it.
impl<T> Unpin for Op<T> {}

/// Starts an operation: `entry`, with the memory it uses in `owned`, which the future gives
/// back with the result. Past `limit` (if any), the operation is cancelled (`-ECANCELED`).
///
/// # Safety
/// The entry points only into heap memory `owned` keeps (a buffer's contents, never `owned`
/// itself, which moves with the future), or into memory that outlives every operation.
pub unsafe fn submit<T: 'static>(owned: T, limit: Option<Duration>, entry: io_uring_sqe) -> Op<T> {
    let user_data = with(|proactor| proactor.queue(entry, limit));
    Op { user_data: Some(user_data), owned: Some(owned), on_this_thread: PhantomData }
}

impl<T: 'static> Op<T> {
    // ANCHOR: poll_next
    /// The next completion, once it comes; `None` after the last one (without `F_MORE`).
    pub fn poll_next(&mut self, cx: &mut Context) -> Poll<Option<Completion>> {
        let Some(user_data) = self.user_data else { return Poll::Ready(None) };
        let next = with(|proactor| {
            let slot = &mut proactor.slots[user_data.index as usize]; // on, until it ends
            let next = slot.completions.pop_front();
            match &mut slot.state {
                State::Waiting(Some(waker)) if waker.will_wake(cx.waker()) => {}
                State::Waiting(waker) if next.is_none() => *waker = Some(cx.waker().clone()),
                State::Done if slot.completions.is_empty() => {
                    proactor.free.push(user_data.index); // ended: the slot is free for another
                    self.user_data = None;
                }
                _ => {} // more to take first
            }
            next
        });
        match next {
            None if self.user_data.is_some() => Poll::Pending,
            next => Poll::Ready(next),
        }
    }
    // ANCHOR_END: poll_next

    /// Asks the kernel to end it (a multishot one too): what it did before still comes.
    pub fn cancel(&self) {
        if let Some(user_data) = self.user_data {
            with(|proactor| proactor.cancel(user_data));
        }
    }
}

impl<T: 'static> Future for Op<T> {
    type Output = (io::Result<u32>, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context) -> Poll<Self::Output> {
        let Some(Completion { res, .. }) = std::task::ready!(self.poll_next(cx)) else {
            unreachable!("a one-shot operation completes once, and is not polled after")
        };
        let owned = self.owned.take().expect("an op gets back the memory it gave");
        let result = if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(res as u32) };
        Poll::Ready((result, owned))
    }
}

impl<T> Drop for Op<T> {
    fn drop(&mut self) {
        if let Some(user_data) = self.user_data {
            // try_with: at a thread's end, the proactor may be gone. What `abandon` hands
            // back is freed here, after the borrow.
            let _ = PROACTOR.try_with(|cell| {
                let owned = Box::new(self.owned.take()); // none after `F_MORE`: the slot goes too
                cell.borrow_mut().as_mut().map(|proactor| proactor.abandon(user_data, owned))
            });
        }
    }
}
// ANCHOR_END: op

#[cfg(test)]
#[cfg(target_os = "linux")] // they need io_uring
#[path = "proactor_tests.rs"]
mod tests;
