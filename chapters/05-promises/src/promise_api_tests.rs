//! Lab 5's tests of your promises: the rules chapter 5's `Deferred` and `Promise` keep, each
//! checked on a real loop with nothing registered, so that a turn only runs the due timers
//! and the steps that are ready.
//!
//! - A Deferred settles once, and its promise's step runs once: never inside `resolve`,
//!   `then` or `on_settled` (where it would find its caller's state half updated), but
//!   from the loop, on a later turn, whether it was attached before the outcome or after.
//! - A chain runs in order, each step given the one before's value, and a step settled
//!   during a turn runs on the next turn, so a long chain takes turns with the sockets.
//! - An error (the `Response` to send instead) skips every step after it, to the end of the
//!   chain; a Deferred dropped unsettled, or a step that panics, ends its chain with a 500.
//! - `race` takes the first outcome; `delay` resolves after its time, and rejects when its
//!   timer is cancelled. A finished chain holds nothing.
//!
//! Your program must provide these names, with these signatures (chapter 5's own):
//!
//! ```rust
//! // src/promise.rs
//! pub type Outcome<T> = Result<T, Response>;
//! pub struct Deferred<T: 'static, S: 'static>
//! pub struct Promise<T, S>
//! impl<T: 'static, S: 'static> Deferred<T, S> {
//!     pub fn new(event_loop: &EventLoop<S>) -> (Deferred<T, S>, Promise<T, S>)
//!     pub fn resolve(self, value: T)
//!     pub fn settle(mut self, outcome: Outcome<T>)
//! }
//! impl<T: 'static, S: 'static> Promise<T, S> {
//!     pub fn on_settled(self, step: impl FnOnce(Outcome<T>, &mut EventLoop<S>, &mut S) + 'static)
//!     pub fn then<U: 'static>(self, step: impl FnOnce(T, &mut EventLoop<S>, &mut S) -> Outcome<U> + 'static) -> Promise<U, S>
//!     pub fn and_then<U: 'static>(self, step: impl FnOnce(T, &mut EventLoop<S>, &mut S) -> Promise<U, S> + 'static) -> Promise<U, S>
//! }
//! pub fn race<T: 'static, S: 'static>(first: Promise<T, S>, second: Promise<T, S>) -> Promise<T, S>
//! pub fn delay<S: 'static>(event_loop: &mut EventLoop<S>, delay: Duration) -> (TimerId, Promise<(), S>)
//! // src/event_loop.rs, as in chapter 4
//! pub fn new() -> EventLoop<S>
//! pub fn turn(&mut self, timeout: Option<Duration>, state: &mut S) -> io::Result<()>
//! pub fn cancel_timer(&mut self, id: TimerId) -> bool
//! ```
//!
//! (`settle`'s `mut` is the chapter's own: it does not change the signature for a caller.)

use std::rc::Rc;
use std::time::{Duration, Instant};

use shared::http::Response;

use crate::event_loop::EventLoop;
use crate::promise::{delay, race, Deferred, Outcome, Promise};

/// The tests' state: what the steps saw, in order.
type Log = Vec<String>;

/// One turn that does not wait: what is ready runs, and that is all.
fn turn(event_loop: &mut EventLoop<Log>, log: &mut Log) {
    event_loop.turn(Some(Duration::ZERO), log).expect("a turn");
}

fn turns(event_loop: &mut EventLoop<Log>, log: &mut Log, count: usize) {
    for _ in 0..count {
        turn(event_loop, log);
    }
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
fn a_step_runs_from_the_loop_never_inside_resolve() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (deferred, promise) = Deferred::new(&event_loop);
    record(promise);
    deferred.resolve(42);
    assert!(log.is_empty(), "nothing runs inside resolve");
    turn(&mut event_loop, &mut log);
    assert_eq!(log, ["ok 42"], "the step ran on the next turn");
}

