//! The thread pool: where blocking work goes so the event loop never waits for it.
//!
//! A socket can tell `poll` when it is ready; a file on disk cannot. Linux always calls a
//! regular file "ready", and then `open` or `read` blocks for as long as the disk takes
//! (try `--fs-delay-ms 500`). So, like libuv under Node.js, we hand file work to a few
//! threads and let the loop get on with everyone else meanwhile.
//!
//! The loop stays single-threaded. The pool touches none of its state: a job is a plain
//! closure that goes out to a worker, and its result comes back as a [`Completion`] tagged
//! with the [`JobId`] that [`ThreadPool::submit`] returned. The trip looks like this:
//!
//! ```text
//!  loop thread                                   worker threads (--workers, default 4)
//!  -----------                                   -------------------------------------
//!  submit(job) ---> [ jobs: VecDeque ] ---------> pop a job, run it (catch panics)
//!                                                      |
//!  poll() says the waker is readable  <-- Waker <--- 2. wake the loop
//!  drain_completions() <--- [ completions: Vec ] <-- 1. push (id, result)
//!  id -> Deferred, resolve it, on the loop thread
//! ```
//!
//! The pool knows nothing about promises; the loop keeps a map from `JobId` to whatever
//! waits for the result (a `Deferred`) and resolves it on its own thread, so promise
//! callbacks never run on a worker. It is generic over the result type `R`: chapter 6 picks
//! an enum of file results, the tests pick numbers.
//!
//! Limits are a feature here: `--workers` caps how many blocking calls hit the disk at
//! once, and `--queue-limit` caps how many may wait for a worker; past it, `submit` says
//! [`SubmitError::QueueFull`] and the server answers 503 instead of queueing without end.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

use shared::trace;

use crate::waker::Waker;

// ANCHOR: job_types
/// What a worker runs: any closure that can move to another thread and returns an `R`.
type Job<R> = Box<dyn FnOnce() -> R + Send>;

/// Names one submitted job, so its result can be matched with whoever waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobId(u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job {}", self.0)
    }
}

/// A finished job, handed back to the loop thread.
#[derive(Debug)]
pub struct Completion<R> {
    pub id: JobId,
    /// What the job returned, or `Err` if it panicked (the request gets a 500).
    pub result: Result<R, JobPanicked>,
}

/// The job panicked. The worker caught the panic and carries on with the next job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPanicked {
    /// The panic message, when it was a string (it nearly always is).
    pub message: String,
}
// ANCHOR_END: job_types

impl fmt::Display for JobPanicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the job panicked: {}", self.message)
    }
}

/// Why [`ThreadPool::submit`] refused a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// `--queue-limit` jobs are already waiting for a worker (the server answers 503).
    QueueFull,
    /// [`ThreadPool::shutdown`] has begun; no new work is taken.
    ShutDown,
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitError::QueueFull => write!(f, "too many jobs are waiting for a worker"),
            SubmitError::ShutDown => write!(f, "the thread pool is shutting down"),
        }
    }
}

// ANCHOR: pool_state
/// The jobs waiting for a worker, behind one lock with the flags that go with them.
struct JobQueue<R> {
    jobs: VecDeque<(JobId, Job<R>)>,
    next_id: u64,
    /// Set by `shutdown`, which empties `jobs` at the same time: take no new jobs, and
    /// workers leave.
    shutting_down: bool,
}

/// Everything the loop thread and the workers share (each worker holds an `Arc` of it).
struct Shared<R> {
    queue: Mutex<JobQueue<R>>,
    /// Workers with nothing to do sleep here; `submit` and `shutdown` wake them.
    job_ready: Condvar,
    /// Finished jobs, waiting for the loop thread to collect them.
    completions: Mutex<Vec<Completion<R>>>,
    /// Made readable after every push to `completions`.
    waker: Waker,
    /// Jobs a worker has taken and not yet finished. A worker counts a job in under the
    /// queue's lock and out under the completions lock (see `worker_loop`), so no one lock
    /// guards it: hence an atomic. (SeqCst: the easiest ordering to reason about, and its
    /// cost is nothing next to a disk read.)
    running: AtomicUsize,
}

