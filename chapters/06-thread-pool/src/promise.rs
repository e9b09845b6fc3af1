//! Promises for the event loop: a [`Deferred`] settles once, and the [`Promise`] it handed
//! out runs the next step of a chain when it does.
//!
//! Chapter 4 wrote every slow step as a callback that registers the next callback: connect,
//! and once connected send, and once sent read... Each step nests one level deeper and
//! repeats its own error handling. A promise turns that staircase into a flat chain that
//! reads top to bottom, with one place for errors at the end:
//!
//! ```text
//! connected                                  // resolves once `connect` has connected
//!     .and_then(move |socket| send(socket, request))
//!     .and_then(read_answer)
//!     .catch(|bad_gateway| bad_gateway)      // any step's 502 lands here
//! ```
//!
//! (That is the fetch in `upstream.rs`, raced there against a 5 s `delay` for its 504.)
//!
//! Three pieces, all single-threaded (`Rc` and `RefCell`; no threads, no std futures):
//!
//! - [`ReadyQueue`]: callbacks that are ready to run. The event loop owns it and drains it
//!   once per turn with [`ReadyQueue::run_ready`].
//! - [`Deferred`]: the producer's half. Whatever will learn the outcome (a timer, a socket
//!   handler) keeps it and calls `resolve(value)` or `reject(error)`.
//! - [`Promise`]: the consumer's half, a stand-in for that outcome. [`Promise::then`],
//!   [`Promise::and_then`] and [`Promise::catch`] attach the next step and return a new
//!   promise for *its* result, which is what makes chains.
//!
//! The rules, each pinned by a test at the bottom of this file:
//!
//! 1. A Deferred settles once. `resolve` and `reject` take it by value, so a second call
//!    does not compile. ([`race`] lets two promises compete to settle one; the loser is
//!    ignored.)
//! 2. Callbacks never run inside `resolve`, nor inside `then` on a promise that has already
//!    settled. They go to the ready queue and run when the loop next drains it, in the
//!    order they became ready.
//! 3. A rejection skips every `then` and `and_then` down to the first `catch`, which may
//!    turn it back into a value.
//! 4. A Deferred dropped without settling rejects its promise with [`Abandoned`]. A chain
//!    whose producer went away (say, its connection was closed) ends in its `catch`
//!    instead of hanging forever with nobody noticing.
//!
//! Unlike JavaScript, a promise here has exactly one next step: the value *moves* into it.
//! Handing one value to several steps would need `T: Clone`, and what our server passes
//! down a chain (a socket, a response) can't or shouldn't be cloned.
//!
//! How the loop uses the ready queue, once per turn:
//!
//! ```text
//! let timeout = if ready.has_work() { Some(Duration::ZERO) } else { timers.next_timeout(now) };
//! poll(&mut events, timeout);   // wait for sockets, but not while callbacks are ready
//! handle(&events);              // socket handlers may resolve Deferreds...
//! fire_due_timers();            // ...and so may timers (see `delay` below)
//! ready.run_ready();            // run the callbacks all of that made ready
//! ```
//!
//! A timer resolves a promise by keeping its Deferred until it fires (see
//! `EventLoop::delay` in `event_loop.rs`). A Deferred is a single pointer, so keeping it
//! costs nothing, and cancelling the timer drops it, which rejects the promise with
//! `Abandoned`.
//!
//! ## Why nothing here leaks (no `Rc` cycles)
//!
//! Every strong pointer points one way, down the chain: a Deferred and its Promise share a
//! cell; the cell holds the next step's callback; that callback holds the *next* Deferred.
//! Nothing points back up. A cell reaches the ready queue through a `Weak` pointer, so a
//! queued job (which holds cells) does not keep the queue alive. Settling and running take
//! things *out* of the cells, so a finished chain holds nothing at all.
//!
//! A cycle can still come from outside: a callback that captures an `Rc` to something that
//! owns the Deferred feeding it (the connection table, say). Prefer capturing a `Token`
//! and handing results back to the loop, which owns the connections.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::{Rc, Weak};

/// A callback with everything it needs, waiting for its turn.
type Job = Box<dyn FnOnce()>;
/// The jobs themselves; [`ReadyQueue`] is a shared handle to them.
type Jobs = RefCell<VecDeque<Job>>;
/// The one next step of a promise, given the outcome: `Ok(value)` or `Err(error)`.
type Callback<T, E> = Box<dyn FnOnce(Result<T, E>)>;

