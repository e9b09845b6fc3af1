//! The proactor: chapter 9's reactor, for completion instead of readiness (chapter 10's).
//!
//! A task submits an operation (an entry in the ring, `ring.rs`), and its completion wakes
//! it. Until then the kernel may write into the operation's memory, whatever became of the
//! task: so an operation owns that memory (a buffer, a path, the socket) and gives it back
//! with the result, as tokio-uring and monoio do; one dropped early is cancelled, and its
//! slot keeps the memory until the last completion.
//!
//! New in chapter 11: an entry may complete many times. A multishot receive or accept
//! completes once for each arrival, saying `IORING_CQE_F_MORE` while it stays armed; its
//! completions wait in its slot, in order, until its task takes them. The slots are a slab,
//! reused: `user_data` names a slot and which use of it, and an operation costs no
//! allocation (chapter 10 boxed its memory and kept a map entry for it): its memory stays
//! in its future, boxed into the slot only if that future is dropped early. And the loop's
//! provided buffers (`buffers.rs`) live here, with the ring they are registered to.
//!
//! One ring per thread, as chapter 8 had one epoll per thread: [`turn`] is the loop's
//! wait, one `io_uring_enter` that submits everything the tasks asked for since the last
//! turn and reaps everything that finished.

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
use crate::ring::{__kernel_timespec, io_uring_sqe, Ring, IORING_CQE_F_BUFFER, IORING_CQE_F_MORE};
use crate::ring::{IORING_OP_ACCEPT, IORING_OP_ASYNC_CANCEL, IORING_OP_LINK_TIMEOUT};
use crate::ring::{IORING_OP_OPENAT2, IORING_OP_POLL_ADD, IOSQE_IO_LINK};

// ANCHOR: proactor
/// One completion: `res`, what the system call would have returned (or `-errno`), and the
/// flags (`IORING_CQE_F_MORE`, `IORING_CQE_F_BUFFER`).
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub res: i32,
    pub flags: u32,
}

// ANCHOR: slot
/// An operation's place, reused from one operation to the next (its queue's room too).
#[derive(Default)]
struct Slot {
    /// The completions its future has not taken yet, oldest first.
    completions: VecDeque<Completion>,
    /// The task to wake when one comes (none until the future is first polled).
    waker: Option<Waker>,
    /// The kernel will complete it again: not yet completed, or it said `F_MORE`.
    in_flight: bool,
    /// Its future is gone: the memory the kernel may still use, freed at the last completion.
    abandoned: Option<Box<dyn Any>>,
    opcode: u8,
    /// Which use of the slot this is, half of `user_data`: a cancel for an earlier use, come
    /// after that use ended, never ends a later one (chapter 10 never reused a number).
    generation: u32,
    /// A time limit's timespec: here it stays put (a slot is boxed) until the kernel reads it.
    limit: __kernel_timespec,
}
// ANCHOR_END: slot

/// What a completion of an abandoned operation (`opcode`) leaves with nobody: a buffer, to
/// give back, or a descriptor (an accept, an open), to close.
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
    /// Boxed, so that each stays put (a time limit is in it); `free` names the free ones.
    #[allow(clippy::vec_box)]
    slots: Vec<Box<Slot>>,
    free: Vec<u32>,
    /// Dropped only once nothing is in flight, which could still write into a buffer.
    buffers: ManuallyDrop<BufferRing>,
    /// Wakes the loop from other threads: a poll of it is always in the ring.
    doorbell: Arc<SelfPipe>,
    /// The wakers `turn` takes out, kept to be reused: no allocation, turn after turn.
    woken: Vec<Waker>,
    /// Receives that held `HELD_AT_MOST` buffers at the last reap (`stop_the_unread`).
    holding: Vec<u64>,
}

// ANCHOR: held
/// How many provided buffers a receive's untaken completions may hold a turn after they
/// came: its task has run since and not taken them (it waits for a send, say), so it is
/// stopped, and its client's bytes wait in the socket until it reads again (`read_to`).
/// A burst within one turn may fill more (the kernel receives up to 32 times in a go).
const HELD_AT_MOST: usize = 4;
// ANCHOR_END: held

