//! A pool of threads for the work the loop must not do itself: blocking calls.
//!
//! `poll` cannot wait for a file: to the kernel a regular file is always "ready", and then
//! `read` blocks anyway, as long as the disk takes. So, like libuv (Node.js), we hand such
//! work to a few threads. The loop `submit`s a job to a queue; a worker takes it, runs it,
//! and sends the result back on a channel, then wakes the loop through a [`Waker`] (the
//! self-pipe of chapter 3, now written to by a thread instead of a signal handler). The
//! loop watches the waker like any socket, and collects the results with `finished`.
//!
//! Only the jobs and their results cross between threads. The loop's own state stays on
//! the loop's thread: no locks anywhere else.

use std::collections::VecDeque;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

use shared::trace;
use shared::waker::Waker;

/// Names one job, so that its result can find whoever waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobId(u64);

/// A job: a blocking call, and what it returns.
type Work<R> = Box<dyn FnOnce() -> R + Send>;

/// What the workers share, under one lock: the jobs waiting for a worker, and how many are
/// running.
struct Queue<R> {
    waiting: VecDeque<(JobId, Work<R>)>,
    running: usize,
}

// ANCHOR: pool
pub struct ThreadPool<R> {
    queue: Arc<(Mutex<Queue<R>>, Condvar)>,
    /// Results come back here: the job's value, or `Err` if it panicked.
    finished: Receiver<(JobId, thread::Result<R>)>,
    waker: Arc<Waker>,
    next_id: u64,
    queue_limit: usize,
}
// ANCHOR_END: pool

/// Every job a worker may run: none would hold the lock while it panicked, so a poisoned
/// lock (a panic while it was held) can only come from a bug here; go on regardless.
fn lock<R>(queue: &Mutex<Queue<R>>) -> MutexGuard<'_, Queue<R>> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Send + 'static> ThreadPool<R> {
    /// Starts `workers` threads. At most `queue_limit` jobs may wait for one of them.
    pub fn new(workers: usize, queue_limit: usize) -> io::Result<ThreadPool<R>> {
        let queue = Queue { waiting: VecDeque::new(), running: 0 };
        let queue = Arc::new((Mutex::new(queue), Condvar::new()));
        let waker = Arc::new(Waker::new()?);
        let (results, finished) = mpsc::channel();
        // The workers are never joined: when `main` returns the process ends, and they
        // with it, so a worker stuck in a call that never returns cannot hold up the exit.
        for number in 0..workers {
            let (queue, results, waker) = (queue.clone(), results.clone(), waker.clone());
            let worker = thread::Builder::new().name(format!("pool-worker-{number}"));
            worker.spawn(move || work(number, &queue, &results, &waker))?;
        }
        Ok(ThreadPool { queue, finished, waker, next_id: 0, queue_limit })
    }

    // ANCHOR: submit
    /// Queues `job` for a worker. `None` when `queue_limit` jobs wait already: queueing
    /// more would only make them all wait longer, and cost memory without limit.
    pub fn submit(&mut self, job: impl FnOnce() -> R + Send + 'static) -> Option<JobId> {
        let (queue, work_ready) = &*self.queue;
        let mut queue = lock(queue);
        if queue.waiting.len() >= self.queue_limit {
            return None;
        }
        let id = JobId(self.next_id);
        self.next_id += 1;
        queue.waiting.push_back((id, Box::new(job)));
        work_ready.notify_one();
        Some(id)
    }
    // ANCHOR_END: submit
}

impl<R> ThreadPool<R> {
    // ANCHOR: finished
    /// The results that have come back since the last call. First the waker is emptied,
    /// then the results taken: a result that comes in between also wakes the loop again,
    /// so none is ever left behind unseen (the other order could lose a wake-up).
    pub fn finished(&self) -> Vec<(JobId, thread::Result<R>)> {
        self.waker.drain();
        self.finished.try_iter().collect()
    }
    // ANCHOR_END: finished

    /// The loop watches this: readable when results have come back.
    pub fn waker(&self) -> Arc<Waker> {
        self.waker.clone()
    }

    /// Jobs waiting for a worker, and jobs running (for `/stats`).
    pub fn load(&self) -> (usize, usize) {
        let queue = lock(&self.queue.0);
        (queue.waiting.len(), queue.running)
    }
}

// ANCHOR: work
/// A worker's life: take a job, run it, send back the result, wake the loop; again.
fn work<R>(
    number: usize, queue: &(Mutex<Queue<R>>, Condvar),
    results: &Sender<(JobId, thread::Result<R>)>, waker: &Waker,
) {
    let (queue, work_ready) = queue;
    loop {
        let (id, job) = {
            let mut jobs = lock(queue);
            loop {
                if let Some(next) = jobs.waiting.pop_front() {
                    jobs.running += 1;
                    break next;
                }
                jobs = work_ready.wait(jobs).unwrap_or_else(PoisonError::into_inner);
            }
        };
        trace!("pool: worker {number} starts {id:?}");
        // A job that panics costs its own result (an `Err`), not the worker.
        let result = panic::catch_unwind(AssertUnwindSafe(job));
        lock(queue).running -= 1;
        if results.send((id, result)).is_err() {
            return; // the pool is gone
        }
        waker.wake();
    }
}
// ANCHOR_END: work
