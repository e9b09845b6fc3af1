//! New in chapter 9: the semaphore is shared by loops on different threads. A permit given
//! back on one loop must wake, at once, the task waiting for it on another, whose loop is
//! asleep in its own epoll: through the task's waker and that loop's doorbell.

use super::*;
use crate::executor::{spawn, Executor};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn a_permit_given_back_on_one_loop_wakes_a_task_waiting_on_another() {
    let slots = Semaphore::new(1);
    let (held, release) = (mpsc::channel(), mpsc::channel::<()>());
    // The other loop: takes the only permit, and gives it back when told.
    let theirs = slots.clone();
    let other_loop = thread::spawn(move || {
        let mut executor = Executor::new().expect("executor");
        let (told, permit) = (held.0, Rc::new(RefCell::new(None)));
        let kept = permit.clone();
        spawn(async move { *kept.borrow_mut() = Some(theirs.acquire().await) });
        executor.turn(Some(Duration::ZERO)).expect("turn");
        assert!(permit.borrow().is_some(), "a free permit is taken at once");
        told.send(()).expect("tell");
        release.1.recv().expect("told to give it back");
        drop(permit.borrow_mut().take());
    });
    held.1.recv().expect("the other loop holds the permit");
    // This loop: a task waits for the permit.
    let mut executor = Executor::new().expect("executor");
    let got = Rc::new(Cell::new(false));
    let (ours, task_got) = (slots.clone(), got.clone());
    spawn(async move {
        let _permit = ours.acquire().await;
        task_got.set(true);
    });
    executor.turn(Some(Duration::ZERO)).expect("turn");
    assert!(!got.get(), "none free: it waits");
    release.0.send(()).expect("tell");
    let started = Instant::now();
    while !got.get() && started.elapsed() < Duration::from_secs(4) {
        executor.turn(Some(Duration::from_secs(5))).expect("turn"); // asleep in epoll
    }
    other_loop.join().expect("the other loop");
    assert!(got.get(), "the waiting task got the permit");
    assert!(started.elapsed() < Duration::from_secs(2), "woken at once: {:?}", started.elapsed());
}