/// The doorbell's poll carries this instead of an operation's number.
const DOORBELL: u64 = u64::MAX;
/// What nobody waits for (a cancel, a time limit) carries this: its completion has no slot.
const NOBODY: u64 = u64::MAX - 1;

thread_local! {
    static PROACTOR: RefCell<Option<Proactor>> = const { RefCell::new(None) };
}

/// Makes this thread's ring, with room for `completions` at once (a few per connection
/// the loop will hold), and its provided buffers. Its error, where there is no io_uring
/// to be had (or too old a one), says why.
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

/// The self-pipe that wakes this thread's loop from its wait: a task's waker rings it
/// when it is woken from another thread (see `executor.rs`).
pub fn doorbell() -> Arc<SelfPipe> {
    with(|proactor| proactor.doorbell.clone())
}

/// New: copies the bytes a receive's completion brought (`IORING_CQE_F_BUFFER`) onto the
/// end of `to`, and gives their buffer back to the kernel.
pub fn take_bytes(completion: Completion, to: &mut Buffer) {
    let (id, len) = (BufferRing::id(completion.flags), completion.res.max(0) as usize);
    with(|proactor| proactor.buffers.take(id, len, |bytes| to.extend_from_slice(bytes)));
}
// ANCHOR_END: proactor

// ANCHOR: start
impl Proactor {
    // ANCHOR: queue
    /// Queues `entry` in a free slot; with a `limit`, a timer linked after it
    /// (`LINK_TIMEOUT`) cancels it once the limit has passed. The kernel keeps that timer
    /// with the entry, and drops it when the entry completes first: no cancel of ours, and
    /// no list of timers walked.
    fn queue(&mut self, entry: io_uring_sqe, limit: Option<Duration>) -> u64 {
        let Proactor { ring, slots, free, .. } = self;
        let index = free.pop().unwrap_or_else(|| {
            slots.push(Box::default());
            slots.len() as u32 - 1
        });
        let slot = &mut slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        (slot.in_flight, slot.opcode) = (true, entry.opcode);
        let user_data = u64::from(slot.generation) << 32 | u64::from(index);
        let entry = io_uring_sqe { user_data, ..entry };
        // SAFETY: the entry points into memory its operation keeps (the promise of
        // `submit`); the timer, into its slot, which stays put. A chain goes in one push.
        let pushed = unsafe {
            match limit {
                None => ring.push(&[entry]),
                Some(limit) => {
                    slot.limit = limit.into();
                    let ts = (&raw const slot.limit).cast();
                    let timer = io_uring_sqe::new(IORING_OP_LINK_TIMEOUT, -1, ts, 1);
                    let entry = io_uring_sqe { flags: entry.flags | IOSQE_IO_LINK, ..entry };
                    ring.push(&[entry, io_uring_sqe { user_data: NOBODY, ..timer }])
                }
            }
        };
        if let Err(error) = pushed {
            let res = -error.raw_os_error().unwrap_or(libc::EIO); // not queued: failed at once
            (slot.in_flight, slot.completions) =
                (false, VecDeque::from([Completion { res, flags: 0 }]));
        }
        user_data
    }
    // ANCHOR_END: queue

    /// Asks the kernel to end the operation `user_data` names: it completes with
    /// `-ECANCELED` (or its own result), without `F_MORE` if it was a multishot one.
    fn cancel(&mut self, user_data: u64) {
        let cancel = io_uring_sqe::new(IORING_OP_ASYNC_CANCEL, -1, std::ptr::null(), 0);
        let cancel = io_uring_sqe { addr: user_data, user_data: NOBODY, ..cancel };
        // SAFETY: a cancel points at no memory. Should the ring refuse it, the operation
        // ends in its own time, or when the ring does.
        let _ = unsafe { self.ring.push(&[cancel]) };
    }

    /// Its future was dropped, with the memory it held: kept in the slot until the kernel
    /// is done with it, and the operation asked to end; or, done, handed back to be freed,
    /// with what its untaken completions brought (see `orphan`).
    fn abandon(
        &mut self, user_data: u64, owned: Box<dyn Any>,
    ) -> (Option<Box<dyn Any>>, Vec<OwnedFd>) {
        let slot = &mut self.slots[user_data as u32 as usize]; // on: its future had it
        slot.waker = None; // its task may be gone: its waker must not live on in the slot
        let (opcode, buffers) = (slot.opcode, &mut self.buffers);
        let orphans = slot.completions.drain(..).filter_map(|c| orphan(opcode, c, buffers));
        let orphans = orphans.collect();
        if !slot.in_flight {
            self.release(user_data);
            return (Some(owned), orphans);
        }
        slot.abandoned = Some(owned);
        self.cancel(user_data);
        (None, orphans)
    }

