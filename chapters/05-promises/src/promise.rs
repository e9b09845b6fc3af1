//! Promises for the event loop: a [`Deferred`] settles once, and the [`Promise`] it handed
//! out runs the next step of a chain when it does.
//!
//! Chapter 4 nested each wait in the one before. [`Promise::then`] attaches a step that
//! cannot wait, [`Promise::and_then`] one that waits again (it returns a promise); each
//! returns a promise of its step's result, so a chain reads top to bottom, as
//! `writable.then(connected).then(send).and_then(read_answer)` does.
//!
//! 1. A Deferred settles once (`resolve` and `settle` take it by value). An error is the
//!    response to send instead (a 502, a 504...) and skips every step after it, like `?`.
//! 2. A step never runs inside `resolve` or `then`, where it would find its caller's state
//!    half updated (Promises/A+ forbids it too), but later, from the loop's ready queue.
//! 3. A Deferred dropped unsettled rejects with a 500: a chain whose producer went away (a
//!    socket closed, a timer cancelled, a step panicked) ends instead of waiting forever.
//!
//! Nothing leaks: strong pointers only point down the chain (a step owns the next step's
//! Deferred), and the cells reach the ready queue by a `Weak` pointer.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use std::time::Duration;

use shared::http::Response;

use crate::event_loop::{Callback, EventLoop};
use crate::timers::TimerId;

/// What a promise settles to: a value, or the response to send instead.
pub type Outcome<T> = Result<T, Response>;

/// The one next step of a promise, given its outcome.
type Step<T, S> = Box<dyn FnOnce(Outcome<T>, &mut EventLoop<S>, &mut S)>;

/// The loop's ready queue, held weakly: a queued step (holding promises) must not keep it alive.
type Ready<S> = Weak<RefCell<VecDeque<Callback<S>>>>;

// ANCHOR: slot
/// Where a Deferred and its Promise meet: the Deferred leaves the outcome, the Promise the
/// step; whichever comes second sends the pair to the ready queue.
struct Slot<T, S> {
    outcome: Option<Outcome<T>>,
    step: Option<Step<T, S>>,
    ready: Ready<S>,
}

/// The producer's half: settle it once. Dropping it unsettled rejects with a 500.
pub struct Deferred<T: 'static, S: 'static> {
    slot: Option<Rc<RefCell<Slot<T, S>>>>, // `None` once settled
}

/// The consumer's half: an outcome that will be there on some later turn.
#[must_use = "a promise does nothing unless a next step is attached"]
pub struct Promise<T, S> {
    slot: Rc<RefCell<Slot<T, S>>>,
}
// ANCHOR_END: slot

// ANCHOR: deferred
impl<T: 'static, S: 'static> Deferred<T, S> {
    /// A new Deferred and its Promise, whose steps will run from `event_loop`'s ready queue.
    pub fn new(event_loop: &EventLoop<S>) -> (Deferred<T, S>, Promise<T, S>) {
        Deferred::with_queue(Rc::downgrade(event_loop.ready_queue()))
    }

    fn with_queue(ready: Ready<S>) -> (Deferred<T, S>, Promise<T, S>) {
        let slot = Rc::new(RefCell::new(Slot { outcome: None, step: None, ready }));
        (Deferred { slot: Some(slot.clone()) }, Promise { slot })
    }

    pub fn resolve(self, value: T) {
        self.settle(Ok(value));
    }

    /// Resolves with the value, or rejects with the error.
    pub fn settle(mut self, outcome: Outcome<T>) {
        self.put(outcome);
    }

    fn put(&mut self, outcome: Outcome<T>) {
        let Some(slot) = self.slot.take() else { return };
        let mut slot = slot.borrow_mut();
        match slot.step.take() {
            Some(step) => schedule(&slot.ready, step, outcome),
            None => slot.outcome = Some(outcome), // for the step to find when it comes
        }
    }
}

