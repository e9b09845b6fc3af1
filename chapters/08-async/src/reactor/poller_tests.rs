//! What the reactor needs of its poller, on real sockets: told once per change (edge-
//! triggered), both ways, a hang-up as such. One file for both mechanisms: Linux runs it
//! against `epoll.rs`; macOS and the BSDs against `kqueue.rs` (CI builds it for them).
//! kqueue tells each direction in an event of its own, so the events of one wait are
//! folded into one answer per registration.

use super::*;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Instant;

/// What one wait of at most `ms` said of each key: (key, readable, writable, hung up,
/// failed), every event for a key folded into one.
fn wait(poller: &mut Poller, ms: u64) -> Vec<(u64, bool, bool, bool, bool)> {
    let mut events = Vec::new();
    poller.wait(Some(Duration::from_millis(ms)), &mut events).expect("wait");
    let mut folded: Vec<(u64, bool, bool, bool, bool)> = Vec::new();
    for event in &events {
        let (readable, writable) = (event.readable, event.writable);
        let seen = (event.key, readable, writable, event.hung_up, event.failed);
        match folded.iter_mut().find(|said| said.0 == event.key) {
            Some(said) => {
                *said = (said.0, said.1 | seen.1, said.2 | seen.2, said.3 | seen.3, said.4 | seen.4)
            }
            None => folded.push(seen),
        }
    }
    folded
}

#[test]
fn each_change_is_told_once() {
    let mut poller = Poller::new().expect("poller");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    poller.add(ours.as_fd(), 4, &[Direction::Read, Direction::Write]).expect("add");
    assert_eq!(wait(&mut poller, 1000), [(4, false, true, false, false)], "room to write");
    assert_eq!(wait(&mut poller, 50), [], "edge-triggered: not again");
    (&peer).write_all(b"x").expect("write");
    let seen = wait(&mut poller, 1000);
    assert!(matches!(seen[..], [(4, true, _, false, false)]), "bytes to read: {seen:?}");
    assert_eq!(wait(&mut poller, 50), [], "not read, and still not told again");
}

#[test]
fn a_hang_up_is_told_as_one_and_closes_both_ways() {
    let mut poller = Poller::new().expect("poller");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    poller.add(ours.as_fd(), 9, &[Direction::Read, Direction::Write]).expect("add");
    wait(&mut poller, 1000); // the first room to write
    drop(peer); // gone both ways: the end of file to read, and nobody to write to
    let (mut hung_up, mut failed) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(hung_up && failed) && Instant::now() < deadline {
        for (key, _, _, hung, fail) in wait(&mut poller, 1000) {
            assert_eq!(key, 9);
            (hung_up, failed) = (hung_up | hung, failed | fail);
        }
    }
    assert!(hung_up && failed, "hung up {hung_up}, failed {failed}");
    poller.delete(ours.as_fd()).expect("delete");
    assert_eq!(wait(&mut poller, 50), [], "deleted: told nothing more");
}

#[test]
fn the_doorbell_is_watched_for_reading_only() {
    let mut poller = Poller::new().expect("poller");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    poller.add(ours.as_fd(), 1, &[Direction::Read]).expect("add");
    assert_eq!(wait(&mut poller, 50), [], "its room to write is not asked about");
    (&peer).write_all(b"x").expect("write");
    assert_eq!(wait(&mut poller, 1000), [(1, true, false, false, false)]);
}
