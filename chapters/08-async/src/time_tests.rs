//! `sleep` and `timeout` on the executor, with real (short) times and generous bounds.

use super::*;
use crate::executor::{spawn, Executor};
use std::cell::Cell;
use std::rc::Rc;

/// Turns until `done`, for at most 5 s of real time: a broken timer fails, never hangs.
fn run_until(executor: &mut Executor, done: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(5);
    while !done() && Instant::now() < give_up {
        executor.turn(Some(Duration::from_secs(1))).expect("turn");
    }
}

#[test]
fn a_timeout_fires_when_its_future_takes_too_long() {
    let mut executor = Executor::new().expect("executor");
    let outcome = Rc::new(RefCell::new(None));
    let store = outcome.clone();
    let started = Instant::now();
    spawn(async move {
        let slow = sleep(Duration::from_secs(60));
        *store.borrow_mut() = Some(timeout(Duration::from_millis(50), slow).await.is_err());
    });
    run_until(&mut executor, || outcome.borrow().is_some());
    assert_eq!(*outcome.borrow(), Some(true), "timed out");
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(pending(), 0, "the 60 s sleep was dropped, its timer with it");
}

#[test]
fn a_future_that_finishes_first_cancels_its_timeout() {
    let mut executor = Executor::new().expect("executor");
    let outcome = Rc::new(RefCell::new(None));
    let store = outcome.clone();
    spawn(async move {
        let quick = async { 42 };
        *store.borrow_mut() = Some(timeout(Duration::from_secs(60), quick).await.ok());
    });
    run_until(&mut executor, || outcome.borrow().is_some());
    assert_eq!(*outcome.borrow(), Some(Some(42)));
    assert_eq!(pending(), 0, "no 60 s timer left behind");
}

#[test]
fn a_sleep_polled_again_by_the_same_task_sets_no_second_timer() {
    let mut executor = Executor::new().expect("executor");
    let done = Rc::new(Cell::new(false));
    let finished = done.clone();
    spawn(async move {
        let mut nap = std::pin::pin!(sleep(Duration::from_millis(30)));
        std::future::poll_fn(|cx| {
            let polled = nap.as_mut().poll(cx);
            if polled.is_pending() {
                cx.waker().wake_by_ref(); // polled on every turn until it is done
            }
            polled
        })
        .await;
        finished.set(true);
    });
    executor.turn(Some(Duration::ZERO)).expect("turn");
    executor.turn(Some(Duration::ZERO)).expect("turn");
    assert_eq!(pending(), 1);
    run_until(&mut executor, || done.get());
    assert!(done.get());
}
