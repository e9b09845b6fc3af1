//! Time for tasks: [`sleep`] and [`timeout`], on chapter 4's timer heap (`timers.rs`),
//! whose payloads are now wakers: a timer that fires wakes the task that set it.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::race::{race, Winner};
use crate::timers::{TimerId, Timers};

thread_local! {
    static TIMERS: RefCell<Timers<Waker>> = RefCell::new(Timers::new());
}

// ANCHOR: sleep
/// A future that is ready once `duration` has passed.
pub fn sleep(duration: Duration) -> Sleep {
    Sleep { deadline: Instant::now() + duration, armed: None }
}

pub struct Sleep {
    deadline: Instant,
    /// The timer set for it, and the waker it wakes.
    armed: Option<(TimerId, Waker)>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        // Set a timer to wake this task; again only if the task to wake has changed.
        if !self.armed.as_ref().is_some_and(|(_, waker)| waker.will_wake(cx.waker())) {
            let deadline = self.deadline;
            let timer = TIMERS.with(|timers| {
                let mut timers = timers.borrow_mut();
                if let Some((old, _)) = self.armed.take() {
                    timers.cancel(old);
                }
                timers.add(deadline, cx.waker().clone())
            });
            self.armed = Some((timer, cx.waker().clone()));
        }
        Poll::Pending
    }
}

/// A sleep that ends early (its task dropped, or the future it raced finished first)
/// takes its timer with it: cancellation by drop.
impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some((timer, _)) = self.armed.take() {
            TIMERS.with(|timers| timers.borrow_mut().cancel(timer));
        }
    }
}
// ANCHOR_END: sleep

// ANCHOR: timeout
/// `future` did not finish in time.
#[derive(Debug)]
pub struct Elapsed;

/// Runs `future`, but gives up on it after `duration`: `Err(Elapsed)`, and `future` is
/// dropped, which stops whatever it was doing (closes its socket, cancels its timers).
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, Elapsed> {
    match race(future, sleep(duration)).await {
        Winner::First(output) => Ok(output),
        Winner::Second(()) => Err(Elapsed),
    }
}
// ANCHOR_END: timeout

/// How long the loop may wait: until the nearest timer is due, and at most `limit`.
pub fn until_next(limit: Option<Duration>) -> Option<Duration> {
    let next = TIMERS.with(|timers| timers.borrow_mut().next_deadline());
    let until_next = next.map(|deadline| deadline.saturating_duration_since(Instant::now()));
    match (limit, until_next) {
        (Some(limit), Some(until_next)) => Some(limit.min(until_next)),
        (limit, until_next) => limit.or(until_next),
    }
}

/// Wakes the tasks whose timers are due.
pub fn wake_due() {
    let now = Instant::now();
    let due: Vec<Waker> =
        TIMERS.with(|timers| std::iter::from_fn(|| timers.borrow_mut().pop_due(now)).collect());
    due.into_iter().for_each(Waker::wake);
}

/// How many timers are pending (for `/stats`).
pub fn pending() -> usize {
    TIMERS.with(|timers| timers.borrow().len())
}