// ANCHOR: ready_queue
/// Callbacks ready to run, first in first out. The event loop owns one and drains it once
/// per turn; promises add to it when a Deferred settles.
///
/// Cloning gives another handle to the same queue (it is an `Rc` inside).
#[derive(Clone, Default)]
pub struct ReadyQueue {
    jobs: Rc<Jobs>,
}

impl ReadyQueue {
    /// An empty queue.
    pub fn new() -> ReadyQueue {
        ReadyQueue::default()
    }

    /// Whether callbacks are waiting. While they are, the loop must not sleep in `poll`:
    /// it polls with a zero timeout, handles whatever is ready, and comes back to them.
    pub fn has_work(&self) -> bool {
        !self.jobs.borrow().is_empty()
    }

    /// How many callbacks are waiting (for `--trace`).
    pub fn len(&self) -> usize {
        self.jobs.borrow().len()
    }

    /// Runs the callbacks that were waiting when it was called, in order, and returns how
    /// many ran.
    ///
    /// Callbacks queued *while* it runs (a step settles the next promise of its chain)
    /// wait for the next turn. Draining until empty would be a few microseconds faster per
    /// link, but a chain that keeps making more work would then keep the loop from ever
    /// getting back to `poll`: every socket and timer would starve behind it. The price of
    /// taking turns is one trip round the loop per link, and since the loop polls with a
    /// zero timeout while `has_work()`, that trip is a system call, not a wait.
    pub fn run_ready(&self) -> usize {
        // Take this turn's batch out first: the queue must not be borrowed while a job runs,
        // because the job may push more jobs. Those land in the emptied queue.
        let batch = std::mem::take(&mut *self.jobs.borrow_mut());
        let count = batch.len();
        for job in batch {
            job();
        }
        count
    }
}

/// Hands a callback and its outcome to the ready queue, never running it here.
///
/// Why not just call `callback(outcome)` now, inside `resolve`? Two reasons.
/// 1. The code that calls `resolve` is usually in the middle of something: a socket
///    handler holding `&mut` to its connection, or a `RefCell` borrow of the connection
///    table. A callback run inside `resolve` that reaches for the same state would panic
///    (`BorrowMutError`) or see it half updated.
/// 2. Order would depend on timing. `deferred.resolve(x); log("resolved")` would log
///    *after* the whole chain ran when a step was already attached, and before it when not.
///
/// Promises/A+ has the same rule: `onFulfilled` must not be called "until the execution
/// context stack contains only platform code". Our platform code is the loop's `run_ready`.
fn schedule<T: 'static, E: 'static>(
    queue: &Weak<Jobs>, callback: Callback<T, E>, outcome: Result<T, E>,
) {
    // If the loop has dropped its queue, nothing will ever run again: dropping the
    // callback and the outcome here frees them, and that is all there is left to do.
    if let Some(jobs) = queue.upgrade() {
        jobs.borrow_mut().push_back(Box::new(move || callback(outcome)));
    }
}
// ANCHOR_END: ready_queue

/// The error a promise rejects with when its [`Deferred`] was dropped without settling.
///
/// A chain's error type says how to turn it into one of its own errors, with
/// `impl From<Abandoned> for MyError`; the server can map it to a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Abandoned;

impl fmt::Display for Abandoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("abandoned: its Deferred was dropped before it settled")
    }
}

// ANCHOR: structs
/// The meeting point of a Deferred and its Promise. The Deferred drops off the outcome,
/// the Promise drops off the callback; whichever arrives second finds the other half
/// waiting and sends the pair to the ready queue.
struct Shared<T, E> {
    outcome: Option<Result<T, E>>,
    callback: Option<Callback<T, E>>,
    queue: Weak<Jobs>,
}

/// The producer's half: settle it once with [`resolve`](Deferred::resolve) or
/// [`reject`](Deferred::reject). Dropping it unsettled rejects with [`Abandoned`].
pub struct Deferred<T: 'static, E: From<Abandoned> + 'static> {
    /// `None` once settled: a spent Deferred holds nothing.
    shared: Option<Rc<RefCell<Shared<T, E>>>>,
}

