//! Files, read on the thread pool, as promises: the loop asks, a worker blocks on the
//! disk, and the promise settles on the loop's thread when the result comes back.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use shared::http::Response;
use shared::{files, trace};

use crate::event_loop::EventLoop;
use crate::promise::{self, Deferred, Promise};
use crate::thread_pool::{JobId, ThreadPool};

// ANCHOR: files
/// The pool, and the promises waiting for its results. The Deferreds stay here, on the
/// loop's thread (they are not `Send`); only the jobs travel.
pub struct Files<S: 'static> {
    pub pool: ThreadPool<io::Result<Vec<u8>>>,
    waiting: HashMap<JobId, Deferred<Vec<u8>, S>>,
}

impl<S: 'static> Files<S> {
    pub fn new(workers: usize, queue_limit: usize) -> io::Result<Files<S>> {
        Ok(Files { pool: ThreadPool::new(workers, queue_limit)?, waiting: HashMap::new() })
    }

    /// Reads the file `relative` under `root`, whole, on a worker.
    pub fn load(
        &mut self, event_loop: &EventLoop<S>, root: PathBuf, relative: PathBuf, delay: Duration,
    ) -> Promise<Vec<u8>, S> {
        let Some(job) = self.pool.submit(move || files::load(&root, &relative, delay)) else {
            let busy = Response::error(503, "too many file requests are waiting for the disk");
            return promise::settled(event_loop, Err(busy));
        };
        let (deferred, promise) = Deferred::new(event_loop);
        self.waiting.insert(job, deferred);
        promise
    }

    /// The pool has woken the loop: settles the promises of every job that has finished.
    pub fn settle_finished(&mut self) {
        for (job, result) in self.pool.finished() {
            let Some(deferred) = self.waiting.remove(&job) else { continue };
            trace!("fs: {job:?} finished");
            deferred.settle(match result {
                Ok(loaded) => loaded.map_err(|error| files::error_response(&error)),
                // The job panicked (its message is on stderr); the worker lives on.
                Err(_) => Err(Response::error(500, "reading the file failed")),
            });
        }
    }
}
// ANCHOR_END: files
