//! New in chapter 11: buffers the kernel picks from, a provided-buffer ring (Linux 5.19),
//! shared like the submission ring: we write an entry at the tail, then move the tail
//! (`Release`). The kernel takes one only when bytes arrive for a receive that asks, so a
//! waiting receive holds none. A buffer comes to us once, and goes back once.

#![allow(non_camel_case_types)] // the header's names, so that a reader can find them there

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering::Release};

use crate::ring::{Ring, IORING_CQE_BUFFER_SHIFT, IORING_REGISTER_PBUF_RING};

// ANCHOR: ring
pub const GROUP: u16 = 0; // the buffer group the receives name (`buf_group`): this ring's
pub const COUNT: usize = 256; // how many buffers: 1 MiB a loop, shared by all its clients
pub const SIZE: usize = 4096; // how big each is

/// One entry, as `<linux/io_uring.h>` has it; the first entry's `resv` is the ring's tail.
#[repr(C)]
#[derive(Clone, Copy, Default)]
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

#[repr(C, align(4096))] // page-aligned, as the kernel asks
struct Entries([io_uring_buf; COUNT]); // the ring's memory: one page, 256 entries of 16 bytes

/// The ring, and the buffers its entries point into.
pub struct BufferRing {
    /// Raw pointers only: the kernel reads the one and writes the other while we run.
    entries: NonNull<Entries>,
    buffers: NonNull<[u8]>,
    pub(crate) tail: u16, // our copy of the tail: only we write it
}

impl BufferRing {
    /// Makes the buffers, gives them to the kernel, and registers them with `ring`, which
    /// they must outlive (the proactor keeps both).
    pub fn new(ring: &Ring) -> io::Result<BufferRing> {
        let entries = NonNull::from(Box::leak(Box::new(Entries([Default::default(); COUNT]))));
        let buffers = NonNull::from(Box::leak(vec![0u8; COUNT * SIZE].into_boxed_slice()));
        let mut buffers = BufferRing { entries, buffers, tail: 0 };
        (0..COUNT as u16).for_each(|id| buffers.give_back(id));
        let (ring_addr, ring_entries) = (entries.as_ptr() as u64, COUNT as u32);
        let reg = io_uring_buf_reg { ring_addr, ring_entries, bgid: GROUP, flags: 0, resv: [0; 3] };
        // SAFETY: the ring's memory lives as long as `self`, which lives as long as `ring`.
        unsafe { ring.register(IORING_REGISTER_PBUF_RING, &reg) }.map_err(|error| {
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
        // SAFETY: the kernel wrote these bytes before the completion naming the buffer (read
        // after an `Acquire`), and no more until it is given back below; the others it may.
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
        // SAFETY: our own allocations (`new`), dropped once nothing in flight can write into them.
        let (entries, buffers) = (self.entries.as_ptr(), self.buffers.as_ptr());
        drop(unsafe { (Box::from_raw(entries), Box::from_raw(buffers)) });
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")] // they need io_uring
#[path = "buffers_tests.rs"]
mod tests;
