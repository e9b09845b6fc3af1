//! A connection's buffer: bytes go in at the back and are consumed from the front, and a
//! buffer with nothing in it holds no memory.
//!
//! Robustness, not a lesson (the book's "Hostile clients" page tells it). Two costs a plain
//! `Vec<u8>` would make a connection pay:
//!
//! - Consuming from the front of a `Vec` (`drain(..n)`) moves every byte behind it. A
//!   client that pipelines a megabyte of small requests behind one that must wait would
//!   have that megabyte moved once per request answered: 30,000 times. Here consuming only
//!   moves an offset; the bytes behind it move at most once, when the buffer needs room and
//!   at least half of it is consumed already (so each byte consumed pays for at most one
//!   byte moved).
//! - A `Vec` that is emptied keeps its capacity. An idle kept-alive connection would hold
//!   the room its last request or answer needed, kilobytes each, for as long as it stays.
//!   Here the memory leaves the buffer the moment the last byte is consumed, for a small
//!   pool of this thread's, where the next request that arrives on any connection takes it
//!   again: an idle connection holds no buffer (as nginx frees a connection's buffers when
//!   it falls idle), and keep-alive traffic allocates nothing per request.

use std::cell::RefCell;
use std::io;
use std::ops::Deref;

/// Bytes received and not yet consumed, or to send and not yet sent. It reads as the slice
/// of those bytes (`&buffer[..]`, `buffer.len()`).
#[derive(Debug, Default)]
pub struct Buffer {
    /// Empty, with no memory, whenever the buffer holds nothing.
    bytes: Vec<u8>,
    /// How many bytes at the front are consumed: `bytes[start..]` is what the buffer holds.
    start: usize,
}

impl Buffer {
    pub const fn new() -> Buffer {
        Buffer { bytes: Vec::new(), start: 0 }
    }

    /// Appends `more`, taking memory from the thread's pool if the buffer has none.
    pub fn extend_from_slice(&mut self, more: &[u8]) {
        self.make_room(more.len());
        self.bytes.extend_from_slice(more);
    }

    /// Forgets the first `count` bytes (a request answered, a part of an answer sent).
    /// Consumed to the end, the buffer gives its memory back.
    pub fn consume(&mut self, count: usize) {
        assert!(count <= self.len(), "consumed {count} bytes of {}", self.len());
        self.start += count;
        if self.start == self.bytes.len() {
            self.clear();
        }
    }

    /// Forgets everything, and gives the memory back.
    pub fn clear(&mut self) {
        self.start = 0;
        if self.bytes.capacity() > 0 {
            let bytes = std::mem::take(&mut self.bytes);
            // `try_with`: at a thread's end its pool may be gone first; then `bytes` is freed.
            let _ = BUFFERS.try_with(|pool| pool.give_back(bytes));
        }
    }

    /// Makes room for `extra` more bytes: memory from the pool for an empty buffer; for a
    /// full one whose front is mostly consumed, the rest moved to the front.
    fn make_room(&mut self, extra: usize) {
        if extra == 0 {
            return;
        }
        if self.bytes.capacity() == 0 {
            self.bytes = BUFFERS.with(Pool::take);
        } else if self.bytes.len() + extra > self.bytes.capacity() && self.start >= self.len() {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
    }
}

impl Deref for Buffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

/// Answers are written into a buffer (`write!`, `http::response::write_response`); writing
/// into memory cannot fail.
impl io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Spare vectors of one size, kept by one thread for the next to need one: `take` one,
/// `give_back` it. Bounded: past `limit` spares, or a vector that grew past `size`, what is
/// given back is freed. (A thread-local, so no lock: every chapter's buffers live and die
/// on one loop's thread.)
pub struct Pool {
    size: usize,
    limit: usize,
    spare: RefCell<Vec<Vec<u8>>>,
}

impl Pool {
    pub const fn new(size: usize, limit: usize) -> Pool {
        Pool { size, limit, spare: RefCell::new(Vec::new()) }
    }

    /// An empty vector with room for `size` bytes: a spare, or a new one.
    pub fn take(&self) -> Vec<u8> {
        let spare = self.spare.borrow_mut().pop();
        spare.unwrap_or_else(|| Vec::with_capacity(self.size))
    }

    /// Keeps `bytes` for the next `take`, emptied, if it is of the pool's size and there is
    /// room; frees it otherwise.
    pub fn give_back(&self, mut bytes: Vec<u8>) {
        let mut spare = self.spare.borrow_mut();
        if bytes.capacity() == self.size && spare.len() < self.limit {
            bytes.clear();
            spare.push(bytes);
        }
    }

    /// How many spares it keeps now.
    pub fn spares(&self) -> usize {
        self.spare.borrow().len()
    }
}

/// How much room a buffer starts with: the head of a usual request, or a small answer.
pub const BUFFER_SIZE: usize = 4 * 1024;

/// How many spare buffers a thread keeps: 256 KiB at most. Enough for the buffers a turn
/// of the loop has in use at once under load, so that keep-alive traffic allocates nothing.
pub const SPARE_BUFFERS: usize = 64;

thread_local! {
    static BUFFERS: Pool = const { Pool::new(BUFFER_SIZE, SPARE_BUFFERS) };
}

/// How many spare buffers this thread's pool keeps now (for the tests).
pub fn spare_buffers() -> usize {
    BUFFERS.with(Pool::spares)
}

#[cfg(test)]
#[path = "buffer_tests.rs"]
mod tests;
