//! The executor with hand-made futures: each test counts polls and controls wakes, so it
//! checks exactly when a task runs, without sockets or sleeps.

use super::*;
use std::future::poll_fn;
use std::rc::Rc;

/// A future that is pending until `release` holds a value, keeping the waker it was
/// given in `waker` for the test to wake, and counting its polls in `polls`.
fn gate(
    release: Rc<Cell<bool>>, waker: Rc<RefCell<Option<Waker>>>, polls: Rc<Cell<u32>>,
) -> impl Future<Output = ()> {
    poll_fn(move |cx| {
        polls.set(polls.get() + 1);
        if release.get() {
            return Poll::Ready(());
        }
        *waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    })
}

fn turn(executor: &mut Executor) {
    executor.turn(Some(Duration::ZERO)).expect("turn");
}

#[test]
fn a_task_woken_twice_runs_once() {
    let mut executor = Executor::new().expect("executor");
    let (release, waker, polls) = (Rc::default(), Rc::default(), Rc::new(Cell::new(0)));
    spawn(gate(Rc::clone(&release), Rc::clone(&waker), Rc::clone(&polls)));
    turn(&mut executor);
    assert_eq!(polls.get(), 1, "spawned: polled once");
    let stored: Waker = waker.borrow().clone().expect("it left its waker");
    stored.wake_by_ref();
    stored.wake_by_ref(); // its socket and its timer, say
    turn(&mut executor);
    assert_eq!(polls.get(), 2, "two wakes, one poll");
    turn(&mut executor);
    assert_eq!(polls.get(), 2, "not woken: not polled");
    release.set(true);
    stored.wake();
    turn(&mut executor);
    assert_eq!(polls.get(), 3);
    assert!(executor.tasks.is_empty(), "finished and gone");
}

#[test]
fn a_finished_tasks_waker_is_harmless() {
    let mut executor = Executor::new().expect("executor");
    let (release, waker, polls) = (Rc::new(Cell::new(true)), Rc::default(), Rc::new(Cell::new(0)));
    spawn(async {});
    spawn(gate(release, Rc::clone(&waker), polls));
    turn(&mut executor);
    assert!(executor.tasks.is_empty());
    // A waker kept by something that outlived its task (a timer, a socket).
    let orphan = Waker::from(Arc::new(TaskWaker {
        id: 0,
        queued: AtomicBool::new(false),
        run_queue: executor.run_queue.clone(),
        home: thread::current().id(),
        doorbell: executor.doorbell.clone(),
    }));
    orphan.wake();
    turn(&mut executor); // finds no task 0: nothing happens
    assert!(executor.tasks.is_empty());
}

#[test]
fn a_task_can_spawn_tasks_which_run_on_the_next_turn() {
    let mut executor = Executor::new().expect("executor");
    let log = Rc::new(RefCell::new(Vec::new()));
    let inner_log = Rc::clone(&log);
    spawn(async move {
        inner_log.borrow_mut().push("parent");
        let child_log = Rc::clone(&inner_log);
        spawn(async move { child_log.borrow_mut().push("child") });
    });
    turn(&mut executor);
    assert_eq!(*log.borrow(), ["parent"]);
    turn(&mut executor);
    assert_eq!(*log.borrow(), ["parent", "child"]);
}

#[test]
fn a_task_that_panics_is_dropped_and_the_others_run() {
    let mut executor = Executor::new().expect("executor");
    let ran = Rc::new(Cell::new(false));
    let other = Rc::clone(&ran);
    spawn(async { panic!("a bug in a task (this panic is expected)") });
    spawn(async move { other.set(true) });
    turn(&mut executor);
    assert!(ran.get());
    assert!(executor.tasks.is_empty());
}

#[test]
fn a_task_spawned_by_a_task_runs_without_waiting_for_an_event() {
    let mut executor = Executor::new().expect("executor");
    let ran = Rc::new(Cell::new(false));
    let inner_ran = Rc::clone(&ran);
    spawn(async move { spawn(async move { inner_ran.set(true) }) });
    let start = std::time::Instant::now();
    // The outer task runs and spawns the inner one. Nothing else will happen: had this
    // turn gone on to wait, it would have waited out its whole timeout.
    executor.turn(Some(Duration::from_secs(5))).expect("turn");
    assert!(start.elapsed() < Duration::from_secs(2), "a task to run: no waiting");
    turn(&mut executor);
    assert!(ran.get(), "the inner task ran in the next turn");
}

