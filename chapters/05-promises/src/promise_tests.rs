//! The promise rules, each on a real loop with nothing registered: a turn then only runs
//! the due timers and the ready queue.

use super::*;
use std::time::Duration;

/// The test's state: what the steps saw, in order.
type Log = Vec<String>;

/// One turn that does not wait: what is ready runs, and that is all.
fn turn(event_loop: &mut EventLoop<Log>, log: &mut Log) {
    event_loop.turn(Some(Duration::ZERO), log).expect("turn");
}

/// A promise that has settled already.
fn settled<T: 'static>(event_loop: &EventLoop<Log>, outcome: Outcome<T>) -> Promise<T, Log> {
    let (deferred, promise) = Deferred::new(event_loop);
    deferred.settle(outcome);
    promise
}

/// Records a promise's outcome in the log as `ok VALUE` or `err STATUS`.
fn record<T: std::fmt::Debug + 'static>(promise: Promise<T, Log>) {
    promise.on_settled(|outcome, _, log| match outcome {
        Ok(value) => log.push(format!("ok {value:?}")),
        Err(error) => log.push(format!("err {}", error.status)),
    });
}

#[test]
fn steps_run_from_the_ready_queue_never_inside_resolve() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (deferred, promise) = Deferred::new(&event_loop);
    record(promise.then(|n: u32, _, log: &mut Log| {
        log.push("step".into());
        Ok(n + 1)
    }));
    deferred.resolve(41);
    assert!(log.is_empty(), "nothing runs inside resolve");
    turn(&mut event_loop, &mut log);
    assert_eq!(log, ["step"], "one link a turn: the next waits for the next turn");
    turn(&mut event_loop, &mut log);
    assert_eq!(log, ["step", "ok 42"]);
}

#[test]
fn a_step_attached_after_the_outcome_still_runs_later() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let promise = settled(&event_loop, Ok("early"));
    record(promise);
    assert!(log.is_empty());
    turn(&mut event_loop, &mut log);
    assert_eq!(log, ["ok \"early\""]);
}

#[test]
fn a_rejection_skips_every_step_to_the_end_of_the_chain() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let chain = settled(&event_loop, Err::<u32, _>(Response::error(502, "bad")))
        .then(|_, _, log: &mut Log| {
            log.push("skipped".into());
            Ok(1)
        })
        .and_then(|_, event_loop, log: &mut Log| {
            log.push("skipped too".into());
            settled(event_loop, Ok(2))
        });
    record(chain);
    for _ in 0..4 {
        turn(&mut event_loop, &mut log);
    }
    assert_eq!(log, ["err 502"]);
}

#[test]
fn and_then_follows_the_promise_its_step_returns() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (inner, inner_promise) = Deferred::new(&event_loop);
    let mut inner_promise = Some(inner_promise);
    record(
        settled(&event_loop, Ok(1)).and_then(move |_, _, _| inner_promise.take().expect("once")),
    );
    for _ in 0..3 {
        turn(&mut event_loop, &mut log);
    }
    assert!(log.is_empty(), "waits for the inner promise");
    inner.resolve("inner");
    for _ in 0..3 {
        turn(&mut event_loop, &mut log);
    }
    assert_eq!(log, ["ok \"inner\""]);
}

#[test]
fn a_dropped_deferred_rejects_its_promise() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (deferred, promise) = Deferred::<(), Log>::new(&event_loop);
    record(promise);
    drop(deferred);
    turn(&mut event_loop, &mut log);
    assert_eq!(log, ["err 500"]);
}

#[test]
fn a_panicking_step_ends_its_own_chain_and_no_other() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    record(
        settled(&event_loop, Ok(()))
            .then(|(), _, _| -> Outcome<()> { panic!("a bug in a step (this panic is expected)") }),
    );
    record(settled(&event_loop, Ok("other")));
    for _ in 0..3 {
        turn(&mut event_loop, &mut log);
    }
    // The panic dropped the step's next Deferred, so its chain ended with a 500.
    log.sort();
    assert_eq!(log, ["err 500", "ok \"other\""]);
}

#[test]
fn race_takes_the_first_outcome_and_ignores_the_second() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (slow, slow_promise) = Deferred::new(&event_loop);
    let (fast, fast_promise) = Deferred::new(&event_loop);
    record(race(slow_promise, fast_promise));
    fast.resolve("fast");
    turn(&mut event_loop, &mut log);
    slow.resolve("slow");
    for _ in 0..3 {
        turn(&mut event_loop, &mut log);
    }
    assert_eq!(log, ["ok \"fast\""]);
}

#[test]
fn delay_resolves_after_its_time_and_rejects_when_cancelled() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (_, soon) = delay(&mut event_loop, Duration::from_millis(20));
    let (timer, never) = delay(&mut event_loop, Duration::from_secs(3600));
    record(soon);
    record(never);
    assert!(event_loop.cancel_timer(timer));
    // Each turn may wait for the timer, at most 1 s; 20 turns at most: never a hang.
    while log.len() < 2 && event_loop.turns < 20 {
        event_loop.turn(Some(Duration::from_secs(1)), &mut log).expect("turn");
    }
    log.sort();
    assert_eq!(log, ["err 500", "ok ()"]);
}

#[test]
fn a_finished_chain_holds_nothing() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let witness = std::rc::Rc::new(());
    let held = witness.clone();
    record(settled(&event_loop, Ok(())).then(move |(), _, _| Ok(std::rc::Rc::strong_count(&held))));
    for _ in 0..3 {
        turn(&mut event_loop, &mut log);
    }
    assert_eq!(log, ["ok 2"]);
    assert_eq!(std::rc::Rc::strong_count(&witness), 1, "the step and what it captured are gone");
}

/// Lab 5's tests of the promises, which the lab command gives lab 5: the chapter is held
/// to them too, so that they ask only for what its own code does.
#[path = "promise_api_tests.rs"]
mod lab_api;
