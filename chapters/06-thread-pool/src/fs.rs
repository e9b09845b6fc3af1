//! A non-blocking filesystem: `open` and `read` as promises, done on the thread pool.
//!
//! `shared::files` can open and read a file, but only by blocking: each call waits for the
//! disk, and with `--fs-delay-ms` (a simulated slow disk) it waits a long time. Chapters 1
//! to 5 made those calls in the loop, so every client waited for every file. `poll` cannot
//! help here: to Linux a regular file is always "ready", and then `read` blocks anyway.
//!
//! So we wrap the blocking calls, as libuv does for Node.js. [`Filesystem::open`] and
//! [`Filesystem::read`] take the same arguments as their `shared::files` namesakes, hand
//! the call to a worker of the [`ThreadPool`] as a job, and return at once with a
//! [`Promise`] of its result. The round trip:
//!
//! ```text
//!  loop thread                                          a worker thread
//!  -----------                                          ---------------
//!  open(root, path): submit a job -------------------> files::open(...) blocks here
//!    its Deferred waits in `waiting`, under the job id        |
//!                                                             | done: push the completion,
//!  poll: the pool's waker is readable <-----------------------+ wake the loop (waker.rs)
//!  Completions::on_readable -> settle_finished():
//!    each completion's id finds its Deferred, which settles; the chain's next step
//!    (`read`, say) runs from the ready queue like any other step, on this thread
//! ```
//!
//! Only plain data crosses between the threads: a job goes out (a path, a `File`), a
//! [`FileWork`] comes back. The promises, their Deferreds and their steps are `Rc`s and
//! stay on the loop thread, and the compiler holds us to it: a job that captured a
//! Deferred would not compile, because a Deferred is not `Send`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use shared::{files, trace};

use crate::event_loop::{EventLoop, Handler, SharedState, Token};
use crate::promise::{Abandoned, Deferred, Promise, ReadyQueue};
use crate::thread_pool::{Completion, JobId, JobPanicked, SubmitError, ThreadPool};

/// Why a file promise rejected. The server turns each into its answer (see
/// `From<FileError> for Response` in `main.rs`).
#[derive(Debug)]
pub enum FileError {
    /// The call itself failed: no such file, not a regular file, a read error...
    Io(io::Error),
    /// The pool did not take the job: `--queue-limit` jobs already wait for a worker. (A
    /// pool that is shut down refuses every job too, but the server shuts it down only
    /// once its loop has stopped, when no request is left to ask.)
    Refused(SubmitError),
    /// The job panicked on its worker. The worker caught it and lives on.
    Panicked(JobPanicked),
}

/// What a job hands back to the loop thread: the pool's result type. Each job returns its
/// own variant; a completion's id says which job it was, and so which variant to expect.
enum FileWork {
    Opened(io::Result<(File, u64)>),
    Read(io::Result<Vec<u8>>),
}

/// Settles one job's promise, given the job's result. It holds the job's Deferred.
type Settle = Box<dyn FnOnce(Result<FileWork, JobPanicked>)>;

// ANCHOR: filesystem
/// The non-blocking filesystem. Cloning gives another handle to the same one (it is an
/// `Rc` inside): the server keeps one, the waker's registration another, and a chain's
/// step that must start the next job (`read`, after `open`) a third.
#[derive(Clone)]
pub struct Filesystem {
    shared: Rc<Shared>,
}

struct Shared {
    pool: ThreadPool<FileWork>,
    /// The jobs in the pool that a promise waits for, each with the call that settles it
    /// (a call, as in `EventLoop::delays`, because each kind of job settles a promise of
    /// its own type). This is the "JobId -> Deferred" table: an entry goes in when a job
    /// is submitted and comes out when its completion is drained or its request is
    /// abandoned. A step waiting for a job may hold a `Filesystem` (the step that reads
    /// after `open`), and so this table, through its Deferred: a cycle of `Rc`s, but
    /// only while the job runs. Taking the entry out breaks it.
    waiting: RefCell<HashMap<JobId, Settle>>,
    /// Where the promises' steps run: the loop's ready queue.
    ready: ReadyQueue,
}
// ANCHOR_END: filesystem

