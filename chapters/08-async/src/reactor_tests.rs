//! The reactor with two tasks on two socket pairs: a byte into one wakes its task only.

use crate::executor::{spawn, Executor};
use crate::net::Async;
use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::Duration;

#[test]
fn readiness_wakes_the_task_waiting_for_it_and_no_other() {
    let mut executor = Executor::default();
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut peers = Vec::new();
    for name in ["a", "b"] {
        let (ours, peer) = UnixStream::pair().expect("socketpair");
        ours.set_nonblocking(true).expect("nonblocking");
        peers.push(peer);
        let (socket, log) = (Async::new(ours).expect("register"), log.clone());
        spawn(async move {
            let mut byte = [0u8; 1];
            let read = socket.read_with(|socket| (&*socket).read(&mut byte)).await;
            log.borrow_mut().push(format!("{name} read {read:?}"));
        });
    }
    for _ in 0..3 {
        executor.turn(Some(Duration::from_millis(10))).expect("turn");
    }
    assert!(log.borrow().is_empty(), "nothing to read: both wait, and nobody spins");
    (&peers[1]).write_all(b"x").expect("write");
    for _ in 0..3 {
        executor.turn(Some(Duration::from_millis(100))).expect("turn");
    }
    assert_eq!(*log.borrow(), ["b read Ok(1)"]);
}
