//! The kqueue backend on real sockets (`UnixStream::pair`), with nothing else around it:
//! the epoll backend's tests, and what kqueue does its own way. They run where kqueue is
//! (`cargo test -p ch07-epoll` on macOS or a BSD); CI builds them for those systems.

use super::*;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Instant;

const READABLE: Interest = Interest::READABLE;
const WRITABLE: Interest = Interest { readable: false, writable: true };

/// Waits once, at most `ms`, and returns the tokens reported readable and writable.
fn wait(kqueue: &mut KqueueBackend, ms: u64) -> Vec<(u64, bool, bool)> {
    let mut nothing = std::iter::empty();
    let events = kqueue.wait(&mut nothing, Some(Duration::from_millis(ms))).expect("wait");
    events.iter().map(|event| (event.token.0, event.readable, event.writable)).collect()
}

#[test]
fn an_idle_connection_causes_no_wake_ups() {
    let mut kqueue = KqueueBackend::new().expect("kqueue");
    let (idle, _peer) = UnixStream::pair().expect("socketpair");
    kqueue.add(idle.as_fd(), Token(7), READABLE).expect("add");
    assert_eq!(kqueue.changes.len(), 2, "two filters, written down for the wait");
    let started = Instant::now();
    assert_eq!(wait(&mut kqueue, 200), [], "no wake-up");
    assert!(started.elapsed() >= Duration::from_millis(150), "it slept: it was not woken");
    assert!(kqueue.changes.is_empty(), "the wait took them along");

    // Output pending: the write filter on, and writable at once, every time it is asked.
    kqueue.modify(idle.as_fd(), Token(7), WRITABLE).expect("modify");
    assert_eq!(wait(&mut kqueue, 1000), [(7, false, true)]);
    assert_eq!(wait(&mut kqueue, 1000), [(7, false, true)], "level-triggered: again");
}

#[test]
fn a_ready_socket_is_reported_with_its_token_until_it_is_drained() {
    let mut kqueue = KqueueBackend::new().expect("kqueue");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    kqueue.add(ours.as_fd(), Token(42), READABLE).expect("add");
    (&peer).write_all(b"x").expect("write");
    assert_eq!(wait(&mut kqueue, 1000), [(42, true, false)]);
    assert_eq!(wait(&mut kqueue, 1000), [(42, true, false)], "level-triggered: again");
}

#[test]
fn waiting_for_nothing_still_hears_a_hang_up_once() {
    let mut kqueue = KqueueBackend::new().expect("kqueue");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    kqueue.add(ours.as_fd(), Token(1), READABLE).expect("add");
    assert_eq!(wait(&mut kqueue, 50), []);
    kqueue.modify(ours.as_fd(), Token(1), Interest::NONE).expect("modify to none");
    (&peer).write_all(b"x").expect("write");
    // Edge-triggered now: the bytes are told once at most (never asked for: the loop lets
    // them be), and not again.
    assert!(wait(&mut kqueue, 100).len() <= 1);
    assert_eq!(wait(&mut kqueue, 100), [], "bytes not asked for: silent");
    drop(peer); // a hang-up: `EV_EOF`, which the loop must hear
    assert_eq!(wait(&mut kqueue, 1000), [(1, true, true)]);
    assert_eq!(wait(&mut kqueue, 100), [], "once: the end of file does not spin the loop");

    // Asked to read again: level-triggered, so the end of file is told until it is read.
    kqueue.modify(ours.as_fd(), Token(1), READABLE).expect("modify to readable");
    assert_eq!(wait(&mut kqueue, 1000), [(1, true, true)]);
    assert_eq!(wait(&mut kqueue, 1000), [(1, true, true)]);
    kqueue.delete(ours.as_fd()).expect("delete");
    assert_eq!(wait(&mut kqueue, 100), []);
}

#[test]
fn a_registration_deleted_before_the_wait_never_reaches_the_kernel() {
    let mut kqueue = KqueueBackend::new().expect("kqueue");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    (&peer).write_all(b"x").expect("write");
    kqueue.add(ours.as_fd(), Token(5), READABLE).expect("add");
    // Its changes are dropped; the deletes the kernel answers `ENOENT` (never had them).
    kqueue.delete(ours.as_fd()).expect("delete");
    assert!(kqueue.changes.is_empty());
    assert_eq!(wait(&mut kqueue, 100), [], "readable, but never registered");
}

#[test]
fn a_change_the_kernel_refuses_comes_back_as_a_failure() {
    let mut kqueue = KqueueBackend::new().expect("kqueue");
    let (reader, writer) = nix::unistd::pipe().expect("pipe");
    drop(writer);
    // A pipe whose writer is gone: its end of file (`EV_EOF`), and on FreeBSD and macOS a
    // write filter refused (`EV_ERROR`, `EPIPE`). Either way, token 3 has failed.
    kqueue.add(reader.as_fd(), Token(3), READABLE).expect("add");
    let seen = wait(&mut kqueue, 1000);
    assert!(!seen.is_empty() && seen.iter().all(|&event| event == (3, true, true)), "{seen:?}");
}