impl Filesystem {
    /// Starts the pool: `workers` threads, and room for `queue_limit` jobs waiting for one.
    /// Promises made here run their steps from `ready`, the loop's ready queue.
    pub fn new(workers: usize, queue_limit: usize, ready: &ReadyQueue) -> io::Result<Filesystem> {
        let shared = Shared {
            pool: ThreadPool::new(workers, queue_limit)?,
            waiting: RefCell::default(),
            ready: ready.clone(),
        };
        Ok(Filesystem { shared: Rc::new(shared) })
    }

    // ANCHOR: open_and_read
    /// `files::open`, on a worker: the promise of the file under `root` and its length.
    /// Also returns the [`Opening`] that stops waiting for it, should the client leave.
    pub fn open<E>(
        &self, root: &Path, relative: &Path, delay: Duration,
    ) -> (Opening, Promise<(File, u64), E>)
    where
        E: From<FileError> + From<Abandoned> + 'static,
    {
        let (root, relative) = (root.to_path_buf(), relative.to_path_buf());
        let (job, opened) = self.submit(
            move || FileWork::Opened(files::open(&root, &relative, delay)),
            |work| match work {
                FileWork::Opened(opened) => Some(opened),
                _ => None,
            },
        );
        let opening = Opening { filesystem: self.clone(), job };
        (opening, opened)
    }

    /// `files::read`, on a worker: the promise of the whole of `file`'s contents. The open
    /// `File` moves to the worker with the job (a `File` is `Send`).
    pub fn read<E>(&self, file: File, length: u64, delay: Duration) -> Promise<Vec<u8>, E>
    where
        E: From<FileError> + From<Abandoned> + 'static,
    {
        let (_job, contents) = self.submit(
            move || FileWork::Read(files::read(file, length, delay)),
            |work| match work {
                FileWork::Read(contents) => Some(contents),
                _ => None,
            },
        );
        contents
    }
    // ANCHOR_END: open_and_read

    // ANCHOR: submit
    /// Sends `job` to the pool and keeps its promise's Deferred in `waiting` until the
    /// job's completion comes back. `unpack` takes this job's own variant out of the
    /// `FileWork` it returns. A job the pool refuses rejects its promise at once (on the
    /// next turn, like every step): the request is answered 503 without waiting.
    fn submit<T, E>(
        &self, job: impl FnOnce() -> FileWork + Send + 'static,
        unpack: fn(FileWork) -> Option<io::Result<T>>,
    ) -> (Option<JobId>, Promise<T, E>)
    where
        T: 'static,
        E: From<FileError> + From<Abandoned> + 'static,
    {
        let (deferred, promise) = Deferred::new(&self.shared.ready);
        match self.shared.pool.submit(job) {
            Ok(id) => {
                trace!("fs: {id} submitted");
                let settle = move |result: Result<FileWork, JobPanicked>| {
                    let outcome = match result {
                        Ok(work) => match unpack(work) {
                            Some(done) => done.map_err(FileError::Io),
                            // Cannot happen: a job always returns its own variant. If it
                            // did, a 500 for this request, not a panic on the loop thread.
                            None => Err(FileError::Io(io::Error::other("mixed-up job result"))),
                        },
                        Err(panicked) => Err(FileError::Panicked(panicked)),
                    };
                    deferred.settle(outcome.map_err(E::from));
                };
                self.shared.waiting.borrow_mut().insert(id, Box::new(settle));
                (Some(id), promise)
            }
            Err(refused) => {
                trace!("fs: job refused: {refused}");
                deferred.reject(E::from(FileError::Refused(refused)));
                (None, promise)
            }
        }
    }
    // ANCHOR_END: submit

    // ANCHOR: settle_finished
    /// Settles the promise of every job that has finished since the last call. The loop
    /// calls it (through [`Completions`]) whenever the pool's waker is readable. This is
    /// where a job's result reaches its promise: here, on the loop thread.
    pub fn settle_finished(&self) {
        // One wake-up, however many completions: the drain takes all of them.
        for Completion { id, result } in self.shared.pool.drain_completions() {
            // Out of the table first (the borrow ends with this statement), then settle.
            let settle = self.shared.waiting.borrow_mut().remove(&id);
            match settle {
                Some(settle) => {
                    trace!("fs: {id} finished; settling its promise");
                    settle(result);
                }
                // Its request was abandoned: the client left while the job ran (see
                // `Opening::abandon`). Nobody waits for the result, so it is dropped here,
                // which closes the file or frees the bytes, and no connection hears of it.
                None => trace!("fs: {id} finished, but nobody waits for it any more"),
            }
        }
    }
    // ANCHOR_END: settle_finished

