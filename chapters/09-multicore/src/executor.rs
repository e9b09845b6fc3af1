//! The executor: runs tasks, each a future, a step at a time.
//!
//! A task is an `async` block or function, which the compiler has turned into a state
//! machine: a value whose `poll` runs it to its next `.await` that must wait, and returns
//! `Poll::Pending` there, or `Poll::Ready` at its end. Before it returns `Pending`, the
//! future it waits on (a socket, a timer) keeps the task's [`Waker`]; when that thing is
//! ready, it calls `wake`, which puts the task back in the run queue, and the executor
//! polls it again. Nothing else ever runs a task: no waker, no progress.
//!
//! [`Executor::turn`] is one turn of the loop, the same turn as in chapters 3-7: wait (in
//! the reactor, see `reactor.rs`) until a socket is ready or a timer is due (`time.rs`),
//! which wakes tasks, then run the tasks that were woken.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::{poll_fn, Future};
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use shared::log;
use shared::self_pipe::SelfPipe;

use crate::{reactor, time};

// ANCHOR: spawn
/// A task: a future whose output nobody waits for, boxed because each has its own type.
type Task = Pin<Box<dyn Future<Output = ()>>>;

/// The tasks that have been woken and wait to be polled, by number. A waker may be called
/// from any thread (`Waker` is `Send`; a pool worker calls one when a file is read), so
/// the queue has a lock.
type RunQueue = Arc<Mutex<VecDeque<u64>>>;

thread_local! {
    /// How many turns the loop has taken (for `/stats`).
    static TURNS: Cell<u64> = const { Cell::new(0) };
    /// Tasks spawned and not yet taken in by the executor: `spawn` works from anywhere on
    /// the loop's thread, inside a task too, while the executor is busy polling.
    static SPAWNED: RefCell<Vec<Task>> = const { RefCell::new(Vec::new()) };
    /// What the task being polled may still read, write and answer in this poll (`spend`).
    static BUDGET: Cell<u32> = const { Cell::new(BUDGET_PER_POLL) };
}

/// Starts `future` as a task of its own, on this thread's executor.
pub fn spawn(future: impl Future<Output = ()> + 'static) {
    SPAWNED.with(|spawned| spawned.borrow_mut().push(Box::pin(future)));
}
// ANCHOR_END: spawn

// ANCHOR: budget
/// How many reads, writes and answers a task may make in one poll. Tokio's budget is the
/// same idea.
const BUDGET_PER_POLL: u32 = 32;

/// Spends one of the running task's reads or writes: `Ready` while it has some left.
/// Else the task must let the others run: it is woken at once, to go on next turn, and
/// `Pending` takes it back to the executor. Without this, a client that always has input
/// (a flood of pipelined requests) never meets `EAGAIN`, so its task never returns
/// `Pending`, and no other task runs again. Every read and write calls it (`net.rs`).
pub fn spend(cx: &mut Context) -> Poll<()> {
    let left = BUDGET.get();
    if left == 0 {
        cx.waker().wake_by_ref();
        return Poll::Pending;
    }
    BUDGET.set(left - 1);
    Poll::Ready(())
}

/// Spends one of the running task's budget on an answer (`Client::serve` makes each one
/// pay): a read of 16 KiB may bring four hundred pipelined requests, and answering them
/// all before the next `.await` would hold the thread however few reads it took. `Pending`,
/// woken for next turn, once the budget is spent (Tokio's `consume_budget`).
pub async fn consume_budget() {
    poll_fn(spend).await;
}
// ANCHOR_END: budget

// ANCHOR: waker
/// What a task's `Waker` does: put the task back in the run queue, once. A task woken
/// twice before it runs again (its socket and its timer, say) runs once.
struct TaskWaker {
    id: u64,
    queued: AtomicBool,
    run_queue: RunQueue,
    /// The loop's thread, and the self-pipe that wakes it from any other thread.
    home: usize,
    doorbell: Arc<SelfPipe>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.run_queue.lock().unwrap_or_else(PoisonError::into_inner).push_back(self.id);
            // Woken from another thread (a pool worker): the loop may be asleep in epoll,
            // where a queue it cannot see would not wake it. Ring.
            if this_thread() != self.home {
                self.doorbell.wake();
            }
        }
    }
}

