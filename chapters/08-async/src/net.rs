//! Sockets whose calls are futures: `EAGAIN` becomes `Poll::Pending`.
//!
//! [`Async<T>`] wraps anything with a descriptor (a listener, a stream, the signal pipe)
//! and registers it with the reactor for its whole life, as smol's `async-io` does. Every
//! call goes through [`retry`]: try the non-blocking call; if the socket says `EAGAIN`,
//! note that it is not ready, leave the task's waker with the reactor, and return
//! `Pending`; when the task is polled again, try again. A read that an `async fn` awaits
//! looks like a blocking read, and is one for the task: but never for the thread. Each
//! try spends one of the task's budget for this poll (`executor::spend`).

use std::cell::RefCell;
use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::task::{ready, Poll};

use shared::buffer::Buffer;
use shared::upstream;

use crate::executor;
use crate::reactor::{Direction, Source};

// ANCHOR: async
/// A descriptor registered with the reactor, for as long as this value lives.
pub struct Async<T: AsFd> {
    inner: T,
    source: Source,
}

impl<T: AsFd> Async<T> {
    /// Registers `inner`, which must already be non-blocking.
    pub fn new(inner: T) -> io::Result<Async<T>> {
        let source = Source::register(inner.as_fd())?;
        Ok(Async { inner, source })
    }

    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// Runs `call` on the descriptor until it does not say `EAGAIN`, waiting until the
    /// descriptor is readable before each try: `accept`, `read`, draining a pipe.
    pub async fn read_with<R>(&self, mut call: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        retry(self.source, Direction::Read, || call(&self.inner)).await
    }

    /// The same, waiting until it is writable: `write`.
    pub async fn write_with<R>(&self, mut call: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        retry(self.source, Direction::Write, || call(&self.inner)).await
    }
}

/// Out of the reactor before the descriptor closes, and so before its number is reused.
impl<T: AsFd> Drop for Async<T> {
    fn drop(&mut self) {
        self.source.deregister(self.inner.as_fd());
    }
}

/// Tries `call` until it does not say `EAGAIN` (`WouldBlock`), waiting for readiness in
/// `direction` between tries. The heart of this file: a future written by hand.
async fn retry<R>(
    source: Source, direction: Direction, mut call: impl FnMut() -> io::Result<R>,
) -> io::Result<R> {
    poll_fn(|cx| loop {
        ready!(source.poll_ready(direction, cx)); // Pending, with the waker left, if not ready
        ready!(executor::spend(cx)); // Pending, woken for next turn, if the budget is spent
        match call() {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => source.clear(direction),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            result => return Poll::Ready(result),
        }
    })
    .await
}
// ANCHOR_END: async

// ANCHOR: stream
const CHUNK: usize = 16 * 1024;

thread_local! {
    static SCRATCH: RefCell<[u8; CHUNK]> = const { RefCell::new([0; CHUNK]) };
}

impl Async<TcpStream> {
    /// Connects without blocking: the socket becomes writable when the handshake is over,
    /// and `SO_ERROR` says how it went.
    pub async fn connect(address: SocketAddr) -> io::Result<Async<TcpStream>> {
        let stream = Async::new(upstream::start_connecting(address)?)?;
        // Not writable until then, whatever a new registration assumes. (epoll reports a
        // socket that is writable already as soon as it is registered.)
        stream.source.clear(Direction::Write);
        poll_fn(|cx| stream.source.poll_ready(Direction::Write, cx)).await;
        match stream.get_ref().take_error()? {
            None => Ok(stream),
            Some(error) => Err(error),
        }
    }

    /// Reads what has arrived (up to 16 KiB) onto the end of `buffer`; 0 means the peer has
    /// closed. The bytes land in the thread's scratch array first: an array held across an
    /// `.await` is stored in the task (10,000 idle tasks would carry one each), and one made
    /// for each read would be 16 KiB to zero every time.
    pub async fn read_to(&self, buffer: &mut Buffer) -> io::Result<usize> {
        let count = self
            .read_with(|stream| {
                SCRATCH.with_borrow_mut(|chunk| {
                    let count = (&*stream).read(chunk)?;
                    buffer.extend_from_slice(&chunk[..count]);
                    Ok(count)
                })
            })
            .await?;
        // Less than asked for: the socket is drained, and we know it without one more read
        // to hear `EAGAIN` (a system call per request, saved). End-of-file (0) stays ready.
        if count > 0 && count < CHUNK {
            self.source.clear(Direction::Read);
        }
        Ok(count)
    }

    /// Waits until the peer has left with a reset (or the socket failed): how a task that
    /// reads no more still learns that its client is gone.
    pub async fn departed(&self) -> io::Error {
        poll_fn(|cx| self.source.poll_failed(cx)).await;
        io::ErrorKind::ConnectionReset.into()
    }

    pub async fn write(&self, bytes: &[u8]) -> io::Result<usize> {
        let count = self.write_with(|stream| (&*stream).write(bytes)).await?;
        if count < bytes.len() {
            self.source.clear(Direction::Write); // the send buffer is full, as above
        }
        Ok(count)
    }

    pub async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match self.write(bytes).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                sent => bytes = &bytes[sent..], // a partial write is normal: go on
            }
        }
        Ok(())
    }
}
// ANCHOR_END: stream