    /// The descriptor to register with the loop for readability (see [`Completions`]).
    pub fn waker_fd(&self) -> RawFd {
        self.shared.pool.waker().as_fd().as_raw_fd()
    }

    /// The handler to register on [`waker_fd`](Filesystem::waker_fd).
    pub fn completions(&self) -> Completions {
        Completions { filesystem: self.clone() }
    }

    /// Jobs waiting for a worker (for `/stats`).
    pub fn queued(&self) -> usize {
        self.shared.pool.queued()
    }

    /// Jobs a worker is running right now (for `/stats`).
    pub fn running(&self) -> usize {
        self.shared.pool.running()
    }

    // ANCHOR: shutdown
    /// The end of a graceful shutdown, once the grace period is over: stops the pool, which
    /// drops the jobs that have not started, waits for the running ones and joins its
    /// workers (see `ThreadPool::shutdown`). The requests still open are being closed, so
    /// nobody waits for those results any more: the exit takes at most one job's time (one
    /// `--fs-delay-ms` plus the disk's own) after the grace period.
    pub fn shutdown(&self) {
        let (queued, running) = (self.queued(), self.running());
        trace!("fs: stopping the pool: {queued} jobs dropped, {running} to finish");
        self.shared.pool.shutdown();
        // The loop has stopped, so these will never be settled. Dropping them ends their
        // chains (with `Abandoned`) and breaks the cycles described at `waiting`.
        let abandoned = std::mem::take(&mut *self.shared.waiting.borrow_mut());
        drop(abandoned);
    }
    // ANCHOR_END: shutdown

    /// Stops waiting for job `id`: its Deferred is dropped, which rejects its promise with
    /// `Abandoned`. The job itself runs on (a worker cannot be stopped mid-call), and its
    /// completion, finding nobody in `waiting`, is dropped by `settle_finished`.
    fn forget(&self, id: JobId) {
        let settle = self.shared.waiting.borrow_mut().remove(&id);
        if settle.is_some() {
            trace!("fs: {id} abandoned");
        }
    }
}

// ANCHOR: opening
/// A file request's first job, `open`, as its connection holds it: what to stop if the
/// client leaves first (the `Effect` of a `/files/` request, see `main.rs`).
pub struct Opening {
    filesystem: Filesystem,
    /// `None` if the pool refused the job: then there is nothing to stop.
    job: Option<JobId>,
}

impl Opening {
    /// The client has left, or the answer is in. If the file is still being opened, its
    /// promise is abandoned, so the chain ends there and the `read` is never submitted.
    /// Once the file is open, this does nothing: the read runs to its end, and its answer
    /// goes to a token that names nothing any more, which the loop skips (see `Outbox`).
    pub fn abandon(&self) {
        if let Some(id) = self.job {
            self.filesystem.forget(id);
        }
    }
}
// ANCHOR_END: opening

// ANCHOR: completions
/// The pool's waker, as the loop holds it: a registration like a socket's, readable when
/// jobs have finished. It works for any program's shared state `S`: all it needs is its
/// own handle on the filesystem.
pub struct Completions {
    filesystem: Filesystem,
}

