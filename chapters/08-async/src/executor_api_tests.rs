//! Lab 8's tests of your executor: when a task runs, with hand-made futures that count
//! their polls and keep their wakers, so each test knows exactly what should run and when.
//!
//! - Wake: a spawned task is polled on the next turn; a task that returns `Pending` is not
//!   polled again until its waker is called, and then once, however often it was called. A
//!   waker called from another thread ends the loop's wait at once.
//! - Budget: a turn polls each woken task once, so a task that wakes itself cannot keep the
//!   others from running; and `spend` gives a task a bounded number of reads and writes a
//!   poll, then wakes it to go on next turn.
//! - Ending: a task that finishes or panics is dropped with what it held, and the others
//!   go on; a turn returns once it has run its tasks (the loop checks for a shutdown
//!   between turns); a `Flag` set wakes every task that waits for it; dropping the
//!   executor drops the tasks it still holds.
//!
//! Your program must provide these names, with these signatures (chapter 8's own):
//!
//! ```rust
//! // src/executor.rs
//! pub fn spawn(future: impl Future<Output = ()> + 'static)
//! pub fn spend(cx: &mut Context) -> Poll<()>
//! pub struct Executor
//! impl Executor {
//!     pub fn new() -> io::Result<Executor>
//!     pub fn turn(&mut self, timeout: Option<Duration>) -> io::Result<()>
//! }
//! // src/sync.rs
//! pub struct Flag
//! impl Flag {
//!     pub fn set(&self)
//!     pub fn is_set(&self) -> bool
//!     pub async fn wait(&self)
//! }
//! // src/time.rs
//! pub fn sleep(duration: Duration) -> Sleep
//! ```
//!
//! `Flag` is also `Clone` and `Default`, and `Sleep` a `Future<Output = ()>`.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use crate::executor::{spawn, spend, Executor};
use crate::sync::Flag;

fn turn(executor: &mut Executor) {
    executor.turn(Some(Duration::ZERO)).expect("a turn");
}

/// What a test's gate shares with the test: when it may finish, its waker, its polls.
#[derive(Clone, Default)]
struct Gate {
    open: Rc<Cell<bool>>,
    waker: Rc<RefCell<Option<Waker>>>,
    polls: Rc<Cell<u32>>,
}