thread_local! {
    static HERE: u8 = const { 0 };
}

/// Names the running thread, cheaply: where its own copy of a thread-local lives.
/// (`thread::current().id()` says the same, at the price of an `Arc` to clone.)
fn this_thread() -> usize {
    HERE.with(|here| here as *const u8 as usize)
}
// ANCHOR_END: waker

// ANCHOR: executor
pub struct Executor {
    /// Every task not yet finished, with the waker that wakes it.
    tasks: BTreeMap<u64, (Task, Arc<TaskWaker>)>,
    run_queue: RunQueue,
    /// The tasks taken from the run queue to poll this turn.
    woken: VecDeque<u64>,
    next_id: u64,
    doorbell: Arc<SelfPipe>,
}

impl Executor {
    pub fn new() -> io::Result<Executor> {
        Ok(Executor {
            tasks: BTreeMap::new(),
            run_queue: RunQueue::default(),
            woken: VecDeque::new(),
            next_id: 0,
            doorbell: reactor::doorbell()?,
        })
    }

    /// One turn: waits until a socket is ready or a timer is due (at most `timeout`;
    /// `None`: no limit of its own), which wakes their tasks, then runs the woken tasks.
    pub fn turn(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        // Tasks spawned or woken already: look, but do not sleep.
        let woken = !self.run_queue.lock().unwrap_or_else(PoisonError::into_inner).is_empty();
        let ready = woken || SPAWNED.with(|spawned| !spawned.borrow().is_empty());
        let timeout = if ready { Some(Duration::ZERO) } else { time::until_next(timeout) };
        reactor::wait(timeout)?; // wakes the tasks whose sockets are ready
        time::wake_due(); // and those whose timers are due
        TURNS.set(TURNS.get() + 1);
        self.run_ready();
        Ok(())
    }

    /// Polls every task that is ready: new ones, and those woken before this turn began.
    /// A task woken while this runs waits for the next turn, so none can starve the rest.
    fn run_ready(&mut self) {
        for task in SPAWNED.with(|spawned| std::mem::take(&mut *spawned.borrow_mut())) {
            let id = self.next_id;
            self.next_id += 1;
            let waker = Arc::new(TaskWaker {
                id,
                queued: AtomicBool::new(false),
                run_queue: self.run_queue.clone(),
                home: this_thread(),
                doorbell: self.doorbell.clone(),
            });
            self.tasks.insert(id, (task, waker.clone()));
            waker.wake(); // to run for the first time
        }
        // Swapped with an empty queue kept for the purpose: no allocation, turn after turn.
        std::mem::swap(
            &mut *self.run_queue.lock().unwrap_or_else(PoisonError::into_inner),
            &mut self.woken,
        );
        while let Some(id) = self.woken.pop_front() {
            // Gone already: a task finished before a late wake-up came. Nothing to do.
            let Some((task, task_waker)) = self.tasks.get_mut(&id) else { continue };
            task_waker.queued.store(false, Ordering::Release); // a wake from now on counts
            let waker = Waker::from(task_waker.clone());
            let mut context = Context::from_waker(&waker);
            BUDGET.set(BUDGET_PER_POLL);
            // A task that panics is a bug in that task: it ends, and the others go on.
            match panic::catch_unwind(AssertUnwindSafe(|| task.as_mut().poll(&mut context))) {
                Ok(Poll::Pending) => {}
                Ok(Poll::Ready(())) => drop(self.tasks.remove(&id)), // drops all it held
                Err(_) => {
                    log!("a task panicked; dropping it");
                    self.tasks.remove(&id);
                }
            }
        }
    }
}

/// How many turns the loop has taken (for `/stats`).
pub fn turns() -> u64 {
    TURNS.get()
}
// ANCHOR_END: executor