#[test]
fn a_step_attached_after_the_outcome_still_runs_on_a_later_turn() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let promise = settled(&event_loop, Ok("early"));
    record(promise);
    assert!(log.is_empty(), "nothing runs inside on_settled, even with the outcome there");
    turn(&mut event_loop, &mut log);
    assert_eq!(log, ["ok \"early\""]);
}

#[test]
fn a_settled_deferreds_step_runs_exactly_once() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (deferred, promise) = Deferred::new(&event_loop);
    record(promise);
    deferred.resolve("once"); // and the Deferred is gone: its drop must not settle again
    turns(&mut event_loop, &mut log, 5);
    assert_eq!(log, ["ok \"once\""], "one outcome, one run");
}

#[test]
fn a_chain_runs_in_order_one_step_a_turn() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (deferred, promise) = Deferred::new(&event_loop);
    let chain = promise
        .then(|n: u32, _, log: &mut Log| {
            log.push(format!("first {n}"));
            Ok(n + 1)
        })
        .then(|n, _, log: &mut Log| {
            log.push(format!("second {n}"));
            Ok(n * 10)
        });
    record(chain);
    deferred.resolve(1);
    turn(&mut event_loop, &mut log);
    assert_eq!(log, ["first 1"], "a step settled in a turn runs on the next one");
    turns(&mut event_loop, &mut log, 3);
    assert_eq!(log, ["first 1", "second 2", "ok 20"]);
}

#[test]
fn an_error_skips_every_step_to_the_end_of_the_chain() {
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
    turns(&mut event_loop, &mut log, 5);
    assert_eq!(log, ["err 502"]);
}

#[test]
fn a_step_that_fails_passes_its_error_down_the_chain() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let chain = settled(&event_loop, Ok(1))
        .then(|_, _, _| -> Outcome<u32> { Err(Response::error(504, "too slow")) })
        .then(|_, _, log: &mut Log| {
            log.push("skipped".into());
            Ok(2)
        });
    record(chain);
    turns(&mut event_loop, &mut log, 5);
    assert_eq!(log, ["err 504"]);
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
    turns(&mut event_loop, &mut log, 3);
    assert!(log.is_empty(), "waits for the inner promise: {log:?}");
    inner.resolve("inner");
    turns(&mut event_loop, &mut log, 3);
    assert_eq!(log, ["ok \"inner\""]);
}

#[test]
fn a_dropped_deferred_rejects_its_promise_with_a_500() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let (deferred, promise) = Deferred::<(), Log>::new(&event_loop);
    record(promise);
    drop(deferred);
    turns(&mut event_loop, &mut log, 2);
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
    turns(&mut event_loop, &mut log, 4);
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
    turns(&mut event_loop, &mut log, 3);
    assert_eq!(log, ["ok \"fast\""]);
}

#[test]
fn delay_resolves_after_its_time_and_rejects_when_cancelled() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let started = Instant::now();
    let (_, soon) = delay(&mut event_loop, Duration::from_millis(20));
    let (timer, never) = delay(&mut event_loop, Duration::from_secs(3600));
    record(soon);
    record(never);
    assert!(event_loop.cancel_timer(timer));
    // Each turn may wait for the timer, at most 100 ms; for 3 s at most: never a hang.
    while log.len() < 2 && started.elapsed() < Duration::from_secs(3) {
        event_loop.turn(Some(Duration::from_millis(100)), &mut log).expect("a turn");
    }
    assert!(started.elapsed() >= Duration::from_millis(20), "not before its time");
    log.sort();
    assert_eq!(log, ["err 500", "ok ()"]);
}

#[test]
fn a_finished_chain_holds_nothing() {
    let mut event_loop = EventLoop::new();
    let mut log = Log::new();
    let witness = Rc::new(());
    let held = witness.clone();
    record(settled(&event_loop, Ok(())).then(move |(), _, _| Ok(Rc::strong_count(&held))));
    turns(&mut event_loop, &mut log, 3);
    assert_eq!(log, ["ok 2"]);
    assert_eq!(Rc::strong_count(&witness), 1, "the step and what it captured are gone");
}
