//! New in chapter 11: buffers the kernel picks from, a provided-buffer ring (Linux 5.19),
//! shared like the submission ring: we write an entry at the tail, then move the tail
//! (`Release`). The kernel takes one only when bytes arrive for a receive that asks, so a
//! waiting receive holds none. A buffer comes to us once, and goes back once.

use std::io;
use std::ptr::NonNull;

use crate::ring::{io_uring_buf, provide_buffer, Ring, IORING_CQE_BUFFER_SHIFT};

// ANCHOR: ring
pub const GROUP: u16 = 0; // the buffer group the receives name (`buf_group`): this ring's
pub const COUNT: usize = 256; // how many buffers: 1 MiB a loop, shared by all its clients
pub const SIZE: usize = 4096; // how big each is

#[repr(C, align(4096))] // page-aligned, as the kernel asks
struct Entries([io_uring_buf; COUNT]); // the ring's memory: one page, 256 entries of 16 bytes

/// The ring, and the buffers its entries point into.
pub struct BufferRing {
    /// Raw pointers only: the kernel reads the one and writes the other while we run.
    entries: NonNull<Entries>,
    buffers: NonNull<[[u8; SIZE]]>,
}

impl BufferRing {
    /// Makes the buffers, gives them to the kernel, and registers them with `ring`, which
    /// they must outlive (the proactor keeps both).
    pub fn new(ring: &Ring) -> io::Result<BufferRing> {
        let entries = NonNull::from(Box::leak(Box::new(Entries([Default::default(); COUNT]))));
        let buffers = NonNull::from(Box::leak(vec![[0; SIZE]; COUNT].into_boxed_slice()));
        let mut buffers = BufferRing { entries, buffers };
        (0..COUNT as u16).for_each(|id| buffers.give_back(id));
        // SAFETY: the ring's memory lives as long as `self`, which lives as long as `ring`.
        unsafe { ring.register_buffers(&raw mut (*entries.as_ptr()).0, GROUP)? };
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
        let (ring, buffers) = (self.entries.as_ptr(), self.buffers.as_ptr());
        // SAFETY: the ring's memory lives as long as `self`; buffer `id` is ours to lend again.
        unsafe { provide_buffer(&raw mut (*ring).0, &raw mut (*buffers)[usize::from(id)], id) };
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
