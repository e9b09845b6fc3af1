//! Sockets whose calls are operations in the ring: chapter 9's `Async<T>`, completed.
//!
//! Chapter 9 tried each call and, at `EAGAIN`, waited for readiness. Here a receive, a
//! send, an accept is an operation the kernel carries out, and the task waits for its
//! completion (`proactor.rs`). The socket is shared (`Rc`) with every operation using it:
//! closed under a waiting entry, its number could go to the next client, and the entry act
//! on that client's socket.
//!
//! New in chapter 11: one multishot receive per connection, into a provided buffer
//! (`buffers.rs`) only when bytes arrive, with no poll first; and sends that try first.

use std::cell::Cell;
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, FromRawFd};
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use nix::libc::{self, POLLIN, POLLOUT};
use nix::sys::socket::{self, MsgFlags};

use shared::buffer::Buffer;
use shared::linux;
use shared::upstream;

use crate::buffers::GROUP;
use crate::proactor::{self, submit, Completion, Op};
use crate::ring::{io_uring_sqe, IORING_CQE_F_BUFFER};

// ANCHOR: async
/// A descriptor that operations in the ring may use, shared with them.
pub struct Async<T: AsFd + 'static> {
    inner: Rc<T>,
    receiving: Cell<Option<Op<Rc<T>>>>, // new: a stream's multishot receive, armed by `read_to`
}

impl<T: AsFd + 'static> Async<T> {
    pub fn new(inner: T) -> Async<T> {
        Async { inner: Rc::new(inner), receiving: Cell::new(None) }
    }

    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The descriptor, for an operation to keep open (a splice to a socket).
    pub fn shared(&self) -> Rc<T> {
        self.inner.clone()
    }

    /// Waits until the descriptor is ready for `events`: readiness, as an operation.
    /// Past `limit` (if any), `TimedOut`.
    pub async fn ready(&self, events: i16, limit: Option<Duration>) -> io::Result<()> {
        let poll = io_uring_sqe::poll_add(self.inner.as_fd().as_raw_fd(), events);
        // SAFETY: a poll points at no memory; the operation keeps the descriptor open.
        unsafe { submit(self.inner.clone(), limit, poll) }.await.0.map(drop).map_err(timed_out)
    }

    /// For a call with no operation of its own (emptying a pipe, a receive with no buffer
    /// left): tried until it does not say `EAGAIN`, waiting for readability between tries.
    pub async fn read_with<R>(&self, mut call: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        loop {
            match call(&self.inner) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.ready(POLLIN, None).await?
                }
                result => return result,
            }
        }
    }
}
// ANCHOR_END: async

// ANCHOR: stream
// ANCHOR: accepts
impl Async<TcpListener> {
    /// New: a multishot accept, one entry for client after client (see [`accepted`]).
    pub fn accepts(&self) -> Op<Rc<TcpListener>> {
        // Non-blocking (new): a splice to it says `EAGAIN`, not wait on a worker.
        let flags = linux::SOCK_CLOEXEC | linux::SOCK_NONBLOCK;
        let accept = io_uring_sqe::multishot_accept(self.inner.as_raw_fd(), flags);
        // SAFETY: no address is asked for (null pointers); the op keeps the listener open.
        unsafe { submit(self.inner.clone(), None, accept) }
    }
}

/// The client an accept's completion brings: the kernel made its socket.
pub fn accepted(completion: Completion) -> io::Result<TcpStream> {
    match completion.res {
        res if res < 0 => Err(io::Error::from_raw_os_error(-res)),
        // SAFETY: a descriptor the kernel has just made, for us alone.
        socket => Ok(unsafe { TcpStream::from_raw_fd(socket) }),
    }
}
// ANCHOR_END: accepts

impl Async<TcpStream> {
    /// Connects without blocking: the socket becomes writable when the handshake is over,
    /// and `SO_ERROR` says how it went.
    pub async fn connect(address: SocketAddr) -> io::Result<Async<TcpStream>> {
        let stream = Async::new(upstream::start_connecting(address)?);
        stream.ready(POLLOUT, None).await?;
        match stream.get_ref().take_error()? {
            None => Ok(stream),
            Some(error) => Err(error),
        }
    }

