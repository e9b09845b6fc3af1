//! Files, read on the thread pool, as promises: the loop asks, a worker blocks on the disk,
//! and the promise settles on the loop's thread when the result comes back. A file is read
//! a chunk (`files::CHUNK`) at a time (see `download.rs`); the open file travels with each
//! job, so every chunk comes from the same file, even if another takes its name meanwhile.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use shared::http::Response;
use shared::{files, trace};

use crate::event_loop::EventLoop;
use crate::promise::{Deferred, Promise};
use crate::thread_pool::{JobId, ThreadPool};

/// A piece of a file, read on a worker, with the file's whole length and the file itself.
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub length: u64,
    pub file: File,
}

// ANCHOR: files
/// The pool, and the promises waiting for its results. The Deferreds stay here, on the
/// loop's thread (they are not `Send`); only the jobs travel.
pub struct Files<S: 'static> {
    pub pool: ThreadPool<io::Result<Chunk>>,
    promised: HashMap<JobId, Deferred<Chunk, S>>,
    delay: Duration,
}

impl<S: 'static> Files<S> {
    /// `delay` is `--fs-delay-ms`, the simulated slow disk.
    pub fn new(workers: usize, delay: Duration) -> io::Result<Files<S>> {
        Ok(Files { pool: ThreadPool::new(workers)?, promised: HashMap::new(), delay })
    }

    /// Opens `relative` under `root` and reads its first chunk, on a worker.
    pub fn open(
        &mut self, event_loop: &EventLoop<S>, root: PathBuf, relative: PathBuf,
    ) -> Promise<Chunk, S> {
        let delay = self.delay;
        self.run(event_loop, move || {
            let (mut file, length) = files::open(&root, &relative, delay)?;
            Ok(Chunk { bytes: files::read_chunk(&mut file, delay)?, length, file })
        })
    }

    /// Reads the next chunk of a file that `open` opened, on a worker.
    pub fn read(
        &mut self, event_loop: &EventLoop<S>, mut file: File, length: u64,
    ) -> Promise<Chunk, S> {
        let delay = self.delay;
        self.run(event_loop, move || {
            Ok(Chunk { bytes: files::read_chunk(&mut file, delay)?, length, file })
        })
    }

    /// Queues `job` for a worker; the promise of its result.
    fn run(
        &mut self, event_loop: &EventLoop<S>,
        job: impl FnOnce() -> io::Result<Chunk> + Send + 'static,
    ) -> Promise<Chunk, S> {
        let (deferred, promise) = Deferred::new(event_loop);
        self.promised.insert(self.pool.submit(job), deferred);
        promise
    }

    /// The pool has woken the loop: settles the promises of every job that has finished.
    pub fn settle_finished(&mut self) {
        for (job, result) in self.pool.finished() {
            let Some(deferred) = self.promised.remove(&job) else { continue };
            trace!("fs: {job:?} finished");
            deferred.settle(match result {
                Ok(read) => read.map_err(|error| files::error_response(&error)),
                // The job panicked (its message is on stderr); the worker lives on.
                Err(_) => Err(Response::error(500, "reading the file failed")),
            });
        }
    }
}
// ANCHOR_END: files
