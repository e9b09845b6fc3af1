//! Lab 10's tests of your ring and proactor: who owns the memory an operation hands the
//! kernel, and what becomes of an operation whose future is dropped. They count when that
//! memory is freed (a `Tracked` value notes its own drop), with sockets of their own.
//!
//! - An operation owns its memory (its buffer, its socket) until its completion, and its
//!   future gives it back with the result.
//! - Dropped before its completion (its task timed out, its client left), it asks the
//!   kernel to cancel, and keeps the memory until the cancelled completion comes back: the
//!   kernel may write into it until then. That completion goes to nobody: never to the
//!   operation that came after it.
//! - An operation given a time limit is cancelled when it passes (`-ECANCELED`).
//! - The doorbell ends a wait from another thread; `finish` ends the ring once what its
//!   operations held is closed.
//!
//! Linux only: elsewhere there is no io_uring, and one test says so. Where io_uring is
//! turned off (a container may forbid it), `start` fails, and so do the tests, with its
//! error.
//!
//! Your program must provide these names, with these signatures (chapter 10's own):
//!
//! ```rust
//! // src/proactor.rs
//! pub fn start(completions: u32) -> io::Result<()>
//! pub fn turn(timeout: Option<Duration>) -> io::Result<()>
//! pub fn finish(bound: Duration)
//! pub fn doorbell() -> Arc<SelfPipe>
//! pub struct Op<T: 'static>
//! pub unsafe fn submit<T: 'static>(owned: T, limit: Option<Duration>, build: impl FnOnce(&mut T) -> io_uring_sqe) -> Op<T>
//! impl<T: 'static> Future for Op<T> {
//!     type Output = (io::Result<u32>, T);
//! }
//! // src/ring.rs
//! pub struct io_uring_sqe
//! impl io_uring_sqe {
//!     pub fn recv(fd: i32, room: &mut [MaybeUninit<u8>], flags: i32) -> io_uring_sqe
//!     pub fn accept(fd: i32, flags: i32) -> io_uring_sqe
//! }
//! ```
//!
//! `SelfPipe` is `shared::self_pipe::SelfPipe`, as in chapters 6 to 9.

