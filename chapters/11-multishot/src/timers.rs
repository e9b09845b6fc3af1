//! Timers: "call me back in 500 ms" (Redis's time events, Node's `setTimeout`).
//!
//! They do no waiting themselves. The loop asks them on every turn when the nearest
//! deadline is ([`Timers::next_deadline`]: how long `poll` may sleep), and, once awake,
//! which timers are due ([`Timers::pop_due`]). A timer carries a payload, handed back when
//! it fires: for the loop, a job. Time is always an `Instant`, the monotonic clock: the
//! wall clock can be set backwards, and Redis, which once used it, then fired every timer.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Instant;

/// Names one timer, so that it can be cancelled. Never reused, so cancelling a timer that
/// has fired already can never cancel a newer one by mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimerId(u64);

// ANCHOR: timers
pub struct Timers<T> {
    /// Every deadline, soonest on top: a heap, as the loop only needs the nearest (O(1) to
    /// see, O(log n) to add or take). `Reverse` makes it a min-heap; ties go by id, oldest first.
    heap: BinaryHeap<Reverse<(Instant, TimerId)>>,
    /// The timers still wanted, and their payloads. Cancelling removes a timer from here
    /// only; its heap entry is skipped when it comes to the top.
    pending: BTreeMap<TimerId, T>,
    next_id: u64,
}
// ANCHOR_END: timers

impl<T> Timers<T> {
    pub fn new() -> Timers<T> {
        Timers { heap: BinaryHeap::new(), pending: BTreeMap::new(), next_id: 0 }
    }

    /// Hands `payload` back from `pop_due` once `deadline` has come.
    pub fn add(&mut self, deadline: Instant, payload: T) -> TimerId {
        let id = TimerId(self.next_id);
        self.next_id += 1;
        self.heap.push(Reverse((deadline, id)));
        self.pending.insert(id, payload);
        id
    }

    /// Stops a timer so that it never fires. `false` if it has fired or was cancelled.
    pub fn cancel(&mut self, id: TimerId) -> bool {
        let cancelled = self.pending.remove(&id).is_some();
        // With one timer per connection, re-armed often, cancelled entries could pile up in
        // the heap by the thousand. Once they outnumber the live ones, sweep them out:
        // O(n), but at most once per n/2 cancels, so O(1) a cancel on average.
        if self.heap.len() > 64 && self.heap.len() > 2 * self.pending.len() {
            self.heap.retain(|Reverse((_, id))| self.pending.contains_key(id));
        }
        cancelled
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    // ANCHOR: next_deadline
    /// The nearest deadline of a timer still pending, if there is one.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(&Reverse((deadline, id))) = self.heap.peek() {
            if self.pending.contains_key(&id) {
                return Some(deadline);
            }
            self.heap.pop(); // cancelled: never wake up for it
        }
        None
    }

    /// The payload of the next timer due at `now`, soonest deadline first.
    pub fn pop_due(&mut self, now: Instant) -> Option<T> {
        if self.next_deadline()? > now {
            return None;
        }
        let Reverse((_, id)) = self.heap.pop()?;
        self.pending.remove(&id) // pending: `next_deadline` skipped the cancelled ones
    }
    // ANCHOR_END: next_deadline
}
