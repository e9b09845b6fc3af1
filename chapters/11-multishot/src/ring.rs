//! The ring: io_uring's raw interface, to read beside the kernel's `<linux/io_uring.h>`.
//!
//! Two queues in memory the kernel and we share. We write requests (submission queue
//! entries, SQEs) into the submission ring and move its tail; the kernel writes results
//! (completion queue entries, CQEs) into the completion ring and moves its tail; each side
//! takes from the other's head. One system call, `io_uring_enter`, submits and, in the
//! same call, waits. Each index has one writer, who fills the entries, then stores the
//! index with `Release`; the reader loads it with `Acquire`, then reads: no lock, and no
//! index seen before the entries it covers.
//!
//! `unsafe` is the lesson: memory the kernel writes into while we run. Each block says why.

#![allow(non_camel_case_types)] // the header's names, so that a reader can find them there

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::{AtomicU32, Ordering::*};
use std::time::Duration;

use nix::libc::{self, c_long};

use shared::linux;

// ANCHOR: structs
/// One request. Where the header has a union, the field has the name we use it by.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct io_uring_sqe {
    pub opcode: u8, // IORING_OP_*
    pub flags: u8,  // IOSQE_*
    pub ioprio: u16,
    pub fd: i32,        // the descriptor to work on
    pub off: u64,       // a file offset (or, for openat2, its `open_how`)
    pub addr: u64,      // a buffer, a path, a timespec, or the user_data to cancel
    pub len: u32,       // a buffer's length, or a count
    pub op_flags: u32,  // union: msg_flags, poll32_events, timeout_flags, accept_flags...
    pub user_data: u64, // ours: the kernel gives it back in the completion, untouched
    pub buf_group: u16, // new: the provided buffers a receive picks from (`buffers.rs`)
    pub personality: u16,
    pub splice_fd_in: i32, // new: where a splice reads from
    pub unused: [u64; 2],
}

/// One result: the `user_data` of the request it answers, and `res`, what the system call
/// would have returned (a count, a descriptor), or `-errno`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct io_uring_cqe {
    pub user_data: u64,
    pub res: i32,
    pub flags: u32,
}

/// New: an entry of a provided-buffer ring (`buffers.rs`); the first's `resv` is its tail.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct io_uring_buf {
    pub addr: u64,
    pub len: u32,
    pub bid: u16, // the buffer's id, which a completion names
    pub resv: u16,
}

/// New: what `IORING_REGISTER_PBUF_RING` is given.
#[repr(C)]
struct io_uring_buf_reg {
    ring_addr: u64,
    ring_entries: u32,
    bgid: u16, // the group's id, which a receive names (`buf_group`)
    flags: u16,
    resv: [u64; 3],
}

/// Where, in the shared memory, each field of the rings is: byte offsets the kernel tells.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct io_sqring_offsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct io_cqring_offsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    overflow: u32,
    cqes: u32,
    flags: u32,
    resv: [u32; 3],
}

/// What we ask of `io_uring_setup`, filled in by the kernel with what it gave.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct io_uring_params {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread: [u32; 2],
    features: u32,
    resv: [u32; 4],
    sq_off: io_sqring_offsets,
    cq_off: io_cqring_offsets,
}

/// `io_uring_enter`'s extra argument, with `IORING_ENTER_EXT_ARG`: how long to wait.
#[repr(C)]
#[derive(Default)]
struct io_uring_getevents_arg {
    sigmask: u64,
    sigmask_sz: u32,
    pad: u32,
    ts: u64, // a pointer to a __kernel_timespec, or 0: no limit
}

#[repr(C)]
#[derive(Default)]
pub struct __kernel_timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

impl From<Duration> for __kernel_timespec {
    fn from(duration: Duration) -> __kernel_timespec {
        let tv_sec = i64::try_from(duration.as_secs()).unwrap_or(i64::MAX);
        __kernel_timespec { tv_sec, tv_nsec: i64::from(duration.subsec_nanos()) }
    }
}

// A wrong layout would still compile, and the kernel would read garbage: the header's sizes.
const _: () = assert!(size_of::<io_uring_sqe>() == 64 && size_of::<io_uring_cqe>() == 16);
const _: () =
    assert!(size_of::<io_uring_params>() == 120 && size_of::<io_uring_getevents_arg>() == 24);
