//! Files, read on the thread pool: a task hands the blocking calls to a worker, and waits
//! until the worker has put the result where the task will look and woken it.
//!
//! As in chapter 7, a file is read a chunk (256 KiB) at a time, and the file travels with
//! each job. What is new: the worker wakes the waiting task itself, with the task's own
//! `Waker`, from its own thread. That is what `Waker` being `Send` is for, and the
//! executor makes it work (a wake from another thread rings the loop's self-pipe). It is
//! the Rust async book's `TimerFuture`, with a worker where its timer thread was.

use std::fs::File;
use std::future::poll_fn;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::thread;
use std::time::Duration;

use shared::files;
use shared::http::Response;

use crate::thread_pool::ThreadPool;

/// A piece of a file, read on a worker: its bytes, and the file, to read the next piece from.
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub file: File,
}

// ANCHOR: files
pub struct Files {
    pub pool: ThreadPool,
    /// `--root`: files are opened beneath it.
    root: PathBuf,
    delay: Duration,
}

/// Where a job's result goes: filled on a worker, taken by the task that waits for it,
/// which leaves its waker here to be woken when it is. `Err` if the job panicked.
struct Slot<T> {
    result: Option<thread::Result<io::Result<T>>>,
    waker: Option<Waker>,
}

impl Files {
    /// `delay` is `--fs-delay-ms`, the simulated slow disk.
    pub fn new(root: &Path, workers: usize, delay: Duration) -> io::Result<Files> {
        Ok(Files { pool: ThreadPool::new(workers)?, root: root.to_path_buf(), delay })
    }

    /// Opens `relative` under the root and reads its first chunk, on a worker; the file's
    /// length comes with it.
    pub async fn open(&self, relative: PathBuf) -> Result<(Chunk, u64), Response> {
        let (root, delay) = (self.root.clone(), self.delay);
        self.run(move || {
            let (mut file, length) = files::open(&root, &relative, delay)?;
            Ok((Chunk { bytes: files::read_chunk(&mut file, delay)?, file }, length))
        })
        .await
    }

    /// Reads the next chunk of a file that `open` opened, on a worker.
    pub async fn read(&self, mut file: File) -> Result<Chunk, Response> {
        let delay = self.delay;
        self.run(move || Ok(Chunk { bytes: files::read_chunk(&mut file, delay)?, file })).await
    }

    /// Runs `job` on a worker, and waits for its result.
    async fn run<T: Send + 'static>(
        &self, job: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> Result<T, Response> {
        let slot = Arc::new(Mutex::new(Slot { result: None, waker: None }));
        let filled = slot.clone();
        let work = move || {
            // A job that panics gives its panic back, so that its task is not left waiting.
            let result = panic::catch_unwind(AssertUnwindSafe(job));
            let waker = {
                let mut slot = filled.lock().unwrap_or_else(PoisonError::into_inner);
                slot.result = Some(result);
                slot.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake(); // on the worker's thread: it rings the loop's self-pipe
            }
        };
        self.pool.submit(work);
        let result = poll_fn(|cx| {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            match slot.result.take() {
                Some(result) => Poll::Ready(result),
                None => {
                    slot.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        });
        match result.await {
            Ok(read) => read.map_err(|error| files::error_response(&error)),
            // The job panicked (its message is on stderr); the worker lives on.
            Err(_) => Err(Response::error(500, "reading the file failed")),
        }
    }
}
// ANCHOR_END: files
