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
    let mut executor = Executor::new().expect("executor");
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

#[test]
fn two_tasks_waiting_on_one_socket_are_both_woken() {
    // Before, the second task's waker replaced the first's: two bytes arrived, one task
    // read one, and the other never ran again.
    let mut executor = Executor::new().expect("executor");
    let log = Rc::new(RefCell::new(Vec::new()));
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    ours.set_nonblocking(true).expect("nonblocking");
    let socket = Rc::new(Async::new(ours).expect("register"));
    for name in ["a", "b"] {
        let (socket, log) = (socket.clone(), log.clone());
        spawn(async move {
            let mut byte = [0u8; 1];
            let read = socket.read_with(|socket| (&*socket).read(&mut byte)).await;
            log.borrow_mut().push(format!("{name} read {read:?}"));
        });
    }
    for _ in 0..3 {
        executor.turn(Some(Duration::from_millis(10))).expect("turn");
    }
    assert!(log.borrow().is_empty(), "nothing to read yet: both wait");
    (&peer).write_all(b"xy").expect("write");
    for _ in 0..3 {
        executor.turn(Some(Duration::from_millis(100))).expect("turn");
    }
    let mut seen = log.borrow().clone();
    seen.sort();
    assert_eq!(seen, ["a read Ok(1)", "b read Ok(1)"], "both woken, both read");
}
