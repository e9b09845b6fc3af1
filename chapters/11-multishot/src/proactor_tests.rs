//! Operations own their memory: the kernel may write into it until the completion comes
//! back, whatever became of the future that asked. These tests count when that memory is
//! freed (a `Tracked` value notes its own drop), with sockets nobody writes to.

use std::cell::Cell;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::Instant;

use super::*;
use crate::ring::{prep_rw, IORING_OP_ACCEPT, IORING_OP_RECV};

/// Memory an operation owns, which says when it is freed.
struct Tracked(Rc<Cell<bool>>, Vec<u8>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// Operations the kernel is not done with, or whose completions wait to be taken.
fn in_flight() -> usize {
    with(|proactor| proactor.slots.len() - proactor.free.len())
}

/// Has some operation a completion waiting to be taken?
fn completed() -> bool {
    with(|proactor| proactor.slots.iter().any(|slot| !slot.completions.is_empty()))
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
    let mut tracked = Tracked(freed.clone(), Vec::with_capacity(64));
    let room = tracked.1.spare_capacity_mut().as_mut_ptr() as u64;
    let entry = prep_rw(IORING_OP_RECV, socket.as_raw_fd(), room, 64, 0, 0);
    // SAFETY: the entry points into the buffer's heap block, which the operation owns.
    unsafe { submit((socket.clone(), tracked), None, entry) }
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
    turn_until(completed);
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
    let mut tracked = Tracked(freed.clone(), Vec::with_capacity(64));
    let room = tracked.1.spare_capacity_mut().as_mut_ptr() as u64;
    let entry = prep_rw(IORING_OP_RECV, ours.as_raw_fd(), room, 64, 0, 0);
    let started = Instant::now();
    // SAFETY: the entry points into the buffer's heap block, which the operation owns.
    let op = unsafe { submit((ours.clone(), tracked), Some(Duration::from_millis(100)), entry) };
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
    let accept = prep_rw(IORING_OP_ACCEPT, listener.as_raw_fd(), 0, 0, 0, 0);
    let accept = unsafe { submit(listener.clone(), None, accept) };
    let mut client = TcpStream::connect(address).expect("connect");
    turn_until(completed);
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
    let accept = prep_rw(IORING_OP_ACCEPT, listener.as_raw_fd(), 0, 0, 0, 0);
    let accept = unsafe { submit(listener, None, accept) };
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

// New in chapter 11: entries that complete many times, buffers the kernel picks, the slab.

/// A multishot receive into the loop's provided buffers, as `net.rs` arms one.
fn multishot_receive(socket: &Rc<UnixStream>) -> Op<Rc<UnixStream>> {
    let receive = io_uring_sqe::recv_multishot(socket.as_raw_fd(), crate::buffers::GROUP);
    // SAFETY: the entry points at no memory of ours: the kernel picks a provided buffer.
    unsafe { submit(socket.clone(), None, receive) }
}

/// The next completion of `op`, turning the ring until it comes (at most 3 s); `None`
/// once the operation has ended.
fn next<T>(op: &mut Op<T>) -> Option<Completion> {
    let mut context = Context::from_waker(Waker::noop());
    let started = Instant::now();
    loop {
        if let Poll::Ready(next) = op.poll_next(&mut context) {
            return next;
        }
        assert!(started.elapsed() < Duration::from_secs(3), "no completion in 3 s");
        turn(Some(Duration::from_millis(100))).expect("turn");
    }
}

/// How far the kernel has been handed buffers (the ring's tail, ours to move).
fn handed_over() -> u16 {
    with(|proactor| proactor.buffers.tail())
}

#[test]
fn a_multishot_receive_completes_once_for_each_arrival() {
    start(64).expect("io_uring");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    let ours = Rc::new(ours);
    let mut receive = multishot_receive(&ours);
    let mut received = Buffer::new();
    for word in ["one", "two", "three"] {
        std::io::Write::write_all(&mut &peer, word.as_bytes()).expect("write");
        let completion = next(&mut receive).expect("a completion");
        assert_eq!(completion.res, word.len() as i32);
        assert!(completion.flags & IORING_CQE_F_MORE != 0, "still armed, for the next");
        take_bytes(completion, &mut received);
    }
    assert_eq!(&received[..], b"onetwothree");
    assert_eq!(in_flight(), 1, "one entry served them all");
    drop(peer); // end of file: the last completion, which says no more
    let end = next(&mut receive).expect("the end");
    assert_eq!((end.res, end.flags & IORING_CQE_F_MORE), (0, 0));
    assert!(next(&mut receive).is_none(), "ended");
    assert_eq!(in_flight(), 0, "its slot is free");
}

#[test]
fn with_no_buffer_left_a_receive_ends_and_armed_again_finds_the_bytes_waiting() {
    use crate::buffers::COUNT;
    start(64).expect("io_uring");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    let ours = Rc::new(ours);
    let mut receive = multishot_receive(&ours);
    // Every buffer taken and held (never copied out): one arrival each.
    let held: Vec<Completion> = (0..COUNT)
        .map(|_| {
            std::io::Write::write_all(&mut &peer, b"x").expect("write");
            next(&mut receive).expect("a completion")
        })
        .collect();
    std::io::Write::write_all(&mut &peer, b"y").expect("write");
    let starved = next(&mut receive).expect("a completion");
    assert_eq!(starved.res, -libc::ENOBUFS, "no buffer left");
    assert_eq!(starved.flags & IORING_CQE_F_MORE, 0, "which ends the multishot");
    assert!(next(&mut receive).is_none());
    // The buffers go back (once each); armed again, it finds the byte that waited.
    let before = handed_over();
    held.into_iter().for_each(|completion| take_bytes(completion, &mut Buffer::new()));
    assert_eq!(handed_over().wrapping_sub(before) as usize, COUNT, "each given back once");
    let mut again = multishot_receive(&ours);
    let mut received = Buffer::new();
    take_bytes(next(&mut again).expect("the waiting byte"), &mut received);
    assert_eq!(&received[..], b"y");
}

#[test]
fn a_dropped_receive_gives_back_the_buffers_of_what_it_did_not_take() {
    start(64).expect("io_uring");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    let ours = Rc::new(ours);
    let mut receive = multishot_receive(&ours);
    std::io::Write::write_all(&mut &peer, b"first").expect("write");
    turn_until(completed);
    let before = handed_over();
    drop(receive); // its task left, one completion untaken
    assert_eq!(handed_over().wrapping_sub(before), 1, "its buffer went back, once");
    turn_until(|| in_flight() == 0);
    assert_eq!(in_flight(), 0, "cancelled, and its slot freed");
    receive = multishot_receive(&ours); // nothing it had taken arrives twice
    std::io::Write::write_all(&mut &peer, b"second").expect("write");
    let mut received = Buffer::new();
    take_bytes(next(&mut receive).expect("a completion"), &mut received);
    assert_eq!(&received[..], b"second");
}

#[test]
fn slots_are_reused_and_a_late_completion_reaches_no_later_operation() {
    const IORING_OP_NOP: u8 = 0;
    start(64).expect("io_uring");
    // SAFETY: a no-op points at no memory.
    let nop = || unsafe { submit((), None, prep_rw(IORING_OP_NOP, -1, 0, 0, 0, 0)) };
    let mut first = nop();
    let first_user_data = first.user_data.expect("in flight");
    assert!(next(&mut first).is_some());
    for _ in 0..100 {
        let mut op = nop();
        assert_eq!(op.user_data.map(|user_data| user_data.index), Some(first_user_data.index));
        assert!(next(&mut op).is_some());
    }
    assert_eq!(with(|proactor| proactor.slots.len()), 1, "one slot, used 101 times");
    let generation = with(|proactor| proactor.slots[0].user_data.generation);
    assert_ne!(generation, first_user_data.generation, "an old use names nothing");
}

#[test]
fn a_receive_whose_task_does_not_read_holds_a_few_buffers_at_most() {
    // A task waiting for a send does not read; its client may go on sending. Each arrival
    // would hold one of the loop's buffers until the task reads again: past a few, the
    // receive is stopped, and the rest waits in the socket.
    start(64).expect("io_uring");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    let ours = Rc::new(ours);
    let mut receive = multishot_receive(&ours);
    for _ in 0..20 {
        std::io::Write::write_all(&mut &peer, b"x").expect("write");
        turn(Some(Duration::from_millis(20))).expect("turn"); // one arrival, one completion
    }
    let mut held = Vec::new();
    while let Some(completion) = next(&mut receive) {
        held.push(completion);
    }
    let last = held.pop().expect("the end");
    assert_eq!(last.res, -libc::ECANCELED, "stopped, not ended by the client");
    // Stopped a turn after it held four; one more may come in that turn.
    assert!(held.len() <= HELD_AT_MOST + 2, "held {} buffers", held.len());
    let mut left = [0u8; 64];
    ours.set_nonblocking(true).expect("non-blocking");
    let in_socket = std::io::Read::read(&mut &*ours, &mut left).expect("the rest waits");
    assert_eq!(held.len() + in_socket, 20, "nothing lost");
    held.into_iter().for_each(|completion| take_bytes(completion, &mut Buffer::new()));
}

#[test]
fn a_burst_fills_more_buffers_but_none_come_after_the_stop() {
    // The kernel receives up to 32 times for one wake-up: 100 KiB arriving between two
    // turns fill 25 buffers before the proactor sees any. The stop comes at the next turn.
    start(64).expect("io_uring");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    let ours = Rc::new(ours);
    let mut receive = multishot_receive(&ours);
    turn(Some(Duration::ZERO)).expect("turn"); // armed
    peer.set_nonblocking(true).expect("non-blocking");
    let mut sent = 0;
    for _ in 0..25 {
        sent += std::io::Write::write(&mut &peer, &[b'x'; 4096]).unwrap_or(0);
    }
    for _ in 0..5 {
        turn(Some(Duration::from_millis(20))).expect("turn");
        for _ in 0..10 {
            let _ = std::io::Write::write(&mut &peer, &[b'y'; 4096]); // more, after the burst
        }
    }
    let mut held = Vec::new();
    while let Some(completion) = next(&mut receive) {
        held.push(completion);
    }
    assert_eq!(held.pop().expect("the end").res, -libc::ECANCELED, "stopped");
    let bytes: usize = held.iter().map(|completion| completion.res as usize).sum();
    assert!(held.len() <= 32 + 8, "held {} buffers", held.len());
    assert!(bytes >= sent.min(16 * 1024), "the burst came in: {bytes} of {sent}");
    held.into_iter().for_each(|completion| take_bytes(completion, &mut Buffer::new()));
}

#[test]
fn a_receive_whose_task_reads_every_turn_is_never_stopped() {
    // Four or more buffers in one turn is an upload, not a task that does not read: a task
    // that takes them before the next turn keeps its receive.
    start(64).expect("io_uring");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    let ours = Rc::new(ours);
    let mut receive = multishot_receive(&ours);
    let mut context = Context::from_waker(Waker::noop());
    let mut received = Buffer::new();
    for _ in 0..10 {
        for _ in 0..8 {
            std::io::Write::write_all(&mut &peer, &[b'x'; 4096]).expect("write");
        }
        turn(Some(Duration::from_millis(20))).expect("turn");
        while let Poll::Ready(next) = receive.poll_next(&mut context) {
            let completion = next.expect("never stopped: it reads every turn");
            assert_ne!(completion.res, -libc::ECANCELED, "stopped while reading");
            take_bytes(completion, &mut received);
        }
    }
    assert_eq!(in_flight(), 1, "the one receive, still armed");
}