impl Gate {
    /// A future that is pending until the gate is open, keeping its waker for the test.
    fn wait(&self) -> impl Future<Output = ()> {
        let gate = self.clone();
        poll_fn(move |cx| {
            gate.polls.set(gate.polls.get() + 1);
            if gate.open.get() {
                return Poll::Ready(());
            }
            *gate.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
    }

    fn waker(&self) -> Waker {
        self.waker.borrow().clone().expect("the task was polled, and left its waker")
    }
}

#[test]
fn a_task_runs_when_spawned_and_again_only_when_woken() {
    let mut executor = Executor::new().expect("an executor");
    let gate = Gate::default();
    spawn(gate.wait());
    turn(&mut executor);
    assert_eq!(gate.polls.get(), 1, "spawned: polled on the next turn");
    for _ in 0..3 {
        turn(&mut executor);
    }
    assert_eq!(gate.polls.get(), 1, "not woken: not polled");
    gate.waker().wake();
    turn(&mut executor);
    assert_eq!(gate.polls.get(), 2, "woken: polled again");
}

#[test]
fn a_task_woken_twice_before_it_runs_is_polled_once() {
    let mut executor = Executor::new().expect("an executor");
    let gate = Gate::default();
    spawn(gate.wait());
    turn(&mut executor);
    let waker = gate.waker();
    waker.wake_by_ref();
    waker.wake_by_ref(); // its socket and its timer, say
    turn(&mut executor);
    turn(&mut executor);
    assert_eq!(gate.polls.get(), 2, "two wakes, one poll");
    gate.open.set(true);
    waker.wake_by_ref();
    turn(&mut executor);
    assert_eq!(gate.polls.get(), 3, "and it finished");
    waker.wake(); // a late wake of a finished task: harmless
    turn(&mut executor);
    assert_eq!(gate.polls.get(), 3, "a finished task is never polled again");
}

#[test]
fn a_task_that_wakes_itself_is_polled_once_a_turn_and_the_others_run() {
    let mut executor = Executor::new().expect("an executor");
    let (polls, others) = (Rc::new(Cell::new(0u32)), Rc::new(Cell::new(0u32)));
    let task_polls = polls.clone();
    spawn(poll_fn(move |cx| {
        task_polls.set(task_polls.get() + 1);
        // Always more to do; but an executor that polled it again in the same turn would
        // never end that turn, so it stops after 100 polls, for the test to fail, not hang.
        if task_polls.get() < 100 {
            cx.waker().wake_by_ref();
        }
        Poll::<()>::Pending
    }));
    for _ in 0..3 {
        let others = others.clone();
        spawn(async move { others.set(others.get() + 1) });
    }
    turn(&mut executor);
    assert_eq!(polls.get(), 1, "woken while it ran: it waits for the next turn");
    assert_eq!(others.get(), 3, "and the others ran in the same turn");
    turn(&mut executor);
    turn(&mut executor);
    assert_eq!(polls.get(), 3, "once a turn");
}

#[test]
fn spend_gives_a_task_a_bounded_budget_a_poll() {
    let mut executor = Executor::new().expect("an executor");
    let (spent, other_ran) = (Rc::new(Cell::new(0u32)), Rc::new(Cell::new(false)));
    let task_spent = spent.clone();
    // A task with endless input: every read it makes would succeed, so only its budget
    // ends its poll. (Past 4096 reads it stops, so that an executor that polls it again in
    // the same turn fails the test rather than spinning forever.)
    spawn(poll_fn(move |cx| loop {
        if task_spent.get() >= 4096 {
            return Poll::<()>::Pending;
        }
        match spend(cx) {
            Poll::Ready(()) => task_spent.set(task_spent.get() + 1),
            Poll::Pending => return Poll::<()>::Pending,
        }
    }));
    let other = other_ran.clone();
    spawn(async move { other.set(true) });
    turn(&mut executor);
    let budget = spent.get();
    assert!((1..=1024).contains(&budget), "a budget of 1 to 1024 reads a poll, not {budget}");
    assert!(other_ran.get(), "the other task ran in the same turn");
    turn(&mut executor);
    assert_eq!(spent.get(), 2 * budget, "woken to go on next turn, with a fresh budget");
}

#[test]
fn a_task_spawned_by_a_task_runs_next_turn_without_waiting_for_an_event() {
    let mut executor = Executor::new().expect("an executor");
    let ran = Rc::new(Cell::new(false));
    let inner = ran.clone();
    spawn(async move { spawn(async move { inner.set(true) }) });
    let started = Instant::now();
    // Nothing else will happen: a turn that went on to wait would wait out its 5 s.
    executor.turn(Some(Duration::from_secs(5))).expect("a turn");
    executor.turn(Some(Duration::from_secs(5))).expect("a turn");
    assert!(ran.get(), "the task it spawned ran");
    assert!(started.elapsed() < Duration::from_secs(2), "without waiting: {:?}", started.elapsed());
}

#[test]
fn a_wake_from_another_thread_ends_the_loops_wait_at_once() {
    let mut executor = Executor::new().expect("an executor");
    let shared: Arc<Mutex<(bool, Option<Waker>)>> = Arc::default();
    let (task_shared, ran) = (shared.clone(), Rc::new(Cell::new(false)));
    let task_ran = ran.clone();
    spawn(async move {
        poll_fn(|cx| {
            let mut shared = task_shared.lock().expect("the lock");
            if shared.0 {
                return Poll::Ready(());
            }
            shared.1 = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
        task_ran.set(true);
    });
    turn(&mut executor); // the task runs, and leaves its waker
    let started = Instant::now();
    let other = thread::spawn(move || {
        // Long enough for the loop to be asleep in its wait; were it not, it would see the
        // wake-up on its own, and pass anyway.
        thread::sleep(Duration::from_millis(100));
        let mut shared = shared.lock().expect("the lock");
        shared.0 = true;
        if let Some(waker) = shared.1.take() {
            waker.wake(); // on this thread, not the loop's
        }
    });
    while !ran.get() && started.elapsed() < Duration::from_secs(4) {
        executor.turn(Some(Duration::from_secs(5))).expect("a turn");
    }
    other.join().expect("the other thread");
    assert!(ran.get(), "the task ran");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "woken at once, not when the wait ended ({took:?})");
}

#[test]
fn a_finished_task_is_dropped_with_what_it_held() {
    let mut executor = Executor::new().expect("an executor");
    let witness = Rc::new(());
    let held = witness.clone();
    spawn(async move { drop(held) });
    let held_too = witness.clone();
    spawn(async move {
        let _held = held_too;
    });
    turn(&mut executor);
    assert_eq!(Rc::strong_count(&witness), 1, "both finished, and nothing of them is kept");
}

#[test]
fn a_task_that_panics_is_dropped_and_the_others_run() {
    let mut executor = Executor::new().expect("an executor");
    let ran = Rc::new(Cell::new(false));
    let other = ran.clone();
    spawn(async { panic!("a bug in a task (this panic is expected)") });
    spawn(async move { other.set(true) });
    turn(&mut executor);
    turn(&mut executor);
    assert!(ran.get(), "the other task ran");
}

#[test]
fn a_flag_wakes_every_task_waiting_for_it_and_stays_set() {
    let mut executor = Executor::new().expect("an executor");
    let (flag, log) = (Flag::default(), Rc::new(RefCell::new(Vec::new())));
    for name in ["a", "b"] {
        let (flag, log) = (flag.clone(), log.clone());
        spawn(async move {
            flag.wait().await;
            log.borrow_mut().push(name);
        });
    }
    for _ in 0..3 {
        turn(&mut executor);
    }
    assert!(log.borrow().is_empty(), "nobody goes before the flag is set");
    flag.set();
    assert!(flag.is_set());
    turn(&mut executor);
    turn(&mut executor);
    assert_eq!(*log.borrow(), ["a", "b"], "every waiter, in the order they came");
    let (late, set) = (log.clone(), flag.clone());
    spawn(async move {
        set.wait().await; // set already: does not wait
        late.borrow_mut().push("late");
    });
    turn(&mut executor);
    assert_eq!(log.borrow().last(), Some(&"late"));
}

#[test]
fn a_turn_returns_once_it_has_run_its_tasks() {
    // The loop checks between two turns whether it may stop: a turn that ran the last task
    // and then waited for the next timer (a second away) would hold up the exit that long.
    let mut executor = Executor::new().expect("an executor");
    spawn(async { crate::time::sleep(Duration::from_secs(1)).await });
    let done = Rc::new(Cell::new(false));
    let task_done = done.clone();
    spawn(async move { task_done.set(true) });
    let started = Instant::now();
    executor.turn(None).expect("a turn");
    assert!(done.get(), "the task ran in the turn");
    assert!(started.elapsed() < Duration::from_millis(500), "and the turn did not wait after");
}

#[test]
fn dropping_the_executor_drops_the_tasks_it_still_holds() {
    // A loop that ends drops its executor: the connections' tasks must go with it, so that
    // their sockets close and their memory is freed.
    let mut executor = Executor::new().expect("an executor");
    let witness = Rc::new(());
    let held = witness.clone();
    spawn(async move {
        let _held = held;
        std::future::pending::<()>().await
    });
    turn(&mut executor);
    assert_eq!(Rc::strong_count(&witness), 2, "the task waits, holding its clone");
    drop(executor);
    assert_eq!(Rc::strong_count(&witness), 1, "dropped with the executor");
}
