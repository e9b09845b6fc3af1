//! A pool of threads for the work the loop must not do itself: blocking calls.
//!
//! `poll` cannot wait for a file: to the kernel a regular file is always "ready", and then
//! `read` blocks as long as the disk takes. So, like libuv (Node.js), the loop `submit`s
//! such work to a queue; a worker runs it, sends the result back on a channel, and wakes
//! the loop through a [`Waker`] (chapter 3's self-pipe, written by a thread this time),
//! watched like any socket. Only jobs and results cross threads: the loop's state does not.

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

/// What the workers share, under one lock: the jobs waiting, and how many are running.
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
    workers: usize,
    queue_limit: usize,
}
// ANCHOR_END: pool

/// No job runs under the lock, so a poisoned lock (a panic while it was held) can only come
/// from a bug here; go on regardless.
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
            worker.spawn(move || work(&queue, &results, &waker))?;
        }
        Ok(ThreadPool { queue, finished, waker, next_id: 0, workers, queue_limit })
    }

    // ANCHOR: submit
    /// Queues `job` for a worker. `None` when every worker is busy and `queue_limit` jobs
    /// wait already: queueing more would only make them all wait longer, and cost memory
    /// without limit.
    pub fn submit(&mut self, job: impl FnOnce() -> R + Send + 'static) -> Option<JobId> {
        let (waiting, running) = self.load(); // only this thread adds jobs: it stays true
        if waiting + running >= self.workers + self.queue_limit {
            return None;
        }
        Some(self.submit_anyway(job))
    }

    /// Queues `job` however long the queue: for work already promised (the rest of a
    /// download whose head has gone out), which the limit must not cut short.
    pub fn submit_anyway(&mut self, job: impl FnOnce() -> R + Send + 'static) -> JobId {
        let (queue, work_ready) = &*self.queue;
        let id = JobId(self.next_id);
        self.next_id += 1;
        lock(queue).waiting.push_back((id, Box::new(job)));
        work_ready.notify_one();
        id
    }
    // ANCHOR_END: submit
}

impl<R> ThreadPool<R> {
    // ANCHOR: finished
    /// The results that have come back. The waker is emptied first: a result that comes just
    /// after still wakes the loop again (the other order could lose a wake-up).
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
    queue: &(Mutex<Queue<R>>, Condvar), results: &Sender<(JobId, thread::Result<R>)>, waker: &Waker,
) {
    let (queue, work_ready) = queue;
    loop {
        let jobs = work_ready.wait_while(lock(queue), |jobs| jobs.waiting.is_empty());
        let mut jobs = jobs.unwrap_or_else(PoisonError::into_inner);
        let Some((id, job)) = jobs.waiting.pop_front() else { continue }; // never empty here
        jobs.running += 1;
        drop(jobs); // unlock before the job runs
        trace!("pool: starts {id:?}");
        // A job that panics costs its own result (an `Err`), not the worker.
        let result = panic::catch_unwind(AssertUnwindSafe(job));
        trace!("pool: finished {id:?}");
        lock(queue).running -= 1;
        if results.send((id, result)).is_err() {
            return; // the pool is gone
        }
        waker.wake();
    }
}
// ANCHOR_END: work

#[cfg(test)]
#[path = "thread_pool_tests.rs"]
mod tests;