    // ANCHOR: receive
    /// Receives what has arrived onto the end of `buffer`; 0 means the peer has closed.
    /// Dropped before it is ready, it loses nothing: what comes waits in the receive's slot.
    pub async fn read_to(&self, buffer: &mut Buffer) -> io::Result<usize> {
        loop {
            let completion = poll_fn(|cx| loop {
                let mut receiving = self.receiving.take().unwrap_or_else(|| self.arm_receive());
                let next = receiving.poll_next(cx);
                self.receiving.set(Some(receiving));
                match next {
                    Poll::Ready(None) => self.receiving.set(None), // it ended: armed again
                    next => return next.map(|completion| completion.expect("not ended")),
                }
            })
            .await;
            if completion.flags & IORING_CQE_F_BUFFER != 0 {
                proactor::take_bytes(completion, buffer);
            }
            return match completion.res {
                // No buffer left: a plain `recv` (arming again at once would spin the loop).
                res if res == -libc::ENOBUFS => self.receive_without_a_buffer(buffer).await,
                // Stopped (`stop_receiving`, or too many buffers untaken): wanted again now.
                res if res == -libc::ECANCELED => continue,
                res if res < 0 => Err(io::Error::from_raw_os_error(-res)),
                count => Ok(count as usize),
            };
        }
    }

    /// A plain `recv(2)`, as chapter 9 did: tried, and at `EAGAIN` waited for with a poll.
    async fn receive_without_a_buffer(&self, buffer: &mut Buffer) -> io::Result<usize> {
        self.read_with(|socket| {
            let mut bytes = [0; crate::buffers::SIZE]; // on the stack, not in the task
            let count = socket::recv(socket.as_raw_fd(), &mut bytes, MsgFlags::MSG_DONTWAIT)?;
            buffer.extend_from_slice(&bytes[..count]);
            Ok(count)
        })
        .await
    }

    /// A multishot receive (`IORING_RECV_MULTISHOT`) into buffers the kernel picks for it.
    fn arm_receive(&self) -> Op<Rc<TcpStream>> {
        let receive = io_uring_sqe::recv_multishot(self.inner.as_raw_fd(), GROUP);
        // SAFETY: the entry points at no memory of ours: the kernel picks a provided buffer.
        unsafe { submit(self.inner.clone(), None, receive) }
    }

    /// Receives no more for now (too much is queued): the bytes wait in the socket, pushing
    /// back. What came before the cancel landed still comes to `read_to`.
    pub fn stop_receiving(&self) {
        let receiving = self.receiving.take();
        receiving.iter().for_each(Op::cancel);
        self.receiving.set(receiving);
    }
    // ANCHOR_END: receive

    /// Waits until the peer has left with a reset (or the socket failed): how a task that
    /// reads no more still learns that its client is gone. A poll for no event: errors and
    /// hang-ups are reported whatever was asked. A half-close (end-of-file) is no leaving.
    pub async fn departed(&self) -> io::Error {
        if let Err(error) = self.ready(0, None).await {
            return error;
        }
        match self.inner.take_error() {
            Ok(Some(error)) | Err(error) => error,
            Ok(None) => std::future::pending().await, // half-closed: wait on
        }
    }

    // ANCHOR: send
    /// Sends `bytes[from..]`, or its first part, within `limit`: how much, and the bytes
    /// back. `MSG_NOSIGNAL`: a peer that left gives `EPIPE`, not a `SIGPIPE`.
    /// New: first with `MSG_DONTWAIT`, no timer; only a send to a full socket waits, timed.
    pub async fn send<B: Deref<Target = [u8]> + 'static>(
        &self, bytes: B, from: usize, limit: Option<Duration>,
    ) -> (io::Result<usize>, B) {
        match self.send_once(bytes, from, None, libc::MSG_DONTWAIT).await {
            (Err(error), bytes) if error.kind() == io::ErrorKind::WouldBlock => {
                self.send_once(bytes, from, limit, 0).await
            }
            sent => sent,
        }
    }

    async fn send_once<B: Deref<Target = [u8]> + 'static>(
        &self, bytes: B, from: usize, limit: Option<Duration>, flags: i32,
    ) -> (io::Result<usize>, B) {
        let send =
            io_uring_sqe::send(self.inner.as_raw_fd(), &bytes[from..], libc::MSG_NOSIGNAL | flags);
        // SAFETY: the entry points into the bytes' heap block, which the operation owns.
        let (sent, (_, bytes)) = unsafe { submit((self.inner.clone(), bytes), limit, send) }.await;
        (sent.map(|count| count as usize).map_err(timed_out), bytes)
    }
    // ANCHOR_END: send

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

/// An operation cancelled by its time limit says `ECANCELED`: to the caller, `TimedOut`.
fn timed_out(error: io::Error) -> io::Error {
    match error.raw_os_error() {
        Some(libc::ECANCELED) => io::ErrorKind::TimedOut.into(),
        _ => error,
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")] // they need io_uring
#[path = "net_tests.rs"]
mod tests;
