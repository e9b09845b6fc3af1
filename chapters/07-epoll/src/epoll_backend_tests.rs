//! The epoll backend on real sockets (`UnixStream::pair`), with nothing else around it.

use super::*;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Instant;

const READABLE: Interest = Interest::READABLE;
const WRITABLE: Interest = Interest { readable: false, writable: true };

/// Waits once, at most `ms`, and returns the tokens reported readable and writable.
fn wait(epoll: &mut EpollBackend, ms: u64) -> Vec<(u64, bool, bool)> {
    let mut nothing = std::iter::empty();
    let events = epoll.wait(&mut nothing, Some(Duration::from_millis(ms))).expect("wait");
    events.iter().map(|event| (event.token.0, event.readable, event.writable)).collect()
}

// ANCHOR: no_wake_ups
#[test]
fn an_idle_connection_causes_no_wake_ups() {
    let mut epoll = EpollBackend::new().expect("epoll");
    let (idle, _peer) = UnixStream::pair().expect("socketpair");
    // What a keep-alive connection with nothing to send waits for: readable only. A socket
    // is writable nearly always; asking for that too would wake us on every turn.
    epoll.add(idle.as_fd(), Token(7), READABLE).expect("add");
    let started = Instant::now();
    assert_eq!(wait(&mut epoll, 200), [], "no wake-up");
    assert!(started.elapsed() >= Duration::from_millis(150), "it slept: it was not woken");

    // The same socket with output pending: writable at once, every time it is asked.
    epoll.modify(idle.as_fd(), Token(7), WRITABLE).expect("modify");
    assert_eq!(wait(&mut epoll, 1000), [(7, false, true)]);
    assert_eq!(wait(&mut epoll, 1000), [(7, false, true)], "level-triggered: again");
}
// ANCHOR_END: no_wake_ups

#[test]
fn a_ready_socket_is_reported_with_its_token_until_it_is_drained() {
    let mut epoll = EpollBackend::new().expect("epoll");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    epoll.add(ours.as_fd(), Token(42), READABLE).expect("add");
    (&peer).write_all(b"x").expect("write");
    assert_eq!(wait(&mut epoll, 1000), [(42, true, false)]);
    // Level-triggered: not read yet, so reported again.
    assert_eq!(wait(&mut epoll, 1000), [(42, true, false)]);
}

#[test]
fn waiting_for_nothing_still_hears_a_hang_up() {
    let mut epoll = EpollBackend::new().expect("epoll");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    epoll.add(ours.as_fd(), Token(1), READABLE).expect("add");
    epoll.modify(ours.as_fd(), Token(1), Interest::NONE).expect("modify to none");
    (&peer).write_all(b"x").expect("write");
    assert_eq!(wait(&mut epoll, 100), [], "bytes to read are not asked for: silent");
    drop(peer); // a hang-up: reported whatever was asked, and the loop must hear it
    assert_eq!(wait(&mut epoll, 1000), [(1, true, true)]);
    epoll.delete(ours.as_fd()).expect("delete");
    assert_eq!(wait(&mut epoll, 100), []);
}
