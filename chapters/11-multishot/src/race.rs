//! Racing two futures: poll both, keep the answer of the first to finish, drop the other.
//!
//! This is how a task waits for two things at once: a read, or the end of its time
//! (`time::timeout`); a request's answer, or its client leaving (`connection.rs`); an
//! accept, or the server shutting down (`main.rs`). Dropping the loser is what cancels it:
//! its timer goes, its place in a line goes, its socket closes, wherever it had got to.
//! Tokio's `select!` macro does the same for any number of futures.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

/// Which future finished first, and its output.
pub enum Winner<A, B> {
    First(A),
    Second(B),
}

// ANCHOR: race
/// Runs `first` and `second` together, in this task, until one is ready. Both are polled
/// with the task's own waker, so either can wake it; `first` is polled first, so it wins
/// a tie. The loser is dropped when `race` returns.
pub async fn race<A: Future, B: Future>(first: A, second: B) -> Winner<A::Output, B::Output> {
    // Pinned here, inside `race`'s own state: a future is polled where it stays.
    let (mut first, mut second) = (pin!(first), pin!(second));
    poll_fn(|cx| {
        if let Poll::Ready(output) = first.as_mut().poll(cx) {
            return Poll::Ready(Winner::First(output));
        }
        second.as_mut().poll(cx).map(Winner::Second)
    })
    .await
}
// ANCHOR_END: race