    /// Stops the receives that held `HELD_AT_MOST` buffers at the last reap and still do:
    /// their tasks have run since, and did not take them.
    fn stop_the_unread(&mut self) {
        while let Some(user_data) = self.holding.pop() {
            let slot = &self.slots[user_data as u32 as usize];
            let same_use = u64::from(slot.generation) == user_data >> 32 && slot.in_flight;
            if same_use && slot.completions.len() >= HELD_AT_MOST {
                self.cancel(user_data);
            }
        }
    }

    /// The operation `user_data` names is over: its slot is free for another.
    fn release(&mut self, user_data: u64) {
        self.slots[user_data as u32 as usize].waker = None;
        self.free.push(user_data as u32);
    }

    /// Keeps a poll of the doorbell in the ring: rung, it completes, and `turn` empties the
    /// pipe and calls this again.
    fn watch_doorbell(&mut self) -> io::Result<()> {
        let fd = self.doorbell.as_fd().as_raw_fd();
        let poll = io_uring_sqe::new(IORING_OP_POLL_ADD, fd, std::ptr::null(), 0);
        let poll = io_uring_sqe { user_data: DOORBELL, ..poll.with(libc::POLLIN as u32, 0) };
        // SAFETY: a poll points at no memory; the pipe lives as long as the proactor.
        unsafe { self.ring.push(&[poll]) }
    }
}
// ANCHOR_END: start