#[cfg(not(target_os = "linux"))]
#[test]
fn the_ring_tests_need_linux() {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: lab 10's tests of the ring: no io_uring here");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::cell::Cell;
    use std::future::Future;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::pin::pin;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    use nix::libc;

    use crate::proactor::{doorbell, finish, start, submit, turn, Op};
    use crate::ring::io_uring_sqe;

    /// Memory an operation owns, which says when it is freed.
    struct Tracked(Rc<Cell<bool>>, Vec<u8>);

    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    fn start_the_ring() {
        start(64).expect("io_uring (proactor::start), which these tests need");
    }

    /// Turns until `done`, for at most 3 s.
    fn turn_until(done: impl Fn() -> bool) {
        let started = Instant::now();
        while !done() && started.elapsed() < Duration::from_secs(3) {
            turn(Some(Duration::from_millis(50))).expect("a turn");
        }
    }

    /// Polls `op` (turning the ring between polls) until it is ready, for at most 3 s.
    fn outcome<T: 'static>(op: Op<T>) -> (io::Result<u32>, T) {
        let mut op = pin!(op);
        let mut context = Context::from_waker(Waker::noop());
        let started = Instant::now();
        loop {
            if let Poll::Ready(outcome) = op.as_mut().poll(&mut context) {
                return outcome;
            }
            assert!(started.elapsed() < Duration::from_secs(3), "no completion in 3 s");
            turn(Some(Duration::from_millis(50))).expect("a turn");
        }
    }

    /// A receive of up to 64 bytes, into a buffer it owns.
    fn receive(socket: &Rc<UnixStream>, freed: &Rc<Cell<bool>>) -> Op<(Rc<UnixStream>, Tracked)> {
        let owned = (socket.clone(), Tracked(freed.clone(), Vec::with_capacity(64)));
        // SAFETY: the entry points into the buffer the operation owns.
        unsafe {
            submit(owned, None, |(socket, tracked)| {
                io_uring_sqe::recv(socket.as_raw_fd(), tracked.1.spare_capacity_mut(), 0)
            })
        }
    }

    /// What a receive brought: its bytes, or its error.
    fn received(outcome: (io::Result<u32>, (Rc<UnixStream>, Tracked))) -> io::Result<Vec<u8>> {
        let (result, (_, mut tracked)) = outcome;
        let count = result? as usize;
        assert!(count <= tracked.1.capacity(), "no more than the room it gave");
        // SAFETY: the kernel wrote `count` bytes at the start of the buffer's room.
        unsafe { tracked.1.set_len(count) };
        Ok(std::mem::take(&mut tracked.1))
    }

    #[test]
    fn a_completed_operation_gives_back_its_memory_with_the_result() {
        start_the_ring();
        let (ours, peer) = UnixStream::pair().expect("a socket pair");
        let (ours, freed) = (Rc::new(ours), Rc::new(Cell::new(false)));
        std::io::Write::write_all(&mut &peer, b"hello").expect("write");
        let outcome = outcome(receive(&ours, &freed));
        assert!(!freed.get(), "given back, not freed");
        assert_eq!(received(outcome).expect("received"), b"hello");
        assert!(freed.get(), "and freed once the test let it go");
    }

    #[test]
    fn a_dropped_operation_keeps_its_memory_until_its_completion() {
        start_the_ring();
        let (ours, _peer) = UnixStream::pair().expect("a socket pair");
        let (ours, freed) = (Rc::new(ours), Rc::new(Cell::new(false)));
        let op = receive(&ours, &freed);
        turn(Some(Duration::ZERO)).expect("a turn"); // in the kernel now
        drop(op); // its task left, say
        assert!(!freed.get(), "not yet: the kernel may still write into the buffer");
        turn_until(|| freed.get());
        assert!(freed.get(), "freed once the cancelled receive completed");
    }

    #[test]
    fn a_dropped_operations_completion_goes_to_nobody_else() {
        start_the_ring();
        let (first, _first_peer) = UnixStream::pair().expect("a socket pair");
        let (second, second_peer) = UnixStream::pair().expect("a socket pair");
        let (first, first_freed) = (Rc::new(first), Rc::new(Cell::new(false)));
        let (second, second_freed) = (Rc::new(second), Rc::new(Cell::new(false)));
        let dropped = receive(&first, &first_freed);
        turn(Some(Duration::ZERO)).expect("a turn");
        drop(dropped); // its completion, -ECANCELED, is on its way
        let next = receive(&second, &second_freed);
        turn_until(|| first_freed.get()); // the cancelled one's completion has come
        assert!(first_freed.get(), "the dropped receive completed, and its memory was freed");
        std::io::Write::write_all(&mut &second_peer, b"mine").expect("write");
        let bytes = received(outcome(next)).expect("the next receive's own result, not -ECANCELED");
        assert_eq!(bytes, b"mine");
    }

    #[test]
    fn an_operation_past_its_limit_is_cancelled() {
        start_the_ring();
        let (ours, _peer) = UnixStream::pair().expect("a socket pair");
        let freed = Rc::new(Cell::new(false));
        let owned = (Rc::new(ours), Tracked(freed.clone(), Vec::with_capacity(64)));
        let started = Instant::now();
        // SAFETY: the entry points into the buffer the operation owns.
        let op = unsafe {
            submit(owned, Some(Duration::from_millis(100)), |(socket, tracked)| {
                io_uring_sqe::recv(socket.as_raw_fd(), tracked.1.spare_capacity_mut(), 0)
            })
        };
        let error = received(outcome(op)).expect_err("cancelled: nothing came");
        assert_eq!(error.raw_os_error(), Some(libc::ECANCELED), "{error}");
        assert!(started.elapsed() >= Duration::from_millis(90), "not before its limit");
        assert!(freed.get(), "its memory came back with it, and is freed");
    }

    #[test]
    fn the_doorbell_ends_a_wait_from_another_thread() {
        start_the_ring();
        let doorbell = doorbell();
        let ringer = std::thread::spawn(move || {
            // Long enough for the loop to be asleep in its wait; were it not, the turn would
            // see the doorbell at once, and pass anyway.
            std::thread::sleep(Duration::from_millis(100));
            doorbell.wake();
        });
        let started = Instant::now();
        turn(Some(Duration::from_secs(5))).expect("a turn");
        ringer.join().expect("the other thread");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "woken at once: {took:?}");
    }

    #[test]
    fn a_ring_that_ends_closes_what_its_operations_held() {
        // A listener's accept is still in the ring as its loop ends. Unless the ring takes
        // its cancel before it goes, the accept holds the listener open, and the kernel
        // goes on queueing clients that nobody will answer.
        use std::net::{TcpListener, TcpStream};
        start_the_ring();
        let listener = Rc::new(TcpListener::bind("127.0.0.1:0").expect("a listener"));
        let address = listener.local_addr().expect("its address");
        // SAFETY: an accept that asks for no address points at no memory.
        let accept = unsafe {
            submit(listener, None, |listener| io_uring_sqe::accept(listener.as_raw_fd(), 0))
        };
        turn(Some(Duration::ZERO)).expect("a turn"); // the accept is in the kernel now
        drop(accept); // the loop ends: its tasks go, and this asks to be cancelled
        finish(Duration::from_secs(3));
        let refused = TcpStream::connect(address).expect_err("the listener is closed");
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
    }
}
