//! Lab 11's tests of your provided buffers and multishot receives: a buffer the kernel
//! picked comes to us once, and goes back to the kernel once, whoever takes it.
//!
//! - Taken (`BufferRing::take`), a buffer holds what the kernel wrote, and is given back
//!   exactly once: never kept (after `COUNT` receives the kernel would have none left, and
//!   end the receive with `ENOBUFS`), never given back twice (the kernel would pick it for
//!   two receives at once, and the second would write over the first).
//! - A multishot receive dropped with completions its task never took gives their buffers
//!   back: a client that leaves costs none of them.
//! - A dropped operation's completion goes to nobody: never to the operation that reuses
//!   its slot.
//!
//! Linux only: elsewhere there is no io_uring, and one test says so. Where io_uring is
//! turned off (a container may forbid it), the ring cannot be made, and the tests fail
//! with its error.
//!
//! Your program must provide these names, with these signatures (chapter 11's own):
//!
//! ```rust
//! // src/buffers.rs
//! pub const GROUP: u16
//! pub const COUNT: usize
//! pub struct BufferRing
//! impl BufferRing {
//!     pub fn new(ring: &Ring) -> io::Result<BufferRing>
//!     pub fn id(flags: u32) -> u16
//!     pub fn take(&mut self, id: u16, len: usize, to: impl FnOnce(&[u8]))
//!     pub fn give_back(&mut self, id: u16)
//! }
//! // src/ring.rs, as in chapter 10 but for these
//! pub const IORING_CQE_F_BUFFER: u32
//! pub const IORING_CQE_F_MORE: u32
//! impl io_uring_sqe {
//!     pub fn recv_multishot(fd: i32, group: u16) -> io_uring_sqe
//! }
//! // src/proactor.rs: chapter 10's, but for these
//! pub use crate::ring::io_uring_cqe as Completion;
//! pub unsafe fn submit<T: 'static>(owned: T, limit: Option<Duration>, entry: io_uring_sqe) -> Op<T>
//! impl<T: 'static> Op<T> {
//!     pub fn poll_next(&mut self, cx: &mut Context) -> Poll<Option<Completion>>
//! }
//! pub fn take_bytes(completion: Completion, to: &mut Buffer)
//! ```
//!
//! `Buffer` is `shared::buffer::Buffer`; `Ring::new`, `push`, `submit_and_wait` and `reap`
//! are chapter 10's.