const _: () = assert!(size_of::<io_uring_buf>() == 16 && size_of::<io_uring_buf_reg>() == 40);

pub const IORING_OP_POLL_ADD: u8 = 6;
pub const IORING_OP_ACCEPT: u8 = 13;
pub const IORING_OP_ASYNC_CANCEL: u8 = 14;
pub const IORING_OP_LINK_TIMEOUT: u8 = 15;
pub const IORING_OP_SEND: u8 = 26;
pub const IORING_OP_RECV: u8 = 27;
pub const IORING_OP_OPENAT2: u8 = 28;
pub const IORING_OP_SPLICE: u8 = 30;
pub const IOSQE_IO_LINK: u8 = 1 << 2; // the next entry is linked to this one
pub const IOSQE_BUFFER_SELECT: u8 = 1 << 5; // new: a provided buffer, picked by the kernel
pub const IORING_ACCEPT_MULTISHOT: u16 = 1 << 0; // new, in `ioprio`: accept again and again
pub const IORING_RECV_MULTISHOT: u16 = 1 << 1; // new, in `ioprio`: receive again and again
pub const IORING_CQE_F_BUFFER: u32 = 1 << 0; // new: the completion carries a buffer's id
pub const IORING_CQE_F_MORE: u32 = 1 << 1; // new: the entry will complete again
pub const IORING_CQE_BUFFER_SHIFT: u32 = 16; // where in the flags that id is
const IORING_REGISTER_PBUF_RING: u32 = 22;
const IORING_SETUP_CQSIZE: u32 = 1 << 3;
const IORING_SETUP_SINGLE_ISSUER: u32 = 1 << 12;
const IORING_SETUP_DEFER_TASKRUN: u32 = 1 << 13;
const IORING_FEAT_SINGLE_MMAP: u32 = 1 << 0;
const IORING_FEAT_NODROP: u32 = 1 << 1;
const IORING_FEAT_EXT_ARG: u32 = 1 << 8;
const IORING_OFF_SQES: i64 = 0x1000_0000;
const IORING_ENTER_GETEVENTS: u32 = 1 << 0;
const IORING_ENTER_EXT_ARG: u32 = 1 << 3;
const IORING_SQ_CQ_OVERFLOW: u32 = 1 << 1;

/// A ring: its descriptor, the memory shared with the kernel (the rings' indexes and
/// completions in one mapping, the submission entries in another), and where in it each
/// field is. Indexes are free-running `u32` counters; `& (entries - 1)` makes a slot.
pub struct Ring {
    rings: Mapping,
    sqes: Mapping,
    params: io_uring_params,
    fd: OwnedFd, // closed after the mappings are gone: fields drop in order
}

/// One `mmap` of the ring's descriptor, unmapped when dropped.
struct Mapping(NonNull<u8>, usize);