/// The consumer's half: a value (or error) that will be there on some later turn.
/// Attach its one next step with `then`, `and_then`, `catch` or `on_settled`.
#[must_use = "a promise does nothing unless a next step is attached"]
pub struct Promise<T, E> {
    shared: Rc<RefCell<Shared<T, E>>>,
}
// ANCHOR_END: structs

// ANCHOR: resolve
impl<T: 'static, E: From<Abandoned> + 'static> Deferred<T, E> {
    /// A new unsettled Deferred and the Promise for its outcome. Steps attached to the
    /// promise will run from `ready`.
    pub fn new(ready: &ReadyQueue) -> (Deferred<T, E>, Promise<T, E>) {
        Deferred::with_queue(Rc::downgrade(&ready.jobs))
    }

    fn with_queue(queue: Weak<Jobs>) -> (Deferred<T, E>, Promise<T, E>) {
        let shared = Rc::new(RefCell::new(Shared { outcome: None, callback: None, queue }));
        let promise = Promise { shared: Rc::clone(&shared) };
        let deferred = Deferred { shared: Some(shared) };
        (deferred, promise)
    }

    /// Fulfils the promise with `value`.
    pub fn resolve(self, value: T) {
        self.settle(Ok(value));
    }

    /// Rejects the promise with `error`.
    pub fn reject(self, error: E) {
        self.settle(Err(error));
    }

    /// Settles with a `Result` you already have: `Ok` resolves, `Err` rejects.
    pub fn settle(mut self, outcome: Result<T, E>) {
        self.settle_in_place(outcome);
    }

    fn settle_in_place(&mut self, outcome: Result<T, E>) {
        let Some(shared) = self.shared.take() else {
            return; // already spent; only `drop` after a settle gets here
        };
        let mut state = shared.borrow_mut();
        match state.callback.take() {
            // A step is already attached: send it its outcome (to run later, not now).
            Some(callback) => schedule(&state.queue, callback, outcome),
            // Nobody has attached a step yet: leave the outcome for them to find.
            None => state.outcome = Some(outcome),
        }
    }
}

impl<T: 'static, E: From<Abandoned> + 'static> Drop for Deferred<T, E> {
    fn drop(&mut self) {
        // Still holding the cell means nobody settled us. Without this the promise would
        // stay pending forever and its chain would never run, not even its `catch`.
        if self.shared.is_some() {
            self.settle_in_place(Err(E::from(Abandoned)));
        }
    }
}
// ANCHOR_END: resolve

// ANCHOR: then
impl<T: 'static, E: From<Abandoned> + 'static> Promise<T, E> {
    /// The last step of a chain: `step` gets the outcome either way, `Ok(value)` or
    /// `Err(error)`, and returns nothing. The other methods are built on this one.
    pub fn on_settled(self, step: impl FnOnce(Result<T, E>) + 'static) {
        let callback: Callback<T, E> = Box::new(step);
        let mut state = self.shared.borrow_mut();
        match state.outcome.take() {
            // Already settled: the step still runs later, from the ready queue, never now.
            Some(outcome) => schedule(&state.queue, callback, outcome),
            None => state.callback = Some(callback),
        }
    }

    /// When this promise fulfils, runs `step` on the value; the returned promise fulfils
    /// with what `step` returns. When it rejects, `step` is skipped and the error travels
    /// on down the chain.
    pub fn then<U: 'static>(self, step: impl FnOnce(T) -> U + 'static) -> Promise<U, E> {
        let (next, promise) = Deferred::with_queue(self.queue());
        self.on_settled(move |outcome| match outcome {
            Ok(value) => next.resolve(step(value)),
            Err(error) => next.reject(error),
        });
        promise
    }

    /// Like [`then`](Promise::then) for a step that must wait again: `step` returns a
    /// promise, and the promise returned here settles when *that* one does. This is
    /// what keeps chains flat: `a.and_then(b).and_then(c)`, not `a.then(b.then(c))`.
    ///
    /// (JavaScript's `then` looks at what the step returned to decide whether to wait for
    /// it. Rust has to know the return type up front, hence two methods; the name is the
    /// one `Option` and `Result` use for the same "step that returns another one of us".)
    pub fn and_then<U: 'static>(
        self, step: impl FnOnce(T) -> Promise<U, E> + 'static,
    ) -> Promise<U, E> {
        let (next, promise) = Deferred::with_queue(self.queue());
        self.on_settled(move |outcome| match outcome {
            // Forward the inner promise's outcome, whatever it is, to `next`.
            Ok(value) => step(value).on_settled(move |inner| next.settle(inner)),
            Err(error) => next.reject(error),
        });
        promise
    }

    /// When this promise rejects, `recover` turns the error into a value and the chain
    /// goes on fulfilled from here. A fulfilled value passes through untouched.
    pub fn catch(self, recover: impl FnOnce(E) -> T + 'static) -> Promise<T, E> {
        let (next, promise) = Deferred::with_queue(self.queue());
        self.on_settled(move |outcome| match outcome {
            Ok(value) => next.resolve(value),
            Err(error) => next.resolve(recover(error)),
        });
        promise
    }

    /// The queue this promise's steps run from; the promises a chain makes share it.
    fn queue(&self) -> Weak<Jobs> {
        self.shared.borrow().queue.clone()
    }
}
// ANCHOR_END: then

