//! A pool of threads for the work the loop must not do itself: blocking calls.
//!
//! `poll` cannot wait for a file: to the kernel a regular file is always "ready", and then
//! `read` blocks as long as the disk takes. So, like libuv (Node.js), the loop `submit`s
//! such work to a queue, and a worker runs it. Chapters 6 and 7 had the worker send the
//! result back on a channel and wake the loop through a self-pipe of the pool's own. Here
//! a job carries its own way back: the waker of the task that waits for it (see `fs.rs`).
//! Only jobs cross threads: the loop's state does not.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

use shared::trace;

/// A job: a blocking call, which delivers its own result (a panic included: see `fs.rs`).
type Job = Box<dyn FnOnce() + Send>;

/// What the workers share, under one lock: the jobs waiting, and how many are running.
struct Queue {
    waiting: VecDeque<Job>,
    running: usize,
}

// ANCHOR: pool
pub struct ThreadPool {
    queue: Arc<(Mutex<Queue>, Condvar)>,
}
// ANCHOR_END: pool

/// No job runs under the lock, so a poisoned lock (a panic while it was held) can only come
/// from a bug here; go on regardless.
fn lock(queue: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ThreadPool {
    /// Starts `workers` threads.
    pub fn new(workers: usize) -> io::Result<ThreadPool> {
        let queue = Queue { waiting: VecDeque::new(), running: 0 };
        let queue = Arc::new((Mutex::new(queue), Condvar::new()));
        // The workers are never joined: when `main` returns the process ends, and they
        // with it, so a worker stuck in a call that never returns cannot hold up the exit.
        for number in 0..workers {
            let queue = queue.clone();
            let worker = thread::Builder::new().name(format!("pool-worker-{number}"));
            worker.spawn(move || work(&queue))?;
        }
        Ok(ThreadPool { queue })
    }

    // ANCHOR: submit
    /// Queues `job` for a worker.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) {
        let (queue, work_ready) = &*self.queue;
        lock(queue).waiting.push_back(Box::new(job));
        work_ready.notify_one();
    }
    // ANCHOR_END: submit

    /// Jobs waiting for a worker, and jobs running (for `/stats`).
    pub fn load(&self) -> (usize, usize) {
        let queue = lock(&self.queue.0);
        (queue.waiting.len(), queue.running)
    }
}

// ANCHOR: work
/// A worker's life: take a job, run it (it delivers its own result); again.
fn work(queue: &(Mutex<Queue>, Condvar)) {
    let (queue, work_ready) = queue;
    loop {
        let jobs = work_ready.wait_while(lock(queue), |jobs| jobs.waiting.is_empty());
        let mut jobs = jobs.unwrap_or_else(PoisonError::into_inner);
        let Some(job) = jobs.waiting.pop_front() else { continue }; // never empty here
        jobs.running += 1;
        drop(jobs); // unlock before the job runs
        trace!("pool: starts a job");
        job();
        trace!("pool: finished a job");
        lock(queue).running -= 1;
    }
}
// ANCHOR_END: work