#[test]
fn a_wake_from_another_thread_ends_the_loops_wait_at_once() {
    // The Rust async book's `TimerFuture`: a thread sleeps, then fills the shared state and
    // wakes the task's waker. The executor is waiting in epoll meanwhile, for up to 5 s.
    struct Shared {
        done: bool,
        waker: Option<Waker>,
    }
    let mut executor = Executor::new().expect("executor");
    let shared = Arc::new(Mutex::new(Shared { done: false, waker: None }));
    let thread_shared = shared.clone();
    let ran = Rc::new(Cell::new(false));
    let task_ran = ran.clone();
    spawn(async move {
        poll_fn(|cx| {
            let mut shared = shared.lock().expect("lock");
            if shared.done {
                return Poll::Ready(());
            }
            shared.waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
        task_ran.set(true);
    });
    turn(&mut executor); // the task runs, and leaves its waker
    let started = std::time::Instant::now();
    let timer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        let mut shared = thread_shared.lock().expect("lock");
        shared.done = true;
        if let Some(waker) = shared.waker.take() {
            waker.wake(); // on this thread, not the loop's
        }
    });
    while !ran.get() && started.elapsed() < Duration::from_secs(4) {
        executor.turn(Some(Duration::from_secs(5))).expect("turn");
    }
    timer.join().expect("the timer thread");
    assert!(ran.get(), "the task ran");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "woken at once, not when the wait timed out ({:?})",
        started.elapsed()
    );
}

#[test]
fn a_task_with_endless_input_lets_the_others_run() {
    // A socket that is always ready (here: 64 KiB waiting, read a byte at a time) never
    // says `EAGAIN`, so without a budget its task would read it all in one poll, and with a
    // client that never stops sending, forever.
    use crate::net::Async;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let mut executor = Executor::new().expect("executor");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    ours.set_nonblocking(true).expect("nonblocking");
    (&peer).write_all(&[b'x'; 64 * 1024]).expect("fill");
    let (reads, other_ran) = (Rc::new(Cell::new(0u32)), Rc::new(Cell::new(false)));
    let (task_reads, task_ran) = (reads.clone(), other_ran.clone());
    spawn(async move {
        let socket = Async::new(ours).expect("register");
        let mut byte = [0u8; 1];
        while socket.read_with(|socket| (&*socket).read(&mut byte)).await.is_ok() {
            task_reads.set(task_reads.get() + 1);
        }
    });
    spawn(async move { task_ran.set(true) });
    turn(&mut executor);
    assert_eq!(reads.get(), BUDGET_PER_POLL, "one poll: one budget's worth of reads");
    assert!(other_ran.get(), "and the other task ran in the same turn");
    turn(&mut executor);
    assert_eq!(reads.get(), 2 * BUDGET_PER_POLL, "woken to go on, next turn");
}

#[test]
fn a_turn_returns_once_it_has_run_its_tasks() {
    // The loop in `main` checks between two turns whether it may stop (a shutdown with no
    // connection left). A turn that ran the last task and then waited for the next timer
    // (here a second away, as the `Date` header's is) would hold the exit up that long.
    let mut executor = Executor::new().expect("executor");
    spawn(async { crate::time::sleep(Duration::from_secs(1)).await });
    let done = Rc::new(Cell::new(false));
    let task_done = done.clone();
    spawn(async move { task_done.set(true) });
    let started = std::time::Instant::now();
    executor.turn(None).expect("turn");
    assert!(done.get(), "the task ran in the turn");
    assert!(started.elapsed() < Duration::from_millis(500), "and the turn did not wait after");
}

/// Lab 8's tests of the executor, which the lab command gives lab 8: the chapter is held
/// to them too, so that they ask only for what its own code does.
#[path = "executor_api_tests.rs"]
mod lab_api;

#[test]
fn answers_spend_the_budget_too() {
    // A task that makes answers and never waits for a socket: a read that brought
    // hundreds of pipelined requests. Each answer spends one of the budget, so it too
    // gives the others their turn.
    let mut executor = Executor::new().expect("executor");
    let (answers, other_ran) = (Rc::new(Cell::new(0u32)), Rc::new(Cell::new(false)));
    let (task_answers, task_ran) = (answers.clone(), other_ran.clone());
    spawn(async move {
        loop {
            consume_budget().await;
            task_answers.set(task_answers.get() + 1);
        }
    });
    spawn(async move { task_ran.set(true) });
    turn(&mut executor);
    assert_eq!(answers.get(), BUDGET_PER_POLL, "one poll: one budget's worth of answers");
    assert!(other_ran.get(), "and the other task ran in the same turn");
    turn(&mut executor);
    assert_eq!(answers.get(), 2 * BUDGET_PER_POLL, "woken to go on, next turn");
}
