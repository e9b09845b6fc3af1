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
    let mut executor = Executor::default();
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
    let mut executor = Executor::default();
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
    }));
    orphan.wake();
    turn(&mut executor); // finds no task 0: nothing happens
    assert!(executor.tasks.is_empty());
}

#[test]
fn a_task_can_spawn_tasks_which_run_on_the_next_turn() {
    let mut executor = Executor::default();
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
    let mut executor = Executor::default();
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
    let mut executor = Executor::default();
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