/// A fixed set of worker threads running blocking jobs for the event loop.
pub struct ThreadPool<R> {
    shared: Arc<Shared<R>>,
    /// Taken (emptied) by the first `shutdown`; behind a lock so `shutdown` needs only
    /// `&self`, which lets the loop keep the pool in an `Rc` beside its callbacks.
    workers: Mutex<Vec<JoinHandle<()>>>,
    worker_count: usize,
    queue_limit: usize,
}
// ANCHOR_END: pool_state

/// Locks a mutex, even if a thread panicked while holding it. Our jobs never run under a
/// lock and the pool's own code under its locks cannot panic, so a poisoned lock would
/// still hold consistent data; refusing it would only turn one failure into two.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Send + 'static> ThreadPool<R> {
    /// Starts `workers` threads. Up to `queue_limit` further jobs may wait for one of them.
    pub fn new(workers: usize, queue_limit: usize) -> io::Result<ThreadPool<R>> {
        if workers == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a thread pool needs at least one worker",
            ));
        }
        let shared = Arc::new(Shared {
            queue: Mutex::new(JobQueue { jobs: VecDeque::new(), next_id: 0, shutting_down: false }),
            job_ready: Condvar::new(),
            completions: Mutex::new(Vec::new()),
            waker: Waker::new()?,
            running: AtomicUsize::new(0),
        });
        let pool = ThreadPool {
            shared,
            workers: Mutex::new(Vec::with_capacity(workers)),
            worker_count: workers,
            queue_limit,
        };
        for number in 0..workers {
            let shared = Arc::clone(&pool.shared);
            // If the system refuses a thread, `?` returns early and dropping `pool` shuts
            // down (and joins) the workers we already started: nothing leaks.
            let handle = thread::Builder::new()
                .name(format!("pool-worker-{number}"))
                .spawn(move || worker_loop(&shared, number))?;
            lock(&pool.workers).push(handle);
        }
        Ok(pool)
    }

    // ANCHOR: submit
    /// Queues `job` for a worker and returns at once with the id its result will carry.
    pub fn submit<F>(&self, job: F) -> Result<JobId, SubmitError>
    where
        F: FnOnce() -> R + Send + 'static,
    {
        let mut queue = lock(&self.shared.queue);
        if queue.shutting_down {
            return Err(SubmitError::ShutDown);
        }
        // A job that an idle worker will pick up straight away is not really waiting, so
        // the limit counts only jobs beyond the workers: with 4 workers all busy and
        // `--queue-limit 256`, the 257th waiting job is refused. (This way even
        // `--queue-limit 0` works: jobs run only when a worker is free.)
        let running = self.shared.running.load(Ordering::SeqCst);
        if queue.jobs.len() + running >= self.worker_count + self.queue_limit {
            return Err(SubmitError::QueueFull);
        }
        let id = JobId(queue.next_id);
        queue.next_id += 1;
        queue.jobs.push_back((id, Box::new(job)));
        drop(queue); // Unlock first, so the worker we wake does not wake into a held lock.
        self.shared.job_ready.notify_one();
        Ok(id)
    }
    // ANCHOR_END: submit
}

impl<R> ThreadPool<R> {
    // ANCHOR: drain
    /// Collects every job that finished since the last call. The loop calls this each time
    /// `poll` reports the [`waker`](ThreadPool::waker) readable; it never blocks.
    ///
    /// The order of the two steps is what guarantees no completion is ever lost:
    ///
    /// 1. reset the waker (read the eventfd, so it is no longer readable), *then*
    /// 2. take everything in the completion queue.
    ///
    /// A worker does the mirror image: push its completion, *then* wake. Take any
    /// completion: if it was pushed before step 2, step 2 takes it now. If it was pushed
    /// after step 2, then its wake came after step 2 too, so after step 1: the waker is
    /// readable again and the next turn of the loop collects it. Either way it arrives.
    ///
    /// The other order (take, then reset) has a hole: a worker pushes just after we took,
    /// wakes just before we reset, our reset wipes its wake, and that completion sits in
    /// the queue until some later job happens to wake us. A request would hang.
    ///
    /// The safe order sometimes costs a wake-up for nothing (a completion pushed between
    /// steps 1 and 2 is taken now, yet its wake leaves the waker readable): the next
    /// drain simply returns an empty list. Harmless, and far better than losing one.
    pub fn drain_completions(&self) -> Vec<Completion<R>> {
        if let Err(error) = self.shared.waker.reset() {
            // Cannot happen with an eventfd we own; if it did, draining anyway is still
            // right: at worst the waker stays readable and we drain again next turn.
            trace!("pool: resetting the waker failed: {error}");
        }
        std::mem::take(&mut *lock(&self.shared.completions))
    }
    // ANCHOR_END: drain

