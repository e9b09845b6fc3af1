//! Sockets whose calls are operations in the ring: chapter 9's `Async<T>`, completed.
//!
//! Chapter 9 tried each call and, at `EAGAIN`, waited for readiness. Here a receive, a
//! send, an accept is an operation the kernel carries out, and the task waits for its
//! completion (`proactor.rs`). The socket is shared (`Rc`) with every operation using it:
//! closed under a waiting entry, its number could go to the next client, and the entry act
//! on that client's socket.
//!
//! A receive waiting in the ring holds its buffer (16 KiB: 160 MiB for 10,000 idle
//! clients), so a connection first waits for readiness (a poll holds nothing), then
//! receives: one more entry per request, no more calls.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, FromRawFd};
use std::rc::Rc;
use std::time::Duration;

use nix::libc::{self, POLLIN, POLLOUT};

use shared::buffer::{Buffer, Pool};
use shared::upstream;

use crate::proactor::submit;
use crate::ring::io_uring_sqe;

// ANCHOR: async
/// A descriptor that operations in the ring may use, shared with them.
pub struct Async<T: AsFd + 'static> {
    inner: Rc<T>,
}

impl<T: AsFd + 'static> Async<T> {
    pub fn new(inner: T) -> Async<T> {
        Async { inner: Rc::new(inner) }
    }

    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// Waits until the descriptor is ready for `events`: readiness, as an operation.
    async fn ready(&self, events: i16) -> io::Result<()> {
        let poll = io_uring_sqe::poll_add(self.inner.as_fd().as_raw_fd(), events);
        // SAFETY: a poll points at no memory; the operation keeps the descriptor open.
        unsafe { submit(self.inner.clone(), None, |_| poll) }.await.0.map(drop)
    }

    /// For a call with no operation (emptying a pipe): tried until not `EAGAIN`, readable between.
    pub async fn read_with<R>(&self, mut call: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        loop {
            match call(&self.inner) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.ready(POLLIN).await?
                }
                result => return result,
            }
        }
    }
}
// ANCHOR_END: async

// ANCHOR: stream
impl Async<TcpListener> {
    /// Accepts a client: the kernel makes its socket.
    pub async fn accept(&self) -> io::Result<TcpStream> {
        let accept = io_uring_sqe::accept(self.inner.as_raw_fd(), shared::linux::SOCK_CLOEXEC);
        // SAFETY: no address is asked for (null pointers); the op keeps the listener open.
        let socket = unsafe { submit(self.inner.clone(), None, |_| accept) }.await.0? as i32;
        // SAFETY: a descriptor the kernel has just made, for us alone.
        Ok(unsafe { TcpStream::from_raw_fd(socket) })
    }
}

const CHUNK: usize = 16 * 1024;

thread_local! {
    /// Chunks receives lend the kernel, kept for the next ones (at most 64, 1 MiB).
    static CHUNKS: Pool = const { Pool::new(CHUNK, 64) };
}

impl Async<TcpStream> {
    /// Connects without blocking: the socket becomes writable when the handshake is over,
    /// and `SO_ERROR` says how it went.
    pub async fn connect(address: SocketAddr) -> io::Result<Async<TcpStream>> {
        let stream = Async::new(upstream::start_connecting(address)?);
        stream.ready(POLLOUT).await?;
        match stream.get_ref().take_error()? {
            None => Ok(stream),
            Some(error) => Err(error),
        }
    }

    /// Waits for bytes, then receives what has arrived (up to 16 KiB) onto the end of
    /// `buffer`; 0 means the peer has closed.
    pub async fn read_to(&self, buffer: &mut Buffer) -> io::Result<usize> {
        loop {
            self.readable().await?;
            match self.receive(buffer).await {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {} // see `receive`
                result => return result,
            }
        }
    }

    /// Waits until the peer has left with a reset (or the socket failed): how a task that
    /// reads no more still learns that its client is gone. A poll for no event: errors and
    /// hang-ups are reported whatever was asked. A half-close (end-of-file) is no leaving.
    pub async fn departed(&self) -> io::Error {
        if let Err(error) = self.ready(0).await {
            return error;
        }
        match self.inner.take_error() {
            Ok(Some(error)) | Err(error) => error,
            Ok(None) => std::future::pending().await, // half-closed: wait on
        }
    }

    /// Waits until bytes are there (or the peer has closed): a poll, which holds nothing.
    pub async fn readable(&self) -> io::Result<()> {
        self.ready(POLLIN).await
    }

    /// Receives what has arrived, after `readable`, onto the end of `buffer`, into a chunk
    /// the receive owns first. It never waits in the ring (`MSG_DONTWAIT`: else `WouldBlock`,
    /// and readiness again): a poll can say "readable" for an urgent byte (`MSG_OOB`) no
    /// receive returns, and a receive waiting for more would wait outside every timeout.
    pub async fn receive(&self, buffer: &mut Buffer) -> io::Result<usize> {
        // SAFETY: the entry points into the chunk's heap block, which the operation owns.
        let receive = unsafe {
            submit((self.inner.clone(), CHUNKS.with(Pool::take)), None, |(stream, chunk)| {
                let room = chunk.spare_capacity_mut();
                io_uring_sqe::recv(stream.as_raw_fd(), room, libc::MSG_DONTWAIT)
            })
        };
        let (received, (_, mut chunk)) = receive.await;
        // SAFETY: the kernel wrote this many bytes at the start of the chunk's room.
        unsafe { chunk.set_len(*received.as_ref().unwrap_or(&0) as usize) };
        buffer.extend_from_slice(&chunk);
        CHUNKS.with(|chunks| chunks.give_back(chunk));
        received.map(|count| count as usize)
    }

    /// Sends `bytes[from..]`, or its first part, within `limit`: how much, and the bytes
    /// back. `MSG_NOSIGNAL`: a peer that left gives `EPIPE`, not a `SIGPIPE`.
    pub async fn send<B: Deref<Target = [u8]> + 'static>(
        &self, bytes: B, from: usize, limit: Option<Duration>,
    ) -> (io::Result<usize>, B) {
        // SAFETY: the entry points into the bytes the operation owns (boxed: they stay put).
        let send = unsafe {
            submit((self.inner.clone(), bytes), limit, |(stream, bytes)| {
                io_uring_sqe::send(stream.as_raw_fd(), &bytes[from..], libc::MSG_NOSIGNAL)
            })
        };
        let (sent, (_, bytes)) = send.await;
        let timed_out = |error: io::Error| match error.raw_os_error() {
            Some(libc::ECANCELED) => io::ErrorKind::TimedOut.into(), // the limit passed
            _ => error,
        };
        (sent.map(|count| count as usize).map_err(timed_out), bytes)
    }

    pub async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let (mut buffer, mut sent) = (Buffer::new(), 0);
        buffer.extend_from_slice(bytes); // the copy the sends own, from the thread's pool
        while sent < buffer.len() {
            let count;
            (count, buffer) = self.send(buffer, sent, None).await;
            match count? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                count => sent += count, // a partial send is normal: go on
            }
        }
        Ok(())
    }
}
// ANCHOR_END: stream