impl<T: 'static, S: 'static> Drop for Deferred<T, S> {
    fn drop(&mut self) {
        self.put(Err(Response::error(500, "the work for this request was abandoned")));
    }
}

/// Sends `step` and its `outcome` to the ready queue, to run after the current callback;
/// drops them if the loop has gone (the program is ending): nothing is left to run them.
fn schedule<T: 'static, S: 'static>(ready: &Ready<S>, step: Step<T, S>, outcome: Outcome<T>) {
    if let Some(ready) = ready.upgrade() {
        ready
            .borrow_mut()
            .push_back(Box::new(move |event_loop, state| step(outcome, event_loop, state)));
    }
}
// ANCHOR_END: deferred

// ANCHOR: then
impl<T: 'static, S: 'static> Promise<T, S> {
    /// The last step of a chain: `step` gets the outcome, whichever it is.
    pub fn on_settled(self, step: impl FnOnce(Outcome<T>, &mut EventLoop<S>, &mut S) + 'static) {
        let mut slot = self.slot.borrow_mut();
        match slot.outcome.take() {
            Some(outcome) => schedule(&slot.ready, Box::new(step), outcome), // later, not now
            None => slot.step = Some(Box::new(step)),
        }
    }

    /// A step that cannot wait: from the value, its outcome. Skipped on an error.
    pub fn then<U: 'static>(
        self, step: impl FnOnce(T, &mut EventLoop<S>, &mut S) -> Outcome<U> + 'static,
    ) -> Promise<U, S> {
        let (next, promise) = Deferred::with_queue(self.ready());
        self.on_settled(move |outcome, event_loop, state| {
            next.settle(outcome.and_then(|value| step(value, event_loop, state)))
        });
        promise
    }

    /// A step that waits again: from the value, a promise, which the one returned here
    /// follows. This is what keeps chains flat: `a.and_then(b).and_then(c)`, not nested.
    pub fn and_then<U: 'static>(
        self, step: impl FnOnce(T, &mut EventLoop<S>, &mut S) -> Promise<U, S> + 'static,
    ) -> Promise<U, S> {
        let (next, promise) = Deferred::with_queue(self.ready());
        self.on_settled(move |outcome, event_loop, state| match outcome {
            Ok(value) => {
                step(value, event_loop, state).on_settled(move |inner, _, _| next.settle(inner))
            }
            Err(error) => next.settle(Err(error)),
        });
        promise
    }

    /// The ready queue this promise's steps run from; its chain's promises share it.
    fn ready(&self) -> Ready<S> {
        self.slot.borrow().ready.clone()
    }
}
// ANCHOR_END: then

// ANCHOR: race
/// A promise that settles as whichever of `first` and `second` settles first. The loser is
/// not stopped (a promise cannot be cancelled): that is up to the caller.
pub fn race<T: 'static, S: 'static>(first: Promise<T, S>, second: Promise<T, S>) -> Promise<T, S> {
    let (winner, promise) = Deferred::with_queue(first.ready());
    let winner = Rc::new(RefCell::new(Some(winner)));
    for contender in [first, second] {
        let winner = winner.clone();
        contender.on_settled(move |outcome, _, _| {
            if let Some(winner) = winner.borrow_mut().take() {
                winner.settle(outcome);
            }
        });
    }
    promise
}
// ANCHOR_END: race

// ANCHOR: delay
/// A promise that resolves after `delay`: a timer whose callback resolves it. Cancelling the
/// timer drops the Deferred, which rejects the promise.
pub fn delay<S: 'static>(
    event_loop: &mut EventLoop<S>, delay: Duration,
) -> (TimerId, Promise<(), S>) {
    let (deferred, promise) = Deferred::new(event_loop);
    let timer = event_loop.add_timer(delay, move |_, _| deferred.resolve(()));
    (timer, promise)
}
// ANCHOR_END: delay

#[cfg(test)]
#[path = "promise_tests.rs"]
mod tests;
