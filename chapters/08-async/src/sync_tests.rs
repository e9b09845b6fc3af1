//! The sync tools, driven by a real executor: each waiting future is a task, and the tests
//! check who runs, in what order, and that no wake-up is lost.

use super::*;
use crate::executor::{spawn, Executor};
use crate::race::race;
use std::future::{poll_fn, Future};
use std::time::Duration;

fn turns(executor: &mut Executor, count: usize) {
    for _ in 0..count {
        executor.turn(Some(Duration::ZERO)).expect("turn");
    }
}

type Log = Rc<RefCell<Vec<String>>>;

fn note(log: &Log, line: impl Into<String>) {
    log.borrow_mut().push(line.into());
}

#[test]
fn a_flag_wakes_every_waiter_once_set_and_stays_set() {
    let mut executor = Executor::new().expect("executor");
    let (flag, log) = (Flag::default(), Log::default());
    for name in ["a", "b"] {
        let (flag, log) = (flag.clone(), log.clone());
        spawn(async move {
            flag.wait().await;
            note(&log, name);
        });
    }
    turns(&mut executor, 3);
    assert!(log.borrow().is_empty());
    flag.set();
    turns(&mut executor, 2);
    assert_eq!(*log.borrow(), ["a", "b"]);
    let late = log.clone();
    let set = flag.clone();
    spawn(async move {
        set.wait().await; // set already: does not wait
        note(&late, "late");
    });
    turns(&mut executor, 1);
    assert_eq!(log.borrow().last().map(String::as_str), Some("late"));
}

#[test]
fn a_waiter_polled_many_times_keeps_one_place() {
    let flag = Flag::default();
    let mut executor = Executor::new().expect("executor");
    let waiting = flag.clone();
    // A task that waits for the flag and is woken again and again by something else, as
    // a connection waiting for a shutdown and for its socket is: each poll polls the wait.
    spawn(async move {
        let mut wait = std::pin::pin!(waiting.wait());
        poll_fn(|cx| {
            let polled = wait.as_mut().poll(cx);
            cx.waker().wake_by_ref(); // "something else" wakes it on every turn
            polled
        })
        .await
    });
    turns(&mut executor, 6);
    assert_eq!(flag.0.borrow().1.waiting.len(), 1, "one place, however many polls");
    flag.set();
    turns(&mut executor, 2);
    assert!(flag.0.borrow().1.waiting.is_empty());
}

#[test]
fn a_semaphore_serves_first_come_first_served() {
    let mut executor = Executor::new().expect("executor");
    let (semaphore, log, release) = (Semaphore::new(1), Log::default(), Flag::default());
    for name in ["first", "second", "third"] {
        let (semaphore, log, release) = (semaphore.clone(), log.clone(), release.clone());
        spawn(async move {
            let _permit = semaphore.acquire().await;
            note(&log, name);
            release.wait().await; // hold it until told
        });
    }
    turns(&mut executor, 3);
    assert_eq!(*log.borrow(), ["first"], "one permit: one holder");
    // A newcomer, while the others wait, must queue behind them.
    let (newcomer, newcomer_log) = (semaphore.clone(), log.clone());
    spawn(async move {
        let _permit = newcomer.acquire().await;
        note(&newcomer_log, "newcomer");
    });
    release.set();
    turns(&mut executor, 10);
    assert_eq!(*log.borrow(), ["first", "second", "third", "newcomer"]);
}

#[test]
fn a_waiter_that_gives_up_passes_its_turn_on() {
    let mut executor = Executor::new().expect("executor");
    let (semaphore, log) = (Semaphore::new(1), Log::default());
    let held = Rc::new(RefCell::new(None));
    let holder = held.clone();
    let first = semaphore.clone();
    spawn(async move { *holder.borrow_mut() = Some(first.acquire().await) });
    turns(&mut executor, 2);
    // "quitter" waits, but gives up (a timeout, say) before the permit is free.
    let (quitter, quitter_log) = (semaphore.clone(), log.clone());
    spawn(async move {
        let gave_up = crate::time::timeout(Duration::ZERO, quitter.acquire()).await.is_err();
        note(&quitter_log, if gave_up { "quitter gave up" } else { "quitter got it" });
    });
    let (patient, patient_log) = (semaphore.clone(), log.clone());
    spawn(async move {
        let _permit = patient.acquire().await;
        note(&patient_log, "patient got it");
    });
    turns(&mut executor, 3);
    held.borrow_mut().take(); // the first holder lets go
    turns(&mut executor, 3);
    assert_eq!(*log.borrow(), ["quitter gave up", "patient got it"]);
}