impl<S: SharedState> Handler<S> for Completions {
    fn on_readable(&mut self, _event_loop: &mut EventLoop<S>, _token: Token, _state: &mut S) {
        self.filesystem.settle_finished();
    }
}
// ANCHOR_END: completions

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_loop::Interest;
    use crate::thread_pool::tests::wait_until;
    use std::cell::Cell;
    use std::thread::{self, ThreadId};
    use std::time::Instant;

    /// The test's shared state: nothing. The chains report through `Rc`s instead.
    struct State;

    impl SharedState for State {
        type Timer = ();
        fn on_timer(&mut self, _event_loop: &mut EventLoop<State>, _timer: ()) {}
    }

    /// An error type for the tests' promises that keeps what went wrong.
    #[derive(Debug)]
    enum Failed {
        File(FileError),
        Abandoned,
    }

    impl From<FileError> for Failed {
        fn from(error: FileError) -> Failed {
            Failed::File(error)
        }
    }

    impl From<Abandoned> for Failed {
        fn from(_: Abandoned) -> Failed {
            Failed::Abandoned
        }
    }

    /// A loop with the pool's waker registered, and nothing else at all: no sockets, no
    /// timers. Only the waker can end its wait.
    fn event_loop_with_pool(workers: usize, queue_limit: usize) -> (EventLoop<State>, Filesystem) {
        let mut event_loop = EventLoop::new();
        let filesystem =
            Filesystem::new(workers, queue_limit, event_loop.ready()).expect("thread pool");
        event_loop
            .register(filesystem.waker_fd(), Interest::READABLE, filesystem.completions())
            .expect("register the waker");
        (event_loop, filesystem)
    }

    /// Where a chain's last step writes what it saw, and on which thread it ran.
    type Outcome<T> = Rc<RefCell<Option<(Result<T, Failed>, ThreadId)>>>;

    fn record<T: 'static>(promise: Promise<T, Failed>) -> Outcome<T> {
        let outcome: Outcome<T> = Rc::default();
        let seen = Rc::clone(&outcome);
        promise
            .on_settled(move |result| *seen.borrow_mut() = Some((result, thread::current().id())));
        outcome
    }

    /// Turns the loop until `outcome` is in. Each turn may wait up to 10 s, and there are
    /// at most 20 of them: a lost wake-up fails the test instead of hanging it.
    fn turn_until<T>(event_loop: &mut EventLoop<State>, outcome: &Outcome<T>) {
        while outcome.borrow().is_none() {
            assert!(event_loop.turns() < 20, "the chain never finished");
            event_loop.turn(Some(Duration::from_secs(10)), &mut State).expect("turn");
        }
    }

    #[test]
    fn open_then_read_resolve_on_the_loop_thread_and_the_waker_ends_the_wait() {
        let (mut event_loop, filesystem) = event_loop_with_pool(2, 8);
        let root = shared::args::default_root();
        let relative = files::resolve("index.html").expect("a valid path");
        // A slow disk: each job takes 100 ms, so the loop must really sleep in `poll`
        // and be woken by the waker, twice, since nothing else is registered.
        let delay = Duration::from_millis(100);
        let started = Instant::now();
        let reader = filesystem.clone();
        let (_opening, opened) = filesystem.open(&root, &relative, delay);
        let contents =
            opened.and_then(move |(file, length)| reader.read::<Failed>(file, length, delay));
        let outcome = record(contents);
        turn_until(&mut event_loop, &outcome);

        let (result, thread) = outcome.take().expect("settled");
        let expected = std::fs::read(root.join(&relative)).expect("read index.html");
        assert_eq!(result.expect("read"), expected);
        assert_eq!(thread, thread::current().id(), "settled on the loop thread");
        let took = started.elapsed();
        assert!(took >= 2 * delay, "faster than the disk: {took:?}");
        assert!(took < Duration::from_secs(5), "the waker did not end the wait: {took:?}");
        // A turn per wake-up, plus one per step of the chain: a handful, never the
        // thousands of a loop that spins while it waits.
        assert!(event_loop.turns() <= 6, "{} turns", event_loop.turns());
        assert_eq!((filesystem.queued(), filesystem.running()), (0, 0));
    }

    #[test]
    fn a_missing_file_rejects_with_its_io_error() {
        let (mut event_loop, filesystem) = event_loop_with_pool(1, 8);
        let root = shared::args::default_root();
        let (_opening, opened) =
            filesystem.open::<Failed>(&root, Path::new("missing.html"), Duration::ZERO);
        let outcome = record(opened);
        turn_until(&mut event_loop, &outcome);
        let (result, _) = outcome.take().expect("settled");
        let Err(Failed::File(FileError::Io(error))) = result else {
            panic!("expected an I/O error, got {result:?}");
        };
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_panicking_job_rejects_its_promise_and_the_worker_lives_on() {
        let (mut event_loop, filesystem) = event_loop_with_pool(1, 8);
        let (_, panicked) = filesystem
            .submit::<(), Failed>(|| panic!("a bug in a job (this panic is expected)"), |_| None);
        let outcome = record(panicked);
        turn_until(&mut event_loop, &outcome);
        let (result, _) = outcome.take().expect("settled");
        assert!(matches!(result, Err(Failed::File(FileError::Panicked(_)))), "{result:?}");
        // The only worker is still there to open a file.
        let root = shared::args::default_root();
        let (_opening, opened) =
            filesystem.open::<Failed>(&root, Path::new("index.html"), Duration::ZERO);
        let outcome = record(opened);
        turn_until(&mut event_loop, &outcome);
        assert!(outcome.take().expect("settled").0.is_ok());
    }

    #[test]
    fn a_full_queue_rejects_at_once() {
        // One worker, no queue: while the worker is busy, the next job is refused.
        let (mut event_loop, filesystem) = event_loop_with_pool(1, 0);
        let root = shared::args::default_root();
        let slow = Duration::from_millis(200);
        let (_busy, opened) = filesystem.open::<Failed>(&root, Path::new("index.html"), slow);
        let first = record(opened);
        let (refused, opened) = filesystem.open::<Failed>(&root, Path::new("index.html"), slow);
        assert!(refused.job.is_none(), "nothing to abandon");
        let second = record(opened);
        turn_until(&mut event_loop, &second);
        let (result, _) = second.take().expect("settled");
        assert!(
            matches!(result, Err(Failed::File(FileError::Refused(SubmitError::QueueFull)))),
            "{result:?}"
        );
        assert!(first.borrow().is_none(), "refused before the first job was done");
        turn_until(&mut event_loop, &first);
        assert!(first.take().expect("settled").0.is_ok());
    }

    #[test]
    fn an_abandoned_open_ends_its_chain_and_its_completion_is_dropped() {
        let (mut event_loop, filesystem) = event_loop_with_pool(1, 8);
        let root = shared::args::default_root();
        let read_started = Rc::new(Cell::new(false));
        let started = Rc::clone(&read_started);
        let reader = filesystem.clone();
        let delay = Duration::from_millis(50);
        let (opening, opened) = filesystem.open(&root, Path::new("index.html"), delay);
        let contents = opened.and_then(move |(file, length)| {
            started.set(true);
            reader.read::<Failed>(file, length, delay)
        });
        let outcome = record(contents);
        opening.abandon(); // the client left while the file was being opened
        turn_until(&mut event_loop, &outcome);
        let (result, _) = outcome.take().expect("settled");
        assert!(matches!(result, Err(Failed::Abandoned)), "{result:?}");
        // The job itself runs on. Once it is done, its completion finds nobody waiting.
        wait_until("the job to finish", || filesystem.running() == 0 && filesystem.queued() == 0);
        event_loop.turn(Some(Duration::from_secs(10)), &mut State).expect("turn");
        assert!(!read_started.get(), "the read was started for nobody");
        assert!(filesystem.shared.waiting.borrow().is_empty());
    }

    #[test]
    fn shutdown_drops_the_jobs_that_have_not_started() {
        let (_event_loop, filesystem) = event_loop_with_pool(1, 8);
        let root = shared::args::default_root();
        // One job holds the only worker for 300 ms; five more queue behind it, and would
        // take 1.5 s more if they ran.
        let slow = Duration::from_millis(300);
        let mut outcomes = Vec::new();
        for _ in 0..6 {
            let (_opening, opened) =
                filesystem.open::<Failed>(&root, Path::new("index.html"), slow);
            outcomes.push(record(opened));
        }
        wait_until("the first job to start", || filesystem.running() > 0);
        let started = Instant::now();
        filesystem.shutdown();
        let took = started.elapsed();
        assert!(took < Duration::from_millis(1000), "ran the queued jobs: {took:?}");
        assert_eq!((filesystem.queued(), filesystem.running()), (0, 0));
        assert!(filesystem.shared.waiting.borrow().is_empty());
    }
}
