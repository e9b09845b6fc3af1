//! New in chapter 11: buffers the kernel picks from, a provided-buffer ring (Linux 5.19).
//!
//! The loop lends the kernel a pool of buffers up front, in a ring shared as the submission
//! ring is: we write a buffer's address and number at the tail, and move the tail
//! (`Release`). The kernel takes one from the head only when bytes arrive for a receive
//! that asked for one (`IOSQE_BUFFER_SELECT`), and names it in the completion
//! (`IORING_CQE_F_BUFFER`, the number in the flags' top 16 bits): so a receive waits in the
//! ring holding nothing. Each buffer comes back to us exactly once, in a completion, and
//! goes back to the kernel exactly once, by [`BufferRing::give_back`]. With none left, a
//! receive ends with `ENOBUFS`; its bytes stay in the socket, for a plain `recv` (`read_to`).

#![allow(non_camel_case_types)] // the header's names, so that a reader can find them there

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering::Release};

use crate::ring::{Ring, IORING_CQE_BUFFER_SHIFT, IORING_REGISTER_PBUF_RING};

// ANCHOR: ring
/// The buffer group the receives name (`buf_group`): this ring's.
pub const GROUP: u16 = 0;
/// How many buffers, and how big: 1 MiB a loop, shared by all its connections. A buffer
/// is held from its completion until its task copies it out: the same turn, when the task
/// is reading; a task that is not has its receive stopped (the proactor's `HELD_AT_MOST`).
pub const COUNT: usize = 256;
pub const SIZE: usize = 4096;

/// One entry of the ring, as `<linux/io_uring.h>` has it. The ring's tail shares the
/// first entry's `resv`: so `resv` is never written here.
#[repr(C)]
#[derive(Clone, Copy)]
struct io_uring_buf {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

/// What `IORING_REGISTER_PBUF_RING` is given.
#[repr(C)]
struct io_uring_buf_reg {
    ring_addr: u64,
    ring_entries: u32,
    bgid: u16,
    flags: u16,
    resv: [u64; 3],
}

/// The ring's memory: one page (256 entries of 16 bytes), page-aligned as the kernel asks.
#[repr(C, align(4096))]
struct Entries([io_uring_buf; COUNT]);

/// The ring, and the buffers its entries point into.
pub struct BufferRing {
    /// Both only ever reached through raw pointers: the kernel reads the one and writes
    /// into the other while we run, which no Rust reference may see happen.
    entries: NonNull<Entries>,
    buffers: NonNull<[u8]>,
    /// Our copy of the tail: only we write it.
    pub(crate) tail: u16,
}

impl BufferRing {
    /// Makes the buffers, hands every one to the kernel, and registers the ring with `ring`.
    /// It must then live as long as `ring` (the proactor keeps both).
    pub fn new(ring: &Ring) -> io::Result<BufferRing> {
        let empty = io_uring_buf { addr: 0, len: 0, bid: 0, resv: 0 };
        let entries = NonNull::from(Box::leak(Box::new(Entries([empty; COUNT]))));
        let buffers = NonNull::from(Box::leak(vec![0u8; COUNT * SIZE].into_boxed_slice()));
        let mut buffers = BufferRing { entries, buffers, tail: 0 };
        (0..COUNT as u16).for_each(|id| buffers.give_back(id));
        let register = io_uring_buf_reg {
            ring_addr: entries.as_ptr() as u64,
            ring_entries: COUNT as u32,
            bgid: GROUP,
            flags: 0,
            resv: [0; 3],
        };
        // SAFETY: the ring's memory lives as long as `self`, which lives as long as `ring`.
        unsafe { ring.register(IORING_REGISTER_PBUF_RING, &register) }.map_err(|error| {
            let why = format!("provided-buffer rings need Linux 5.19 ({error})");
            io::Error::new(io::ErrorKind::Unsupported, format!("io_uring is not available: {why}"))
        })?;
        Ok(buffers)
    }

    /// The buffer a completion names (its flags have `IORING_CQE_F_BUFFER`).
    pub fn id(flags: u32) -> u16 {
        (flags >> IORING_CQE_BUFFER_SHIFT) as u16
    }

    /// Copies the first `len` bytes of buffer `id` out to `to`, then gives it back.
    pub fn take(&mut self, id: u16, len: usize, to: impl FnOnce(&[u8])) {
        let start = self.buffers.as_ptr().cast::<u8>().wrapping_add(usize::from(id) * SIZE);
        // SAFETY: the kernel wrote these bytes before the completion that named the buffer
        // (read after an `Acquire` of the completion tail), and writes into it no more until
        // it is given back, just below. The slice covers this buffer only: the kernel may
        // be writing into the others.
        to(unsafe { std::slice::from_raw_parts(start, len.min(SIZE)) });
        self.give_back(id);
    }

    /// Hands buffer `id` (back) to the kernel: written at the tail, then the tail moved.
    pub fn give_back(&mut self, id: u16) {
        let slot = usize::from(self.tail) % COUNT;
        let address = self.buffers.as_ptr().cast::<u8>() as u64 + u64::from(id) * SIZE as u64;
        // SAFETY: the entry is ours to write: the kernel has taken it already, or never had
        // it. Field by field, and never `resv` (the first entry's holds the tail).
        unsafe {
            let entry = &raw mut (*self.entries.as_ptr()).0[slot];
            (&raw mut (*entry).addr).write(address);
            (&raw mut (*entry).len).write(SIZE as u32);
            (&raw mut (*entry).bid).write(id);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail is a field of the first entry, which the kernel reads: an atomic.
        let tail = unsafe { AtomicU16::from_ptr(&raw mut (*self.entries.as_ptr()).0[0].resv) };
        tail.store(self.tail, Release); // the entry above is written before the kernel sees it
    }
}
// ANCHOR_END: ring

impl Drop for BufferRing {
    fn drop(&mut self) {
        // SAFETY: our own allocations, from `new`; the proactor drops this only once the
        // ring has nothing in flight that could still write into a buffer.
        drop(unsafe {
            (Box::from_raw(self.entries.as_ptr()), Box::from_raw(self.buffers.as_ptr()))
        });
    }
}

#[cfg(test)]
#[path = "buffers_tests.rs"]
mod tests;