#[test]
fn leaving_a_flags_line_wakes_nobody() {
    // Every idle connection waits on the shutdown flag with its read; when a read ends, the
    // others must not be woken for nothing (each would poll its socket and find it empty).
    let mut executor = Executor::new().expect("executor");
    let (flag, polls, done) = (Flag::default(), Rc::new(Cell::new(0)), Flag::default());
    let (first_flag, first_done) = (flag.clone(), done.clone());
    spawn(async move {
        race(first_flag.wait(), first_done.wait()).await; // leaves when `done` is set
    });
    let (second_flag, second_polls) = (flag.clone(), polls.clone());
    spawn(async move {
        let counted = poll_fn(|_| {
            second_polls.set(second_polls.get() + 1);
            Poll::<()>::Pending
        });
        race(second_flag.wait(), counted).await;
    });
    turns(&mut executor, 2);
    assert_eq!(polls.get(), 1, "polled once, then waiting");
    done.set(); // the first task's wait ends: it leaves the flag's line, first in it
    turns(&mut executor, 3);
    assert_eq!(polls.get(), 1, "the second was not woken");
}

#[test]
fn a_waiter_served_wakes_nobody_when_no_permit_is_left() {
    // The task served takes the last permit: the next in line would only poll and wait again.
    let mut executor = Executor::new().expect("executor");
    let (slots, release, polls) = (Semaphore::new(1), Flag::default(), Rc::new(Cell::new(0)));
    let (holder_slots, holder_release) = (slots.clone(), release.clone());
    spawn(async move {
        let _permit = holder_slots.acquire().await;
        holder_release.wait().await;
    });
    let second_slots = slots.clone();
    spawn(async move {
        let _permit = second_slots.acquire().await;
        std::future::pending::<()>().await; // keeps the permit
    });
    let (third_slots, third_polls) = (slots.clone(), polls.clone());
    spawn(async move {
        let mut acquire = std::pin::pin!(third_slots.acquire());
        poll_fn(|cx| {
            third_polls.set(third_polls.get() + 1);
            acquire.as_mut().poll(cx)
        })
        .await;
    });
    turns(&mut executor, 3);
    assert_eq!(polls.get(), 1, "polled once, then waiting");
    release.set(); // the holder's permit goes to the second task, first in line
    turns(&mut executor, 3);
    assert_eq!(polls.get(), 1, "the third was not woken: no permit is left");
}

#[test]
fn a_waker_that_looks_at_the_flag_does_not_find_it_borrowed() {
    // A waker may run any code. This one reads the flag while it is woken: had `set` woken
    // it with the flag still borrowed, `is_set` would panic ("already mutably borrowed").
    thread_local! {
        static WATCHED: RefCell<Option<Flag>> = const { RefCell::new(None) };
        static SEEN: Cell<Option<bool>> = const { Cell::new(None) };
    }
    struct Peeker;
    impl std::task::Wake for Peeker {
        fn wake(self: std::sync::Arc<Self>) {
            let set = WATCHED.with(|flag| flag.borrow().as_ref().map(Flag::is_set));
            SEEN.set(set);
        }
    }
    let flag = Flag::default();
    WATCHED.with(|watched| *watched.borrow_mut() = Some(flag.clone()));
    let waker = Waker::from(std::sync::Arc::new(Peeker));
    let mut wait = std::pin::pin!(flag.wait());
    assert!(wait.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    flag.set();
    assert_eq!(SEEN.get(), Some(true), "woken, and saw the flag set");
}
