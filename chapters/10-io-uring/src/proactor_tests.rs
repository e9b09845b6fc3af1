//! Operations own their memory: the kernel may write into it until the completion comes
//! back, whatever became of the future that asked. These tests count when that memory is
//! freed (a `Tracked` value notes its own drop), with sockets nobody writes to.

use std::cell::Cell;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::Instant;

use super::*;

/// Memory an operation owns, which says when it is freed.
struct Tracked(Rc<Cell<bool>>, Vec<u8>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

fn in_flight() -> usize {
    with(|proactor| proactor.slots.len())
}

/// Turns until `done`, for at most 3 s.
fn turn_until(done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() && started.elapsed() < Duration::from_secs(3) {
        turn(Some(Duration::from_millis(100))).expect("turn");
    }
}

/// A receive on a socket nobody writes to: it would wait forever.
fn receive(socket: &Rc<UnixStream>, freed: &Rc<Cell<bool>>) -> Op<(Rc<UnixStream>, Tracked)> {
    let owned = (socket.clone(), Tracked(freed.clone(), Vec::with_capacity(64)));
    // SAFETY: the entry points into the buffer the operation owns.
    unsafe {
        submit(owned, None, |(socket, tracked)| {
            io_uring_sqe::recv(socket.as_raw_fd(), tracked.1.spare_capacity_mut(), 0)
        })
    }
}

#[test]
fn a_dropped_operation_keeps_its_memory_until_the_kernel_gives_it_back() {
    start(64).expect("io_uring");
    let (ours, _peer) = UnixStream::pair().expect("socketpair");
    let (ours, freed) = (Rc::new(ours), Rc::new(Cell::new(false)));
    drop(receive(&ours, &freed)); // its task left, say
    assert!(!freed.get(), "not yet: the kernel may still write into the buffer");
    assert_eq!(in_flight(), 1, "the receive (the cancel that asks it to stop has no slot)");
    turn_until(|| freed.get());
    assert!(freed.get(), "freed once the cancelled receive completed");
    assert_eq!(in_flight(), 0, "nothing left behind");
}

#[test]
fn a_completed_operation_returns_its_memory_with_the_result() {
    start(64).expect("io_uring");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    let (ours, freed) = (Rc::new(ours), Rc::new(Cell::new(false)));
    std::io::Write::write_all(&mut &peer, b"hello").expect("write");
    let mut op = std::pin::pin!(receive(&ours, &freed));
    let waker = Waker::noop();
    let mut context = Context::from_waker(waker);
    assert!(op.as_mut().poll(&mut context).is_pending(), "in the ring, until a turn");
    turn_until(|| {
        with(|proactor| proactor.slots.values().any(|slot| matches!(slot.state, State::Done(_))))
    });
    let Poll::Ready((received, (_, mut tracked))) = op.as_mut().poll(&mut context) else {
        panic!("completed, after a turn")
    };
    let count = received.expect("received") as usize;
    // SAFETY: the kernel wrote `count` bytes at the start of the buffer's room.
    unsafe { tracked.1.set_len(count) };
    assert_eq!(tracked.1, b"hello");
    assert!(!freed.get(), "given back, not freed");
    assert_eq!(in_flight(), 0);
}

#[test]
fn the_doorbell_ends_a_wait_from_another_thread() {
    start(64).expect("io_uring");
    let doorbell = doorbell();
    let ringer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        doorbell.wake();
    });
    let started = Instant::now();
    turn(Some(Duration::from_secs(5))).expect("turn");
    ringer.join().expect("the other thread");
    assert!(started.elapsed() < Duration::from_secs(2), "woken at once: {:?}", started.elapsed());
}

