//! The pool on its own, with a real waker: each test waits on the waker with `poll`, as
//! the loop does, and has a deadline, so a lost wake-up fails the test instead of hanging.

use super::*;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::AsFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Collects `count` results the way the loop does: wait until the waker is readable, then
/// take what has finished. Fails after 10 s.
fn collect<R>(pool: &ThreadPool<R>, count: usize) -> Vec<(JobId, thread::Result<R>)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut done = Vec::new();
    while done.len() < count {
        let left = deadline.checked_duration_since(Instant::now()).expect("results in time");
        let waker = pool.waker();
        let mut fds = [PollFd::new(waker.as_fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        if poll(&mut fds, timeout).unwrap_or(0) == 1 {
            done.extend(pool.finished());
        }
    }
    done
}

#[test]
fn results_come_back_and_wake_the_loop_every_time() {
    let mut pool = ThreadPool::new(3, 1000).expect("pool");
    let ids: Vec<JobId> = (0..500u64).map(|n| pool.submit(move || n * 2).expect("room")).collect();
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
    let mut pool = ThreadPool::new(1, 10).expect("pool");
    pool.submit(|| -> u32 { panic!("a bug in a job (this panic is expected)") });
    pool.submit(|| 7);
    let results = collect(&pool, 2);
    assert!(results[0].1.is_err());
    assert_eq!(results[1].1.as_ref().ok(), Some(&7), "the one worker lived on");
}

#[test]
fn a_full_queue_refuses_new_jobs() {
    let mut pool = ThreadPool::new(1, 2).expect("pool");
    let (release, blocked) = mpsc::channel::<()>();
    pool.submit(move || {
        let _ = blocked.recv();
    }); // keeps the one worker busy
    while pool.load().1 == 0 {
        thread::sleep(Duration::from_millis(1)); // until the worker has taken it
    }
    assert!(pool.submit(|| ()).is_some());
    assert!(pool.submit(|| ()).is_some());
    assert!(pool.submit(|| ()).is_none(), "two wait already: the third is refused");
    drop(release);
    collect(&pool, 3);
    assert!(pool.submit(|| ()).is_some(), "room again");
}

#[test]
fn with_no_queue_a_job_runs_only_on_a_free_worker() {
    let mut pool = ThreadPool::new(1, 0).expect("pool");
    let (release, blocked) = mpsc::channel::<()>();
    let busy = pool.submit(move || {
        let _ = blocked.recv();
    });
    assert!(busy.is_some(), "the worker is free: it takes the job");
    assert!(pool.submit(|| ()).is_none(), "the worker is busy, and nothing may wait");
    drop(release);
    collect(&pool, 1);
    assert!(pool.submit(|| ()).is_some(), "the worker is free again");
}