impl Mapping {
    fn new(fd: &OwnedFd, len: usize, offset: i64) -> io::Result<Mapping> {
        let (protection, flags) = (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED);
        // SAFETY: a new shared mapping of the ring's memory, which aliases nothing of ours.
        let start =
            unsafe { libc::mmap(null_mut(), len, protection, flags, fd.as_raw_fd(), offset) };
        match NonNull::new(start.cast()) {
            Some(start) if start.as_ptr() != libc::MAP_FAILED.cast() => Ok(Mapping(start, len)),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// The `T` at byte `offset`, an offset the kernel gave (checked: it fits).
    fn at<T>(&self, offset: u32) -> NonNull<T> {
        assert!(offset as usize + size_of::<T>() <= self.1, "the kernel's offsets fit");
        // SAFETY: in bounds, just checked; the kernel aligns every field it places.
        unsafe { self.0.add(offset as usize).cast() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, of this length; no pointer into it outlives the ring.
        unsafe { libc::munmap(self.0.as_ptr().cast(), self.1) };
    }
}
// ANCHOR_END: structs

// ANCHOR: setup
impl Ring {
    /// A ring of `entries` submission and `completions` completion slots (rounded up to 2^n).
    /// `SINGLE_ISSUER | DEFER_TASKRUN`: only this thread submits, and the kernel does the
    /// requests' work when we enter to wait, not whenever it likes (measured: saves CPU).
    pub fn new(entries: u32, completions: u32) -> io::Result<Ring> {
        let flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
        let mut params = io_uring_params { cq_entries: completions, flags, ..Default::default() };
        // SAFETY: the kernel reads and fills in `params`, which lives through the call.
        let fd = unsafe {
            libc::syscall(linux::SYS_io_uring_setup, c_long::from(entries), &raw mut params)
        };
        if fd < 0 {
            return Err(unavailable(&io::Error::last_os_error().to_string()));
        }
        // SAFETY: a descriptor just made, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // What we rely on: one mapping for both rings, no dropped completion, a timed wait.
        let needed = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP | IORING_FEAT_EXT_ARG;
        if params.features & needed != needed {
            return Err(unavailable("this kernel lacks SINGLE_MMAP, NODROP or EXT_ARG"));
        }
        let (sq, cq) = (params.sq_off, params.cq_off);
        let sq_len = sq.array as usize + params.sq_entries as usize * size_of::<u32>();
        let cq_len = cq.cqes as usize + params.cq_entries as usize * size_of::<io_uring_cqe>();
        let rings = Mapping::new(&fd, sq_len.max(cq_len), 0)?;
        let sqes_len = params.sq_entries as usize * size_of::<io_uring_sqe>();
        let sqes = Mapping::new(&fd, sqes_len, IORING_OFF_SQES)?;
        // Slot i of the submission ring names entry i, once and for all (as in liburing).
        for index in 0..params.sq_entries {
            // SAFETY: within the array (sq_len above); no entry is submitted yet.
            unsafe { rings.at::<u32>(sq.array).add(index as usize).write(index) };
        }
        Ok(Ring { rings, sqes, params, fd })
    }
}

/// The one line to print where there is no io_uring to be had, saying why.
fn unavailable(why: &str) -> io::Error {
    let hint = "it needs Linux 6.1 or later, and may be turned off (io_uring_disabled, seccomp)";
    io::Error::new(io::ErrorKind::Unsupported, format!("io_uring is not available: {why}; {hint}"))
}
// ANCHOR_END: setup

// ANCHOR: push
impl Ring {
    /// An index of the rings, which one side writes and the other reads: an atomic.
    fn field(&self, offset: u32) -> &AtomicU32 {
        // SAFETY: a field of the mapping, which lives as long as `self`; `AtomicU32` has a
        // `u32`'s layout, and memory another writer shares must be read atomically.
        unsafe { self.rings.at::<AtomicU32>(offset).as_ref() }
    }

    /// How many pushed entries the kernel has not taken. Acquire on the head: pairs with the
    /// kernel's Release once it has read them (their slots ours again); only we write the tail.
    fn queued(&self) -> u32 {
        let head = self.field(self.params.sq_off.head).load(Acquire);
        self.field(self.params.sq_off.tail).load(Relaxed).wrapping_sub(head)
    }

    /// Copies `entries` into the submission ring, together (a linked chain must reach the
    /// kernel in one submission), submitting what is queued first if they do not fit.
    ///
    /// # Safety
    /// Every pointer in the entries must stay valid, its memory neither freed nor moved,
    /// until the entry's completion is reaped: the kernel may write into it until then.
    pub unsafe fn push(&mut self, entries: &[io_uring_sqe]) -> io::Result<()> {
        let room = self.params.sq_entries;
        if self.queued() + entries.len() as u32 > room {
            self.enter(0, 0, None)?; // the kernel takes them all, unless short of memory
        }
        if self.queued() + entries.len() as u32 > room {
            return Err(io::Error::other("io_uring: the submission ring stays full"));
        }
        let tail = self.field(self.params.sq_off.tail).load(Relaxed);
        for (next, entry) in (tail..).zip(entries) {
            let slot = (next & (room - 1)) as usize;
            // SAFETY: the slot is in the array, and free (behind the head: see `queued`).
            unsafe { self.sqes.at::<io_uring_sqe>(0).add(slot).write(*entry) };
        }
        // Release: the entries written above are visible before the tail that covers them.
        let tail = tail.wrapping_add(entries.len() as u32);
        self.field(self.params.sq_off.tail).store(tail, Release);
        Ok(())
    }

    /// The loop's one system call: submits every queued entry and waits until one has
    /// completed or `timeout` passes (`None`: no limit); returns how many it took. An error
    /// means it took none: a signal (`EINTR`), the timeout (`ETIME`) or a passing shortage of
    /// memory (`EAGAIN`) end the wait early; the caller reaps what there is, turns again.
    pub fn submit_and_wait(&mut self, timeout: Option<Duration>) -> io::Result<u32> {
        match self.enter(1, IORING_ENTER_GETEVENTS, timeout) {
            Err(error) if matches!(error.raw_os_error(), Some(libc::EINTR | linux::ETIME)) => Ok(0),
            Err(error) if error.raw_os_error() == Some(libc::EAGAIN) => Ok(0),
            result => result,
        }
    }

    fn enter(&mut self, wait_for: u32, flags: u32, timeout: Option<Duration>) -> io::Result<u32> {
        let ts = timeout.map(__kernel_timespec::from);
        let ts = ts.as_ref().map_or(0, |ts| ts as *const __kernel_timespec as u64);
        let arg = io_uring_getevents_arg { ts, ..Default::default() };
        // As C longs: a variadic call does not widen its arguments for us.
        let [fd, to_submit, wait_for, flags, size] =
            [self.fd.as_raw_fd() as u32, self.queued(), wait_for, flags | IORING_ENTER_EXT_ARG, 24]
                .map(c_long::from);
        // SAFETY: `arg`, and the timespec it points to, live through the call; the entries
        // the kernel takes are the caller's promise (see `push`).
        let result = unsafe {
            let arg = &raw const arg;
            libc::syscall(linux::SYS_io_uring_enter, fd, to_submit, wait_for, flags, arg, size)
        };
        match result {
            -1 => Err(io::Error::last_os_error()),
            taken => Ok(taken as u32),
        }
    }

    /// New: registers a provided-buffer ring (`buffers.rs`) as buffer group `bgid`.
    ///
    /// # Safety
    /// The entries are page-aligned, and stay put as long as the kernel may use them.
    pub unsafe fn register_buffers(&self, ring: *mut [io_uring_buf], bgid: u16) -> io::Result<()> {
        let (ring_addr, ring_entries) = (ring as *mut io_uring_buf as u64, ring.len() as u32);
        let reg = io_uring_buf_reg { ring_addr, ring_entries, bgid, flags: 0, resv: [0; 3] };
        let [fd, op, count] =
            [self.fd.as_raw_fd() as u32, IORING_REGISTER_PBUF_RING, 1].map(c_long::from);
        // SAFETY: `reg` lives through the call; the ring is the caller's promise.
        match unsafe { libc::syscall(linux::SYS_io_uring_register, fd, op, &reg, count) } {
            -1 => Err(unavailable(&format!("io_uring_register: {}", io::Error::last_os_error()))),
            _ => Ok(()),
        }
    }
    // ANCHOR_END: push

    // ANCHOR: reap
    /// Hands each completion to `complete`, oldest first, and frees its slot; returns how
    /// many. Completions that found the ring full the kernel keeps on a list of its own
    /// (`IORING_FEAT_NODROP`), flagged `IORING_SQ_CQ_OVERFLOW`, and moves into the ring only
    /// when we enter with `GETEVENTS`: so, having made room, we do. None is lost.
    pub fn reap(&mut self, mut complete: impl FnMut(io_uring_cqe)) -> io::Result<u32> {
        let (mask, cqes, mut count) = (self.params.cq_entries - 1, self.params.cq_off.cqes, 0);
        loop {
            // Relaxed: only we write the head. Acquire: pairs with the kernel's Release.
            let mut head = self.field(self.params.cq_off.head).load(Relaxed);
            let tail = self.field(self.params.cq_off.tail).load(Acquire);
            while head != tail {
                let slot = self.rings.at::<io_uring_cqe>(cqes);
                // SAFETY: the slot is in the array, written (before tail) and ours (after head).
                complete(unsafe { slot.add((head & mask) as usize).read() });
                (head, count) = (head.wrapping_add(1), count + 1);
            }
            // Release: our reads of those slots are done before the kernel may refill them.
            self.field(self.params.cq_off.head).store(head, Release);
            // Relaxed: a flag, not an index; the system call below synchronises.
            if self.field(self.params.sq_off.flags).load(Relaxed) & IORING_SQ_CQ_OVERFLOW == 0 {
                return Ok(count);
            }
            match self.enter(0, IORING_ENTER_GETEVENTS, None) {
                Err(error) if error.raw_os_error() != Some(libc::EINTR) => return Err(error),
                _ => {} // the kernel's backlog is in the ring now: reap it
            }
        }
    }
}

// ANCHOR_END: reap

/// New: lends `buffer` to the kernel as buffer `bid` of the provided-buffer ring `ring`, as
/// liburing's `io_uring_buf_ring_add` and `_advance` do: its entry at the tail, then the tail.
///
/// # Safety
/// `ring` is registered (`Ring::register_buffers`), and `buffer` is ours to lend.
pub unsafe fn provide_buffer(ring: *mut [io_uring_buf], buffer: *mut [u8], bid: u16) {
    let (first, addr, len) = (ring as *mut io_uring_buf, buffer as *mut u8 as u64, buffer.len());
    // SAFETY: the first entry's `resv` is the tail, which the kernel reads: an atomic, stored
    // with `Release` once the entry at it (ours) is written, field by field, never its `resv`.
    unsafe {
        let tail = std::sync::atomic::AtomicU16::from_ptr(&raw mut (*first).resv);
        let entry = first.add(usize::from(tail.load(Relaxed)) % ring.len());
        ((*entry).addr, (*entry).len, (*entry).bid) = (addr, len as u32, bid);
        tail.store(tail.load(Relaxed).wrapping_add(1), Release);
    }
}

/// What every kind of entry sets (liburing's `io_uring_prep_rw`); `op_flags` as it says.
pub fn prep_rw(op: u8, fd: i32, addr: u64, len: usize, off: u64, op_flags: u32) -> io_uring_sqe {
    io_uring_sqe { opcode: op, fd, addr, len: len as u32, off, op_flags, ..Default::default() }
}

/// One constructor per kind of entry, as liburing's `io_uring_prep_*`: building one is safe
/// (it is only numbers, addresses among them); handing it over is not (see [`Ring::push`]).
impl io_uring_sqe {
    pub fn poll_add(fd: i32, events: i16) -> io_uring_sqe {
        prep_rw(IORING_OP_POLL_ADD, fd, 0, 0, 0, events as u32)
    }

    pub fn multishot_accept(fd: i32, flags: i32) -> io_uring_sqe {
        let accept = prep_rw(IORING_OP_ACCEPT, fd, 0, 0, 0, flags as u32); // no address asked
        io_uring_sqe { ioprio: IORING_ACCEPT_MULTISHOT, ..accept }
    }

    pub fn async_cancel(user_data: u64) -> io_uring_sqe {
        prep_rw(IORING_OP_ASYNC_CANCEL, -1, user_data, 0, 0, 0) // of the entry that carries it
    }

    pub fn link_timeout(limit: &__kernel_timespec) -> io_uring_sqe {
        prep_rw(IORING_OP_LINK_TIMEOUT, -1, &raw const *limit as u64, 1, 0, 0)
    }

    pub fn splice(from: i32, offset: Option<u64>, to: i32, len: usize) -> io_uring_sqe {
        let entry = prep_rw(IORING_OP_SPLICE, to, offset.unwrap_or(u64::MAX), len, u64::MAX, 0);
        io_uring_sqe { splice_fd_in: from, ..entry } // `addr` is `from`'s offset, `off` `to`'s
    }

    pub fn send(fd: i32, bytes: &[u8], flags: i32) -> io_uring_sqe {
        prep_rw(IORING_OP_SEND, fd, bytes.as_ptr() as u64, bytes.len(), 0, flags as u32)
    }

    pub fn recv_multishot(fd: i32, group: u16) -> io_uring_sqe {
        let (flags, ioprio) = (IOSQE_BUFFER_SELECT, IORING_RECV_MULTISHOT);
        io_uring_sqe { flags, ioprio, buf_group: group, ..prep_rw(IORING_OP_RECV, fd, 0, 0, 0, 0) }
    }

    pub fn openat2(dirfd: i32, path: &std::ffi::CStr, how: &[u64; 3]) -> io_uring_sqe {
        prep_rw(IORING_OP_OPENAT2, dirfd, path.as_ptr() as u64, 24, how.as_ptr() as u64, 0)
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")] // they need io_uring
#[path = "ring_tests.rs"]
mod tests;

#[cfg(test)]
#[cfg(not(target_os = "linux"))] // where there is none, one test says so
#[path = "off_linux_tests.rs"]
mod tests;
