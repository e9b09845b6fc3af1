//! A pool of threads for the work the loop must not do itself: blocking calls.
//!
//! `poll` cannot wait for a file: to the kernel a regular file is always "ready", and then
//! `read` blocks as long as the disk takes. So, like libuv (Node.js), the loop `submit`s
//! such work to a queue; a worker runs it, leaves the result beside the queue, and rings the
//! loop's `doorbell`, a [`SelfPipe`] watched like any socket. Only jobs and results cross.

use std::collections::VecDeque;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

use shared::self_pipe::SelfPipe;
use shared::trace;

/// Names one job, so that its result can find whoever waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobId(u64);

/// A job: a blocking call, and what it returns.
type Job<R> = Box<dyn FnOnce() -> R + Send>;

/// What the workers and the loop share, under one lock: the jobs queued, how many are
/// running, and the results the loop has yet to take (`Err` if the job panicked).
struct Queue<R> {
    queued: VecDeque<(JobId, Job<R>)>,
    running: usize,
    finished: Vec<(JobId, thread::Result<R>)>,
}

// ANCHOR: pool
pub struct ThreadPool<R> {
    queue: Arc<(Mutex<Queue<R>>, Condvar)>,
    /// The loop watches it: readable when results have come back.
    pub doorbell: Arc<SelfPipe>,
    next_id: u64,
}
// ANCHOR_END: pool

/// No job runs under the lock, so a poisoned lock (a panic while it was held) can only come
/// from a bug here; go on regardless.
fn lock<R>(queue: &Mutex<Queue<R>>) -> MutexGuard<'_, Queue<R>> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Send + 'static> ThreadPool<R> {
    /// Starts `workers` threads.
    pub fn new(workers: usize) -> io::Result<ThreadPool<R>> {
        let queue = Queue { queued: VecDeque::new(), running: 0, finished: Vec::new() };
        let queue = Arc::new((Mutex::new(queue), Condvar::new()));
        let doorbell = Arc::new(SelfPipe::new()?);
        // The workers are never joined: when `main` returns the process ends, and they
        // with it, so a worker stuck in a call that never returns cannot hold up the exit.
        for number in 0..workers {
            let (queue, doorbell) = (queue.clone(), doorbell.clone());
            let worker = thread::Builder::new().name(format!("pool-worker-{number}"));
            worker.spawn(move || work(&queue, &doorbell))?;
        }
        Ok(ThreadPool { queue, doorbell, next_id: 0 })
    }

    // ANCHOR: submit
    /// Queues `job` for a worker. The queue has no limit of its own: each connection waits
    /// on at most one job, so the connections bound it (as in libuv).
    pub fn submit(&mut self, job: impl FnOnce() -> R + Send + 'static) -> JobId {
        let (queue, work_ready) = &*self.queue;
        let id = JobId(self.next_id);
        self.next_id += 1;
        lock(queue).queued.push_back((id, Box::new(job)));
        work_ready.notify_one();
        id
    }
    // ANCHOR_END: submit

    // ANCHOR: finished
    /// The results that have come back. The doorbell is emptied first: a result that comes just
    /// after still wakes the loop again (the other order could lose a wake-up).
    pub fn finished(&self) -> Vec<(JobId, thread::Result<R>)> {
        self.doorbell.drain();
        std::mem::take(&mut lock(&self.queue.0).finished)
    }
    // ANCHOR_END: finished

    /// Jobs queued for a worker, and jobs running (for `/stats`).
    pub fn load(&self) -> (usize, usize) {
        let queue = lock(&self.queue.0);
        (queue.queued.len(), queue.running)
    }
}

// ANCHOR: work
/// A worker's life: take a job, run it, leave the result, ring the loop's doorbell; again.
fn work<R>(queue: &(Mutex<Queue<R>>, Condvar), doorbell: &SelfPipe) {
    let (queue, work_ready) = queue;
    loop {
        let jobs = work_ready.wait_while(lock(queue), |jobs| jobs.queued.is_empty());
        let mut jobs = jobs.unwrap_or_else(PoisonError::into_inner);
        let Some((id, job)) = jobs.queued.pop_front() else { continue }; // never empty here
        jobs.running += 1;
        drop(jobs); // unlock before the job runs
        trace!("pool: starts {id:?}");
        // A job that panics costs its own result (an `Err`), not the worker.
        let result = panic::catch_unwind(AssertUnwindSafe(job));
        trace!("pool: finished {id:?}");
        let mut jobs = lock(queue);
        jobs.running -= 1;
        jobs.finished.push((id, result));
        drop(jobs); // unlock before waking: the loop may be waiting for the lock
        doorbell.wake();
    }
}
// ANCHOR_END: work

#[cfg(test)]
#[path = "thread_pool_tests.rs"]
mod tests;
