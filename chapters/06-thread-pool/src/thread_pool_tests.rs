//! The pool on its own, with a real doorbell: each test waits on it with `poll`, as
//! the loop does, and has a deadline, so a lost wake-up fails the test instead of hanging.

use super::*;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Collects `count` results the way the loop does: wait until the doorbell is readable, then
/// take what has finished. Fails after 10 s.
fn collect<R: Send + 'static>(
    pool: &ThreadPool<R>, count: usize,
) -> Vec<(JobId, thread::Result<R>)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut done = Vec::new();
    while done.len() < count {
        let left = deadline.checked_duration_since(Instant::now()).expect("results in time");
        let mut fds = [PollFd::new(pool.doorbell.as_fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        if poll(&mut fds, timeout).unwrap_or(0) == 1 {
            done.extend(pool.finished());
        }
    }
    done
}

#[test]
fn results_come_back_and_wake_the_loop_every_time() {
    let mut pool = ThreadPool::new(3).expect("pool");
    let ids: Vec<JobId> = (0..500u64).map(|n| pool.submit(move || n * 2)).collect();
    let mut results = collect(&pool, ids.len());
    results.sort_by_key(|(id, _)| id.0);
    for (n, (id, result)) in results.into_iter().enumerate() {
        assert_eq!(id, ids[n]);
        assert_eq!(result.ok(), Some(n as u64 * 2));
    }
    assert_eq!(pool.load(), (0, 0));
}

#[test]
fn a_job_that_panics_costs_its_result_not_its_worker() {
    let mut pool = ThreadPool::new(1).expect("pool");
    pool.submit(|| -> u32 { panic!("a bug in a job (this panic is expected)") });
    pool.submit(|| 7);
    let results = collect(&pool, 2);
    assert!(results[0].1.is_err());
    assert_eq!(results[1].1.as_ref().ok(), Some(&7), "the one worker lived on");
}

#[test]
fn load_counts_the_jobs_queued_and_running() {
    let mut pool = ThreadPool::new(1).expect("pool");
    let (release, blocked) = mpsc::channel::<()>();
    pool.submit(move || {
        let _ = blocked.recv();
    }); // keeps the one worker busy
    while pool.load().1 == 0 {
        thread::sleep(Duration::from_millis(1)); // until the worker has taken it
    }
    pool.submit(|| ());
    pool.submit(|| ());
    assert_eq!(pool.load(), (2, 1), "two queued behind the running one");
    drop(release);
    collect(&pool, 3);
    assert_eq!(pool.load(), (0, 0));
}