// ANCHOR: turn
/// The loop's wait: submits every entry queued since the last turn, waits until an
/// operation completes or `timeout` passes (`None`: no limit), reaps every completion,
/// and wakes the tasks they belong to. One system call, however many operations.
pub fn turn(timeout: Option<Duration>) -> io::Result<()> {
    let (mut freed, mut orphans) = (Vec::new(), Vec::new());
    let mut woken = with(|proactor| -> io::Result<Vec<Waker>> {
        proactor.stop_the_unread();
        trace!("io_uring: waiting, timeout {timeout:?}");
        let submitted = proactor.ring.submit_and_wait(timeout)?;
        let Proactor { ring, slots, free, buffers, woken, holding, .. } = proactor;
        let mut rung = false;
        let completed = ring.reap(|entry| {
            let index = entry.user_data as u32 as usize;
            let slot = slots.get_mut(index).filter(|slot| {
                u64::from(slot.generation) == entry.user_data >> 32 && slot.in_flight
            });
            let Some(slot) = slot else {
                rung |= entry.user_data == DOORBELL;
                return;
            };
            let completion = Completion { res: entry.res, flags: entry.flags };
            slot.in_flight = entry.flags & IORING_CQE_F_MORE != 0; // more to come?
            if slot.abandoned.is_none() {
                slot.completions.push_back(completion);
                woken.extend(slot.waker.take());
                let held = completion.flags & IORING_CQE_F_BUFFER != 0;
                if held && slot.in_flight && slot.completions.len() == HELD_AT_MOST {
                    holding.push(entry.user_data); // if its task does not take them: stop
                }
                return;
            }
            // An abandoned operation's: free what it brought, and at the last, its memory.
            orphans.extend(orphan(slot.opcode, completion, buffers));
            if !slot.in_flight {
                freed.extend(slot.abandoned.take());
                free.push(index as u32);
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

/// Ends this thread's ring once its tasks are gone: their operations' cancels are only
/// queued, so, as tokio-uring's driver does, turn until all have completed (a listener
/// left open would take clients nobody answers), or `bound` has passed.
pub fn finish(bound: Duration) {
    let deadline = Instant::now() + bound;
    while with(|proactor| proactor.slots.iter().any(|slot| slot.in_flight)) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || turn(Some(left)).is_err() {
            break;
        }
    }
    PROACTOR.with(|cell| drop(cell.take()));
}

/// What is still in flight when the ring goes (past `finish`'s bound) may be written into
/// until the ring has closed: its memory, and the buffers, are leaked, the lesser harm.
impl Drop for Proactor {
    fn drop(&mut self) {
        let in_flight = self.slots.iter_mut().filter(|slot| slot.in_flight);
        let leaked = in_flight.map(|slot| std::mem::forget(slot.abandoned.take())).count();
        if leaked == 0 {
            // SAFETY: dropped once, here; nothing in flight can write into a buffer.
            unsafe { ManuallyDrop::drop(&mut self.buffers) };
        }
    }
}
// ANCHOR_END: turn

// ANCHOR: op
/// An operation in the ring, as a future: ready with its result and the memory it owned.
/// A multishot one gives its completions one by one ([`Op::poll_next`]). Dropped early, it
/// cancels.
#[must_use = "an operation's result and memory come back only when it is awaited"]
pub struct Op<T: 'static> {
    /// Which slot, and which use of it; `None` once its last completion is taken.
    user_data: Option<u64>,
    /// The memory the kernel may use, kept here (not in the slot) while this lives.
    owned: Option<T>,
    /// The slot is in this thread's ring: a raw pointer makes an `Op` `!Send`.
    on_this_thread: PhantomData<*const ()>,
}

/// Nothing of an `Op` is pinned: `owned` may move, since no entry points into it.
impl<T> Unpin for Op<T> {}

/// Starts an operation: `build` makes its entry from `owned`; the future gives `owned`
/// back with the result. Past `limit` (if any), the operation is cancelled (`-ECANCELED`).
///
/// # Safety
/// The entry's pointers point only into memory `owned` keeps on the heap (a buffer's
/// contents, never `owned` itself, which moves with the future), or into memory that
/// outlives every operation: nothing else is kept alive for the kernel.
pub unsafe fn submit<T: 'static>(
    mut owned: T, limit: Option<Duration>, build: impl FnOnce(&mut T) -> io_uring_sqe,
) -> Op<T> {
    let entry = build(&mut owned);
    let user_data = with(|proactor| proactor.queue(entry, limit));
    Op { user_data: Some(user_data), owned: Some(owned), on_this_thread: PhantomData }
}

impl<T: 'static> Op<T> {
    // ANCHOR: poll_next
    /// The next completion, once it comes; `None` after the last one (without `F_MORE`).
    pub fn poll_next(&mut self, cx: &mut Context) -> Poll<Option<Completion>> {
        let Some(user_data) = self.user_data else { return Poll::Ready(None) };
        let (next, ended) = with(|proactor| {
            let slot = &mut proactor.slots[user_data as u32 as usize]; // on, until it ends
            let next = slot.completions.pop_front();
            if next.is_none() && !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                slot.waker = Some(cx.waker().clone());
            }
            let ended = slot.completions.is_empty() && !slot.in_flight;
            if ended {
                proactor.release(user_data);
            }
            (next, ended)
        });
        if ended {
            self.user_data = None;
        }
        match next {
            None if !ended => Poll::Pending,
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

    fn poll(self: Pin<&mut Self>, cx: &mut Context) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(completion) = std::task::ready!(this.poll_next(cx)) else {
            unreachable!("a one-shot operation completes once, and is not polled after")
        };
        let owned = this.owned.take().expect("an op gets back the memory it gave");
        let res = completion.res;
        let result = if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(res as u32) };
        Poll::Ready((result, owned))
    }
}

impl<T: 'static> Drop for Op<T> {
    fn drop(&mut self) {
        let Some(user_data) = self.user_data else { return };
        // Its memory, or nothing (a one-shot operation that said `F_MORE`): the slot must go.
        let owned: Box<dyn Any> = match self.owned.take() {
            Some(owned) => Box::new(owned),
            None => Box::new(()),
        };
        // try_with: at a thread's end, the proactor may have gone first. What it hands back
        // is freed (and closed) here, once the proactor is no longer borrowed.
        let _ = PROACTOR.try_with(|cell| {
            let mut proactor = cell.borrow_mut();
            proactor.as_mut().map(|proactor| proactor.abandon(user_data, owned))
        });
    }
}
// ANCHOR_END: op

#[cfg(test)]
#[path = "proactor_tests.rs"]
mod tests;
