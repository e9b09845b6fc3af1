//! A stream's receive when the loop's provided buffers have run out.

use std::future::Future;
use std::net::TcpListener;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Instant;

use super::*;
use crate::buffers::COUNT;

/// Polls `future`, turning the ring between polls, until it is ready (at most 3 s).
fn run<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    let started = Instant::now();
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        assert!(started.elapsed() < Duration::from_secs(3), "not ready in 3 s");
        proactor::turn(Some(Duration::from_millis(50))).expect("turn");
    }
}

/// A connected pair on loopback: ours (non-blocking, as `accepts` makes them) and the peer.
fn pair() -> (Async<TcpStream>, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let peer = TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
    let (ours, _) = listener.accept().expect("accept");
    ours.set_nonblocking(true).expect("non-blocking");
    (Async::new(ours), peer)
}

#[test]
fn with_every_buffer_held_elsewhere_a_read_still_receives() {
    // Other connections hold all the loop's buffers (their tasks copy them out later): a
    // receive ends with ENOBUFS at once. The read must take its bytes anyway, and not arm
    // the receive again and again, spinning the loop until a buffer comes back.
    proactor::start(64).expect("io_uring");
    let (hogs, mut held) = (Vec::from_iter((0..COUNT).map(|_| pair())), Vec::new());
    for (hog, peer) in &hogs {
        std::io::Write::write_all(&mut &*peer, b"x").expect("write");
        let mut first = hog.arm_receive();
        held.push(run(poll_fn(|cx| first.poll_next(cx))).expect("one buffer"));
        hog.receiving.set(Some(first)); // armed, its buffer untaken
    }
    let (stream, peer) = pair();
    std::io::Write::write_all(&mut &peer, b"hello").expect("write");
    let mut received = Buffer::new();
    assert_eq!(run(stream.read_to(&mut received)).expect("received"), 5);
    assert_eq!(&received[..], b"hello");
    // Nothing more has come: the read waits, quietly. Re-armed at once, a receive with no
    // buffer left would end at once (ENOBUFS), turn after turn, and no turn would wait.
    let mut more = Buffer::new();
    {
        let mut read = pin!(stream.read_to(&mut more));
        let mut context = Context::from_waker(Waker::noop());
        let started = Instant::now();
        for _ in 0..10 {
            assert!(read.as_mut().poll(&mut context).is_pending(), "nothing has come");
            proactor::turn(Some(Duration::from_millis(20))).expect("turn");
        }
        assert!(started.elapsed() >= Duration::from_millis(150), "the turns did not wait: a spin");
        std::io::Write::write_all(&mut &peer, b"again").expect("write");
        assert_eq!(run(read).expect("received"), 5);
    }
    assert_eq!(&more[..], b"again");
    held.into_iter().for_each(|completion| proactor::take_bytes(completion, &mut Buffer::new()));
}
