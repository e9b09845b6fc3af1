//! Files, read on the thread pool: a task hands the blocking calls to a worker, and waits
//! for the result, which comes back to it through a [`Queue`].
//!
//! As in chapter 7, a file is read a chunk (256 KiB) at a time, and the file travels with
//! each job; the pool wakes the loop through its waker. The task that waits on that waker,
//! [`Files::deliver`], hands each result to the task that asked for it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use shared::files;
use shared::http::Response;
use shared::waker::Waker;

use crate::net::Async;
use crate::sync::Queue;
use crate::thread_pool::{JobId, ThreadPool};

/// A piece of a file, read on a worker: its bytes, the file's whole length, and the file,
/// to read the next piece from.
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub length: u64,
    pub file: File,
}

/// What a job gives back: its chunk or the error, or `Err` if it panicked.
type Result = thread::Result<io::Result<Chunk>>;

// ANCHOR: files
pub struct Files {
    pub pool: RefCell<ThreadPool<io::Result<Chunk>>>,
    /// Where each job's result goes: the queue its task waits on.
    waiting: RefCell<HashMap<JobId, Queue<Result>>>,
    delay: Duration,
}

impl Files {
    /// `delay` is `--fs-delay-ms`, the simulated slow disk.
    pub fn new(workers: usize, queue_limit: usize, delay: Duration) -> io::Result<Files> {
        let pool = RefCell::new(ThreadPool::new(workers, queue_limit)?);
        Ok(Files { pool, waiting: RefCell::default(), delay })
    }

    /// Opens `relative` under `root` and reads its first chunk, on a worker.
    pub async fn open(
        &self, root: PathBuf, relative: PathBuf,
    ) -> std::result::Result<Chunk, Response> {
        let delay = self.delay;
        let job = self.pool.borrow_mut().submit(move || {
            let (mut file, length) = files::open(&root, &relative, delay)?;
            Ok(Chunk { bytes: files::read_chunk(&mut file, delay)?, length, file })
        });
        self.result(job).await
    }

    /// Reads the next chunk of a file that `open` opened, on a worker.
    pub async fn read(&self, mut file: File, length: u64) -> std::result::Result<Chunk, Response> {
        let delay = self.delay;
        // Never refused: the head has gone out, so a 503 could only cut the download short.
        let job = self.pool.borrow_mut().submit_anyway(move || {
            Ok(Chunk { bytes: files::read_chunk(&mut file, delay)?, length, file })
        });
        self.result(Some(job)).await
    }

    /// `job`'s result, once a worker has run it; a 503 if the pool refused it (`None`).
    async fn result(&self, job: Option<JobId>) -> std::result::Result<Chunk, Response> {
        let Some(job) = job else {
            return Err(Response::error(503, "too many file requests are waiting for the disk"));
        };
        let answer = Queue::new();
        self.waiting.borrow_mut().insert(job, answer.clone());
        let result = answer.pop().await;
        match result {
            Ok(read) => read.map_err(|error| files::error_response(&error)),
            // The job panicked (its message is on stderr); the worker lives on.
            Err(_) => Err(Response::error(500, "reading the file failed")),
        }
    }

    /// A task of its own, for the server's life: each time the pool's waker wakes it, it
    /// hands every finished job's result to the queue of the task that waits for it. (A
    /// task that has gone, its client with it, left its queue behind: the result is
    /// dropped with the queue.)
    pub async fn deliver(&self, waker: Async<Arc<Waker>>) {
        loop {
            let finished = waker.read_with(|_| {
                let finished = self.pool.borrow().finished();
                if finished.is_empty() {
                    return Err(io::ErrorKind::WouldBlock.into()); // nothing yet: wait
                }
                Ok(finished)
            });
            let Ok(finished) = finished.await else { return };
            for (job, result) in finished {
                if let Some(queue) = self.waiting.borrow_mut().remove(&job) {
                    queue.push(result);
                }
            }
        }
    }
}
// ANCHOR_END: files