    /// The descriptor to register with `poll` for readability: readable means "call
    /// [`drain_completions`](ThreadPool::drain_completions)".
    pub fn waker(&self) -> &Waker {
        &self.shared.waker
    }

    /// Jobs waiting for a worker (for `/stats`).
    pub fn queued(&self) -> usize {
        lock(&self.shared.queue).jobs.len()
    }

    /// Jobs a worker is running right now (for `/stats`).
    pub fn running(&self) -> usize {
        self.shared.running.load(Ordering::SeqCst)
    }

    // ANCHOR: pool_shutdown
    /// Stops taking jobs, drops the jobs still waiting for a worker without running them,
    /// and waits for the workers to finish the jobs they are running and exit. Those last
    /// completions stay behind for one last `drain_completions`. Calling it again does
    /// nothing.
    ///
    /// Why drop the waiting jobs? Whoever submitted them is shutting down too, and will
    /// not read their results; running them all could take minutes (256 queued jobs on 4
    /// workers at `--fs-delay-ms 1000`: over a minute). A running job cannot be stopped in
    /// the middle of a system call, so it is waited for: this blocks for at most one job's
    /// time.
    pub fn shutdown(&self) {
        {
            let mut queue = lock(&self.shared.queue);
            queue.shutting_down = true;
            // Under the same lock as the flag, so no worker takes a job after this: each
            // job is dropped unrun, and with it what it captured (a path, an open `File`).
            queue.jobs.clear();
        }
        // Every sleeping worker must wake to see the flag, not just one.
        self.shared.job_ready.notify_all();
        let workers = std::mem::take(&mut *lock(&self.workers));
        for worker in workers {
            // A worker only ends by returning from `worker_loop` (job panics are caught),
            // so an error here would be a bug in the pool itself: report it, carry on.
            if worker.join().is_err() {
                eprintln!("thread pool: a worker thread panicked outside a job");
            }
        }
    }
    // ANCHOR_END: pool_shutdown
}

/// Dropping the pool shuts it down the same way: waiting jobs are dropped, running ones
/// finish, threads are joined.
impl<R> Drop for ThreadPool<R> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