#[test]
fn an_operation_past_its_limit_is_cancelled_by_its_linked_timer() {
    start(64).expect("io_uring");
    let (ours, _peer) = UnixStream::pair().expect("socketpair");
    let (ours, freed) = (Rc::new(ours), Rc::new(Cell::new(false)));
    let owned = (ours.clone(), Tracked(freed.clone(), Vec::with_capacity(64)));
    let started = Instant::now();
    // SAFETY: the entry points into the buffer the operation owns.
    let op = unsafe {
        submit(owned, Some(Duration::from_millis(100)), |(socket, tracked)| {
            io_uring_sqe::recv(socket.as_raw_fd(), tracked.1.spare_capacity_mut(), 0)
        })
    };
    let mut op = std::pin::pin!(op);
    let mut context = Context::from_waker(Waker::noop());
    let mut result = None;
    while result.is_none() && started.elapsed() < Duration::from_secs(3) {
        if let Poll::Ready((received, _)) = op.as_mut().poll(&mut context) {
            result = Some(received);
        } else {
            turn(Some(Duration::from_millis(50))).expect("turn");
        }
    }
    let error = result.expect("completed").expect_err("cancelled, nothing came");
    assert_eq!(error.raw_os_error(), Some(libc::ECANCELED));
    assert!(started.elapsed() >= Duration::from_millis(90), "not before its limit");
    turn_until(|| in_flight() == 0);
    assert_eq!(in_flight(), 0, "the timer's slot, freed at its own completion");
}

#[test]
fn a_descriptor_made_for_a_task_that_left_is_closed() {
    // An accept (or an open) that completes as its future is dropped has made a descriptor
    // nobody will take: the proactor must close it, or a client that leaves at the right
    // moment leaks one each time.
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    start(64).expect("io_uring");
    let listener = Rc::new(TcpListener::bind("127.0.0.1:0").expect("listener"));
    let address = listener.local_addr().expect("address");
    // SAFETY: an accept that asks for no address points at no memory.
    let accept = unsafe {
        submit(listener.clone(), None, |listener| io_uring_sqe::accept(listener.as_raw_fd(), 0))
    };
    let mut client = TcpStream::connect(address).expect("connect");
    turn_until(|| {
        with(|proactor| proactor.slots.values().any(|slot| matches!(slot.state, State::Done(_))))
    });
    drop(accept); // done, but never polled: its task left
    assert_eq!(in_flight(), 0, "its slot is freed, and the descriptor closed");
    client.set_read_timeout(Some(Duration::from_secs(3))).expect("timeout");
    assert_eq!(client.read(&mut [0u8; 8]).expect("end of file, not a timeout"), 0);
}

#[test]
fn a_loop_that_ends_closes_what_its_operations_held() {
    // A listener's task is dropped as its loop ends, its accept still in the ring. Unless
    // the ring takes the cancel before it goes, the accept holds the listener open, and the
    // kernel goes on queueing clients on it that nobody will answer.
    use std::net::{TcpListener, TcpStream};
    start(64).expect("io_uring");
    let listener = Rc::new(TcpListener::bind("127.0.0.1:0").expect("listener"));
    let address = listener.local_addr().expect("address");
    // SAFETY: an accept that asks for no address points at no memory.
    let accept =
        unsafe { submit(listener, None, |listener| io_uring_sqe::accept(listener.as_raw_fd(), 0)) };
    turn(Some(Duration::ZERO)).expect("turn"); // the accept is in the kernel now
    drop(accept); // the loop ends: its tasks go, and this asks to be cancelled
    finish(Duration::from_secs(3));
    let refused = TcpStream::connect(address).expect_err("the listener is closed");
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(PROACTOR.with(|cell| cell.borrow().is_none()), "the ring is gone");
}

/// `Op` is not `Send`: its slot is in one thread's ring. (The same trick as the
/// static_assertions crate: were `Op` `Send`, both impls would apply and the call below
/// would be ambiguous, and would not compile.)
#[test]
fn an_operation_stays_on_its_thread() {
    trait AmbiguousIfSend<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSend<()> for T {}
    impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}
    <Op<()> as AmbiguousIfSend<_>>::check();
}

/// Lab 10's tests of the ring and proactor, which the lab command gives lab 10: the chapter
/// is held to them too, so that they ask only for what its own code does.
#[path = "proactor_api_tests.rs"]
mod lab_api;