#[cfg(not(target_os = "linux"))]
#[test]
fn the_buffer_tests_need_linux() {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: lab 11's tests of the buffers: no io_uring here");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::cell::Cell;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixDatagram;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    use nix::libc;
    use shared::buffer::Buffer;

    use crate::buffers::{BufferRing, COUNT, GROUP};
    use crate::proactor::{self, submit, take_bytes, Completion, Op};
    use crate::ring::{io_uring_sqe, Ring, IORING_CQE_F_BUFFER, IORING_CQE_F_MORE};

    /// What the peer sends as message `n`: distinct, so that a buffer written over shows.
    fn message(n: usize) -> Vec<u8> {
        format!("message {n} of the lab's test").into_bytes()
    }

    /// Arms a multishot receive of `socket`'s datagrams into the provided buffers.
    fn arm(ring: &mut Ring, socket: &UnixDatagram) {
        let entry = io_uring_sqe {
            user_data: 7,
            ..io_uring_sqe::recv_multishot(socket.as_raw_fd(), GROUP)
        };
        // SAFETY: a receive that selects a provided buffer points at no memory of its own;
        // the socket outlives the ring in the test.
        unsafe { ring.push(&[entry]) }.expect("push");
    }

    #[test]
    fn a_buffer_comes_to_us_once_and_goes_back_once() {
        let mut ring = Ring::new(8, 64).expect("io_uring (Ring::new), which these tests need");
        let mut buffers = BufferRing::new(&ring).expect("the buffers, registered");
        let (ours, peer) = UnixDatagram::pair().expect("a socket pair");
        arm(&mut ring, &ours);
        // Three times round every buffer, eight receives at a time held before any is
        // taken: a buffer never given back runs the kernel out, one given back twice is
        // picked for two of the eight.
        const AT_ONCE: usize = 8;
        let mut sent = 0;
        for _ in 0..3 * COUNT / AT_ONCE {
            for _ in 0..AT_ONCE {
                peer.send(&message(sent)).expect("send");
                sent += 1;
            }
            let mut held: Vec<(i32, u32)> = Vec::new();
            let started = Instant::now();
            while held.len() < AT_ONCE && started.elapsed() < Duration::from_secs(3) {
                ring.submit_and_wait(Some(Duration::from_millis(100))).expect("enter");
                ring.reap(|completion| held.push((completion.res, completion.flags)))
                    .expect("reap");
                if held.last().is_some_and(|(_, flags)| flags & IORING_CQE_F_MORE == 0) {
                    arm(&mut ring, &ours); // ended (the kernel may end one at any time): again
                }
            }
            for &(res, _) in &held {
                assert!(
                    res >= 0,
                    "a receive failed ({}{}) after {} messages",
                    res,
                    if res == -libc::ENOBUFS {
                        ", ENOBUFS: no buffer left: one was kept"
                    } else {
                        ""
                    },
                    sent - AT_ONCE
                );
            }
            assert_eq!(held.len(), AT_ONCE, "every message came, in a buffer");
            let ids: Vec<u16> = held.iter().map(|&(_, flags)| BufferRing::id(flags)).collect();
            let mut distinct = ids.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(
                distinct.len(),
                ids.len(),
                "one buffer for two receives: given back twice: {ids:?}"
            );
            for (index, &(res, flags)) in held.iter().enumerate() {
                assert!(
                    flags & IORING_CQE_F_BUFFER != 0,
                    "a receive into a provided buffer names it"
                );
                let expected = message(sent - AT_ONCE + index);
                buffers.take(BufferRing::id(flags), res as usize, |bytes| {
                    assert_eq!(bytes, expected, "what the kernel wrote, as it wrote it");
                });
            }
        }
    }

    /// Turns the ring until `op` has its next completion, for at most 3 s.
    fn next<T>(op: &mut Op<T>) -> Option<Completion> {
        let mut context = Context::from_waker(Waker::noop());
        let started = Instant::now();
        loop {
            if let Poll::Ready(next) = op.poll_next(&mut context) {
                return next;
            }
            assert!(started.elapsed() < Duration::from_secs(3), "no completion in 3 s");
            proactor::turn(Some(Duration::from_millis(50))).expect("a turn");
        }
    }

    /// A multishot receive of `socket`, owning `owned`.
    fn receive<T: 'static>(socket: &UnixDatagram, owned: T) -> Op<T> {
        // SAFETY: a receive into provided buffers points at no memory of the operation's.
        unsafe { submit(owned, None, io_uring_sqe::recv_multishot(socket.as_raw_fd(), GROUP)) }
    }

    /// The bytes of completions, taken, until one ends with `last`: none may fail.
    fn receive_until(op: &mut Op<()>, last: &[u8]) -> Vec<u8> {
        let mut received = Buffer::new();
        while !received.ends_with(last) {
            let completion = next(op).expect("the receive goes on");
            assert!(completion.res >= 0, "a receive failed ({}): out of buffers?", completion.res);
            take_bytes(completion, &mut received);
        }
        received.to_vec()
    }

    #[test]
    fn a_receive_dropped_with_untaken_buffers_gives_them_back() {
        proactor::start(64).expect("io_uring (proactor::start), which these tests need");
        let (ours, peer) = UnixDatagram::pair().expect("a socket pair");
        // Twice as many receives as there are buffers, each dropped (its client left)
        // with a datagram in a buffer its task never took.
        for n in 0..2 * COUNT {
            peer.send(&message(n)).expect("send");
            let op = receive(&ours, ());
            proactor::turn(Some(Duration::ZERO)).expect("a turn"); // the datagram, in a buffer
            drop(op); // never polled: its completion, and its buffer, untaken
        }
        let mut last = receive(&ours, ());
        peer.send(b"the last").expect("send");
        let received = receive_until(&mut last, b"the last");
        assert!(received.ends_with(b"the last"), "a buffer for it: none was lost");
    }

    /// Memory an operation owns, which says when it is freed.
    struct Tracked(Rc<Cell<bool>>);

    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    #[test]
    fn a_dropped_operations_completion_goes_to_nobody_else() {
        proactor::start(64).expect("io_uring (proactor::start), which these tests need");
        let (first, _first_peer) = UnixDatagram::pair().expect("a socket pair");
        let (second, second_peer) = UnixDatagram::pair().expect("a socket pair");
        let freed = Rc::new(Cell::new(false));
        let dropped = receive(&first, Tracked(freed.clone()));
        proactor::turn(Some(Duration::ZERO)).expect("a turn"); // in the kernel now
        drop(dropped); // its completion, -ECANCELED, is on its way
        assert!(!freed.get(), "not yet: the kernel has not said it is done");
        let mut next_one = receive(&second, ());
        let started = Instant::now();
        while !freed.get() && started.elapsed() < Duration::from_secs(3) {
            proactor::turn(Some(Duration::from_millis(50))).expect("a turn");
        }
        assert!(freed.get(), "the dropped receive completed, and its memory was freed");
        second_peer.send(b"mine").expect("send");
        assert_eq!(receive_until(&mut next_one, b"mine"), b"mine", "its own, not -ECANCELED");
    }
}