// ANCHOR: worker_loop
/// What each worker thread does until shutdown: take a job, run it, hand back the result.
fn worker_loop<R>(shared: &Shared<R>, number: usize) {
    loop {
        // Wait for a job. The `loop` around `wait` is needed: a condition variable may
        // wake us with nothing to do (another worker took the job first, or a spurious
        // wake-up), so we check again every time.
        let (id, job) = {
            let mut queue = lock(&shared.queue);
            loop {
                if let Some(next) = queue.jobs.pop_front() {
                    // Counted as running before the lock is released, so `submit` never
                    // sees a job that is in neither `jobs` nor `running`.
                    shared.running.fetch_add(1, Ordering::SeqCst);
                    break next;
                }
                // Shutdown empties the queue as it sets the flag: nothing is left to take.
                if queue.shutting_down {
                    return;
                }
                queue = shared.job_ready.wait(queue).unwrap_or_else(PoisonError::into_inner);
            }
        };
        trace!("pool: worker {number} starts {id}");

        // Run the job with no lock held, catching a panic so that one bad job costs one
        // request a 500, not a worker (a pool that loses a thread per panic soon has none).
        // AssertUnwindSafe: the job owns everything it touches and is gone afterwards, so
        // nobody can observe state it left half-updated.
        let result = panic::catch_unwind(AssertUnwindSafe(job)).map_err(|payload| {
            let message = match payload.downcast::<String>() {
                Ok(text) => *text,
                Err(payload) => match payload.downcast::<&'static str>() {
                    Ok(text) => text.to_string(),
                    Err(_) => "(not a string)".to_string(),
                },
            };
            JobPanicked { message }
        });
        trace!("pool: worker {number} finished {id}");

        // Push, THEN wake: see `drain_completions` for why this order loses nothing.
        // The job stops counting as running in the same step, under the same lock. After
        // the push, so that "nothing queued and nothing running" means every completion
        // has been pushed. Under the lock, so that the loop, which takes completions under
        // it too, never sees a finished job still counted as running: a chain that submits
        // its next job as soon as this one is settled (`read` after `open`) must not be
        // refused for a full pool that is only full of jobs already done.
        {
            let mut completions = lock(&shared.completions);
            completions.push(Completion { id, result });
            shared.running.fetch_sub(1, Ordering::SeqCst);
        }
        if let Err(error) = shared.waker.wake() {
            eprintln!("thread pool: could not wake the event loop: {error}");
        }
    }
}
// ANCHOR_END: worker_loop

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::collections::HashMap;
    use std::os::fd::AsFd;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// No test may take longer than this, whatever goes wrong.
    const DEADLINE: Duration = Duration::from_secs(10);

    /// Waits up to `until` for the waker to become readable. This is the loop's `poll`.
    fn wait_readable<R>(pool: &ThreadPool<R>, until: Instant) -> bool {
        let left = until.saturating_duration_since(Instant::now());
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(pool.waker().as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(ready) => ready == 1,
            Err(nix::errno::Errno::EINTR) => false,
            Err(error) => panic!("poll: {error}"),
        }
    }

    /// What the event loop does, in miniature: poll the waker, drain, repeat, until
    /// `count` completions have arrived. Panics (instead of hanging) past the deadline,
    /// which is exactly what a lost completion would cause.
    fn collect<R>(pool: &ThreadPool<R>, count: usize) -> Vec<Completion<R>> {
        let until = Instant::now() + DEADLINE;
        let mut done = Vec::new();
        while done.len() < count {
            assert!(Instant::now() < until, "only {} of {count} completions arrived", done.len());
            if wait_readable(pool, until) {
                done.extend(pool.drain_completions());
            }
        }
        done
    }

    /// Spins (politely) until `condition` holds; fails the test past the deadline. (The
    /// tests of `fs.rs` use it too.)
    pub(crate) fn wait_until(what: &str, condition: impl Fn() -> bool) {
        let until = Instant::now() + DEADLINE;
        while !condition() {
            assert!(Instant::now() < until, "timed out waiting for {what}");
            thread::yield_now();
        }
    }

    /// A job that tells us it started, then waits until we let it go: a worker held busy.
    fn gate() -> (mpsc::Receiver<()>, mpsc::Sender<()>, impl FnOnce() -> u32) {
        let (started_tx, started_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let job = move || {
            let _ = started_tx.send(());
            // A timeout, not a hang, if the test fails before releasing us.
            let _ = release_rx.recv_timeout(DEADLINE);
            0
        };
        (started_rx, release_tx, job)
    }

    #[test]
    fn results_come_back_with_their_ids() {
        let pool = ThreadPool::new(4, 256).expect("pool");
        let mut expected = HashMap::new();
        for n in 0..50u64 {
            let id = pool.submit(move || n * n).expect("submit");
            expected.insert(id, n * n);
        }
        for completion in collect(&pool, 50) {
            let wanted = expected.remove(&completion.id).expect("a known id, once");
            assert_eq!(completion.result, Ok(wanted));
        }
        assert!(expected.is_empty());
    }

    #[test]
    fn workers_run_jobs_at_the_same_time_and_never_more_than_workers() {
        const WORKERS: usize = 4;
        let active = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let pool = ThreadPool::new(WORKERS, 256).expect("pool");
        for _ in 0..WORKERS * 3 {
            let (active, peak) = (Arc::clone(&active), Arc::clone(&peak));
            pool.submit(move || {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // Stay busy until all the workers have been busy at once. A pool that ran
                // jobs one at a time would never get there and would time out instead.
                let until = Instant::now() + DEADLINE;
                while peak.load(Ordering::SeqCst) < WORKERS && Instant::now() < until {
                    thread::yield_now();
                }
                active.fetch_sub(1, Ordering::SeqCst);
                peak.load(Ordering::SeqCst)
            })
            .expect("submit");
        }
        for completion in collect(&pool, WORKERS * 3) {
            assert_eq!(completion.result, Ok(WORKERS), "every job saw all workers busy");
        }
        assert_eq!(peak.load(Ordering::SeqCst), WORKERS, "never more than the workers");
    }

    #[test]
    fn a_panicking_job_gets_an_error_and_the_worker_lives_on() {
        let pool = ThreadPool::new(1, 8).expect("pool"); // one worker: it must survive
        let bad = pool.submit(|| -> u32 { panic!("boom") }).expect("submit");
        let good = pool.submit(|| 7).expect("submit");
        let mut results: HashMap<JobId, Result<u32, JobPanicked>> =
            collect(&pool, 2).into_iter().map(|c| (c.id, c.result)).collect();
        let panicked = results.remove(&bad).expect("the bad job's result");
        assert_eq!(panicked.expect_err("an error").message, "boom");
        assert_eq!(results.remove(&good), Some(Ok(7)));
    }

    #[test]
    fn a_full_queue_refuses_jobs() {
        let pool = ThreadPool::new(1, 2).expect("pool");
        let (started, release, job) = gate();
        pool.submit(job).expect("the worker is free");
        started.recv_timeout(DEADLINE).expect("the gate job started");
        // The only worker is busy: two jobs may wait, the third may not.
        pool.submit(|| 1).expect("first waiting job");
        pool.submit(|| 2).expect("second waiting job");
        assert_eq!(pool.submit(|| 3), Err(SubmitError::QueueFull));
        assert_eq!((pool.queued(), pool.running()), (2, 1));
        release.send(()).expect("release the gate");
        collect(&pool, 3);
        pool.submit(|| 4).expect("room again once the queue has drained");
        collect(&pool, 1);
    }

    #[test]
    fn a_zero_queue_limit_still_runs_jobs_on_free_workers() {
        let pool = ThreadPool::new(1, 0).expect("pool");
        let (started, release, job) = gate();
        pool.submit(job).expect("the worker is free");
        assert_eq!(pool.submit(|| 1), Err(SubmitError::QueueFull));
        started.recv_timeout(DEADLINE).expect("the gate job started");
        release.send(()).expect("release the gate");
        collect(&pool, 1);
    }

    #[test]
    fn a_job_submitted_once_the_last_one_is_drained_finds_its_worker_free() {
        // One worker and no queue: a job is taken only if the worker is free. The loop
        // sees a completion only once its worker counts as free, so the next step of a
        // chain (submitted the moment the last one is drained) is never refused. Many
        // rounds, since a worker preempted between pushing and counting would show up
        // only now and then.
        let pool = ThreadPool::new(1, 0).expect("pool");
        for round in 0..2_000u32 {
            pool.submit(move || round).unwrap_or_else(|error| panic!("round {round}: {error}"));
            let done = collect(&pool, 1);
            assert_eq!(done[0].result, Ok(round));
        }
    }

    #[test]
    fn many_completions_share_one_wake_up() {
        let pool = ThreadPool::new(4, 256).expect("pool");
        for n in 0..100 {
            pool.submit(move || n).expect("submit");
        }
        // Let every job finish before the "loop" looks (a worker counts a job as running
        // until after it has pushed the completion and woken the waker).
        wait_until("all jobs to finish", || pool.queued() == 0 && pool.running() == 0);
        assert!(wait_readable(&pool, Instant::now()), "readable at once");
        assert_eq!(pool.drain_completions().len(), 100, "one drain gets them all");
        assert!(!wait_readable(&pool, Instant::now()), "and the wake is used up");
    }

    #[test]
    fn no_completion_is_lost_when_completions_race_the_drain() {
        // Many tiny jobs and a small queue: the "loop" below submits until it is refused,
        // then drains, so drains constantly overlap workers pushing completions. Every
        // completion must come back exactly once. What this stress test cannot prove alone
        // is the reset-then-take order in `drain_completions`: while many jobs are in
        // flight, a later wake-up rescues one that an earlier drain lost, so only a loss at
        // the very end would hang here. (The book's first exercise widens that window.)
        const JOBS: u64 = 10_000;
        let pool = ThreadPool::new(4, 64).expect("pool");
        let mut seen = vec![false; JOBS as usize];
        let mut next = 0;
        let mut received = 0;
        let until = Instant::now() + DEADLINE;
        while received < JOBS {
            while next < JOBS {
                match pool.submit(move || next) {
                    Ok(_) => next += 1,
                    Err(SubmitError::QueueFull) => break,
                    Err(error) => panic!("{error}"),
                }
            }
            assert!(wait_readable(&pool, until), "a completion was lost");
            for completion in pool.drain_completions() {
                let n = completion.result.expect("no panics") as usize;
                assert!(!seen[n], "job {n} came back twice");
                seen[n] = true;
                received += 1;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    /// A pool whose only worker is held busy by a gate job, with five jobs waiting behind
    /// it: the scene of a shutdown.
    struct BusyPool {
        pool: ThreadPool<u32>,
        /// Lets the gate job go.
        release: mpsc::Sender<()>,
        /// Set by the gate job as it returns.
        finished: Arc<AtomicBool>,
        /// How many of the waiting jobs ran. Each also holds a clone of it for as long as
        /// it exists, so its strong count tells how many are still alive somewhere.
        ran: Arc<AtomicUsize>,
    }

    fn busy_pool() -> BusyPool {
        let pool = ThreadPool::new(1, 16).expect("pool");
        let (started, release, gate_job) = gate();
        let finished = Arc::new(AtomicBool::new(false));
        let done = Arc::clone(&finished);
        pool.submit(move || {
            let result = gate_job();
            done.store(true, Ordering::SeqCst);
            result
        })
        .expect("submit");
        started.recv_timeout(DEADLINE).expect("the gate job started");
        let ran = Arc::new(AtomicUsize::new(0));
        for n in 1..=5 {
            let ran = Arc::clone(&ran);
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
                n
            })
            .expect("submit");
        }
        assert_eq!((pool.queued(), pool.running()), (5, 1));
        BusyPool { pool, release, finished, ran }
    }

    #[test]
    fn shutdown_drops_the_waiting_jobs_and_waits_for_the_running_one() {
        let BusyPool { pool, release, finished, ran } = busy_pool();
        thread::scope(|scope| {
            let stopping = scope.spawn(|| pool.shutdown());
            // The waiting jobs are dropped at once, while the gate job still holds the
            // only worker: they cannot have run.
            wait_until("shutdown to drop the waiting jobs", || Arc::strong_count(&ran) == 1);
            assert_eq!(pool.submit(|| 9), Err(SubmitError::ShutDown));
            assert_eq!((pool.queued(), pool.running()), (0, 1));
            assert!(!finished.load(Ordering::SeqCst), "the gate job still runs");
            release.send(()).expect("release the gate");
            stopping.join().expect("shutdown returned");
        });
        assert!(finished.load(Ordering::SeqCst), "shutdown waited for the running job");
        assert_eq!(ran.load(Ordering::SeqCst), 0, "no waiting job ran");
        // Only the running job's result waits for one last drain.
        let results: Vec<u32> =
            pool.drain_completions().into_iter().map(|c| c.result.expect("no panics")).collect();
        assert_eq!(results, [0]);
        // No worker thread is left: the workers' clones of `shared` died with their threads.
        assert_eq!(Arc::strong_count(&pool.shared), 1);
        assert!(lock(&pool.workers).is_empty());
        pool.shutdown(); // a second call is harmless
    }

    #[test]
    fn dropping_the_pool_shuts_it_down() {
        let BusyPool { pool, release, finished, ran } = busy_pool();
        thread::scope(|scope| {
            let dropping = scope.spawn(move || drop(pool));
            wait_until("the drop to discard the waiting jobs", || Arc::strong_count(&ran) == 1);
            release.send(()).expect("release the gate");
            // `drop` returns only once it has joined the worker.
            dropping.join().expect("drop returned");
        });
        assert!(finished.load(Ordering::SeqCst), "the running job was finished");
        assert_eq!(ran.load(Ordering::SeqCst), 0, "no waiting job ran");
    }
}