// ANCHOR: race
/// A promise that settles like whichever of `first` and `second` settles first, fulfilled
/// or rejected; the other one's outcome, whenever it comes, is ignored. If both are
/// already settled, `first` wins.
///
/// `race` does not stop the loser: a promise here cannot be cancelled. In the server,
/// when the 5 s timer beats the upstream, the loop must still close the upstream socket
/// itself. Dropping the upstream's Deferred then rejects the losing promise with
/// [`Abandoned`], and `race` ignores that like any other late outcome.
pub fn race<T: 'static, E: From<Abandoned> + 'static>(
    first: Promise<T, E>, second: Promise<T, E>,
) -> Promise<T, E> {
    let (deferred, promise) = Deferred::with_queue(first.queue());
    // Both contestants share one slot holding the Deferred. The winner takes it out;
    // the loser finds the slot empty and does nothing.
    let slot = Rc::new(RefCell::new(Some(deferred)));
    for contestant in [first, second] {
        let slot = Rc::clone(&slot);
        contestant.on_settled(move |outcome| {
            let winner = slot.borrow_mut().take();
            if let Some(deferred) = winner {
                deferred.settle(outcome);
            }
        });
    }
    promise
}
// ANCHOR_END: race

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// The error type for these tests.
    #[derive(Debug, PartialEq)]
    enum Failure {
        Failed(&'static str),
        Abandoned,
    }

    impl From<Abandoned> for Failure {
        fn from(_: Abandoned) -> Failure {
            Failure::Abandoned
        }
    }

    type TestDeferred<T> = Deferred<T, Failure>;

    /// Records what the steps saw, in order.
    fn log() -> Rc<RefCell<Vec<String>>> {
        Rc::new(RefCell::new(Vec::new()))
    }

    /// A last step that writes the outcome to `log`.
    fn record<T: fmt::Debug + 'static>(
        log: &Rc<RefCell<Vec<String>>>, name: &'static str,
    ) -> impl FnOnce(Result<T, Failure>) + 'static {
        let log = Rc::clone(log);
        move |outcome| log.borrow_mut().push(format!("{name} {outcome:?}"))
    }

    /// Plays event loop: drains turn after turn until nothing is ready, and says how many
    /// turns it took. The bound turns a runaway chain into a failure instead of a hang.
    fn run_until_idle(ready: &ReadyQueue) -> usize {
        let mut turns = 0;
        while ready.has_work() {
            ready.run_ready();
            turns += 1;
            assert!(turns < 100, "the ready queue never empties");
        }
        turns
    }

    #[test]
    fn nothing_runs_inside_resolve_only_from_the_queue() {
        let ready = ReadyQueue::new();
        let log = log();
        let (deferred, promise) = TestDeferred::new(&ready);
        promise.on_settled(record(&log, "a"));
        deferred.resolve(1);
        assert!(log.borrow().is_empty(), "ran inside resolve");
        assert_eq!(ready.len(), 1);
        assert_eq!(ready.run_ready(), 1);
        assert_eq!(*log.borrow(), ["a Ok(1)"]);
    }

    #[test]
    fn a_step_attached_after_settling_still_waits_for_the_queue() {
        let ready = ReadyQueue::new();
        let log = log();
        let (deferred, promise) = TestDeferred::new(&ready);
        deferred.resolve(7);
        assert!(!ready.has_work(), "nobody was listening yet");
        promise.on_settled(record(&log, "late"));
        assert!(log.borrow().is_empty(), "ran inside on_settled");
        run_until_idle(&ready);
        assert_eq!(*log.borrow(), ["late Ok(7)"]);
    }

    #[test]
    fn settling_happens_once_and_dropping_a_settled_deferred_changes_nothing() {
        // A second `resolve` does not compile (it takes the Deferred by value); what can
        // go wrong at run time is `Drop` rejecting after a resolve. It must not.
        let ready = ReadyQueue::new();
        let log = log();
        let (deferred, promise) = TestDeferred::new(&ready);
        promise.on_settled(record(&log, "once"));
        deferred.settle(Ok(1)); // consumes and drops the Deferred
        run_until_idle(&ready);
        assert_eq!(*log.borrow(), ["once Ok(1)"]);
    }

    #[test]
    fn callbacks_run_in_the_order_they_became_ready() {
        let ready = ReadyQueue::new();
        let log = log();
        let (a, promise_a) = TestDeferred::new(&ready);
        let (b, promise_b) = TestDeferred::<i32>::new(&ready);
        let (c, promise_c) = TestDeferred::new(&ready);
        promise_a.on_settled(record(&log, "a"));
        promise_b.on_settled(record(&log, "b"));
        promise_c.on_settled(record(&log, "c"));
        c.resolve(3);
        a.resolve(1);
        b.reject(Failure::Failed("b"));
        ready.run_ready();
        assert_eq!(*log.borrow(), ["c Ok(3)", "a Ok(1)", "b Err(Failed(\"b\"))"]);
    }

    #[test]
    fn work_queued_during_a_drain_waits_for_the_next_turn() {
        let ready = ReadyQueue::new();
        let ran = Rc::new(Cell::new(0));
        let (first, first_promise) = TestDeferred::new(&ready);
        let (second, second_promise) = TestDeferred::new(&ready);
        let (inner_ran, again) = (Rc::clone(&ran), Rc::clone(&ran));
        // The first callback settles the second promise, whose step is already attached.
        first_promise.on_settled(move |_: Result<(), Failure>| {
            inner_ran.set(1);
            second.resolve(());
        });
        second_promise.on_settled(move |_| again.set(2));
        first.resolve(());
        assert_eq!(ready.run_ready(), 1);
        assert_eq!(ran.get(), 1, "the job queued by a job ran in the same drain");
        assert!(ready.has_work());
        assert_eq!(ready.run_ready(), 1);
        assert_eq!(ran.get(), 2);
    }

    #[test]
    fn then_chains_one_link_per_turn() {
        let ready = ReadyQueue::new();
        let log = log();
        let (deferred, promise) = TestDeferred::new(&ready);
        promise
            .then(|n| n + 1)
            .then(|n| n * 10)
            .then(|n| format!("got {n}"))
            .on_settled(record(&log, "end"));
        deferred.resolve(4);
        assert_eq!(run_until_idle(&ready), 4);
        assert_eq!(*log.borrow(), ["end Ok(\"got 50\")"]);
    }

    #[test]
    fn a_rejection_skips_thens_to_the_first_catch_which_can_recover() {
        let ready = ReadyQueue::new();
        let log = log();
        let step_ran = Rc::new(Cell::new(false));
        let (deferred, promise) = TestDeferred::new(&ready);
        let (ran_1, ran_2) = (Rc::clone(&step_ran), Rc::clone(&step_ran));
        let ready_for_step = ready.clone();
        promise
            .then(move |n: i32| {
                ran_1.set(true);
                n + 1
            })
            .and_then(move |n| {
                ran_2.set(true);
                let (deferred, promise) = TestDeferred::new(&ready_for_step);
                deferred.resolve(n);
                promise
            })
            .catch(|error| match error {
                Failure::Failed(why) => why.len() as i32,
                Failure::Abandoned => -1,
            })
            .then(|n| n * 100)
            .on_settled(record(&log, "end"));
        deferred.reject(Failure::Failed("boom"));
        run_until_idle(&ready);
        assert!(!step_ran.get(), "a step ran on a rejected promise");
        assert_eq!(*log.borrow(), ["end Ok(400)"]);
    }

    #[test]
    fn and_then_waits_for_the_promise_its_step_returns() {
        let ready = ReadyQueue::new();
        let log = log();
        let (first, promise) = TestDeferred::new(&ready);
        let (second, inner) = TestDeferred::<String>::new(&ready);
        let mut inner = Some(inner);
        promise
            .and_then(move |n: i32| {
                let inner = inner.take().expect("the step runs once");
                inner.then(move |text| format!("{text} {n}"))
            })
            .on_settled(record(&log, "end"));
        first.resolve(2);
        run_until_idle(&ready);
        assert!(log.borrow().is_empty(), "did not wait for the inner promise");
        second.resolve("inner".to_string());
        run_until_idle(&ready);
        assert_eq!(*log.borrow(), ["end Ok(\"inner 2\")"]);
    }

    #[test]
    fn race_takes_the_first_to_settle_and_ignores_the_loser() {
        let ready = ReadyQueue::new();
        let log = log();
        let (slow, slow_promise) = TestDeferred::new(&ready);
        let (fast, fast_promise) = TestDeferred::new(&ready);
        race(slow_promise, fast_promise).on_settled(record(&log, "race"));
        fast.resolve("fast");
        run_until_idle(&ready);
        slow.reject(Failure::Failed("too late"));
        run_until_idle(&ready);
        assert_eq!(*log.borrow(), ["race Ok(\"fast\")"]);
    }

    #[test]
    fn race_can_be_won_by_a_rejection() {
        let ready = ReadyQueue::new();
        let log = log();
        let (work, work_promise) = TestDeferred::<&str>::new(&ready);
        let (timer, timer_promise) = TestDeferred::new(&ready);
        race(work_promise, timer_promise).on_settled(record(&log, "race"));
        timer.reject(Failure::Failed("timeout"));
        run_until_idle(&ready);
        work.resolve("done");
        run_until_idle(&ready);
        assert_eq!(*log.borrow(), ["race Err(Failed(\"timeout\"))"]);
    }

    #[test]
    fn an_unsettled_promise_never_runs_and_dropping_its_deferred_rejects_it() {
        let ready = ReadyQueue::new();
        let log = log();
        let (deferred, promise) = TestDeferred::<i32>::new(&ready);
        promise
            .then(|n| n + 1)
            .catch(|error| {
                assert_eq!(error, Failure::Abandoned);
                -1
            })
            .on_settled(record(&log, "end"));
        for _ in 0..10 {
            ready.run_ready();
        }
        assert!(log.borrow().is_empty(), "ran without being settled");
        assert!(!ready.has_work());
        drop(deferred);
        run_until_idle(&ready);
        assert_eq!(*log.borrow(), ["end Ok(-1)"]);
    }

    /// Sets its flag when dropped: proof that whatever owned it was freed.
    struct DropFlag(Rc<Cell<bool>>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    #[test]
    fn a_finished_chain_frees_everything() {
        let ready = ReadyQueue::new();
        let (value_dropped, step_dropped) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
        let (deferred, promise) = TestDeferred::new(&ready);
        let captured = DropFlag(Rc::clone(&step_dropped));
        promise
            .then(move |value: DropFlag| {
                let _keep = &captured; // the step owns `captured` until it is freed
                value
            })
            .then(drop)
            .on_settled(|_| ());
        // The cells point at the queue weakly: only our handle keeps it alive.
        assert_eq!(Rc::strong_count(&ready.jobs), 1);
        deferred.resolve(DropFlag(Rc::clone(&value_dropped)));
        run_until_idle(&ready);
        assert!(value_dropped.get(), "the value was leaked");
        assert!(step_dropped.get(), "the step was leaked");
    }

    #[test]
    fn dropping_the_queue_frees_the_jobs_still_in_it() {
        let ready = ReadyQueue::new();
        let dropped = Rc::new(Cell::new(false));
        let (deferred, promise) = TestDeferred::new(&ready);
        let flag = DropFlag(Rc::clone(&dropped));
        promise
            .then(move |n: i32| {
                let _keep = &flag; // the step owns `flag` until it is freed
                n
            })
            .on_settled(|_| ());
        deferred.resolve(1); // a job is now queued, holding the step that owns `flag`
        assert!(ready.has_work());
        drop(ready); // the loop went away without draining
        assert!(dropped.get(), "queued jobs kept each other alive");
    }
}
