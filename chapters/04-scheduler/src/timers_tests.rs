//! The timer heap on a fake clock: `at(n)` is n milliseconds after a fixed instant, so no
//! test sleeps.

use super::*;
use std::time::Duration;

fn clock() -> impl Fn(u64) -> Instant {
    let start = Instant::now();
    move |ms| start + Duration::from_millis(ms)
}

fn due<T>(timers: &mut Timers<T>, now: Instant) -> Vec<T> {
    std::iter::from_fn(|| timers.pop_due(now)).collect()
}

#[test]
fn fire_in_deadline_order_and_not_before() {
    let at = clock();
    let mut timers = Timers::new();
    timers.add(at(30), "thirty");
    timers.add(at(10), "ten");
    timers.add(at(20), "twenty");
    assert_eq!(timers.next_deadline(), Some(at(10)));
    assert!(due(&mut timers, at(9)).is_empty());
    assert_eq!(due(&mut timers, at(10)), ["ten"]);
    assert_eq!(due(&mut timers, at(35)), ["twenty", "thirty"]);
    assert_eq!((timers.len(), timers.next_deadline()), (0, None));
}

#[test]
fn equal_deadlines_fire_first_in_first_out() {
    let at = clock();
    let mut timers = Timers::new();
    for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        timers.add(at(5), name);
    }
    assert_eq!(due(&mut timers, at(5)), ["a", "b", "c", "d", "e", "f", "g", "h"]);
}

#[test]
fn a_cancelled_timer_never_fires_nor_sets_the_next_deadline() {
    let at = clock();
    let mut timers = Timers::new();
    let early = timers.add(at(1), "early");
    timers.add(at(10), "keep");
    assert!(timers.cancel(early));
    assert!(!timers.cancel(early), "a second cancel finds nothing");
    assert_eq!(timers.next_deadline(), Some(at(10)));
    assert_eq!(timers.len(), 1);
    assert_eq!(due(&mut timers, at(10)), ["keep"]);
    let fired = timers.add(at(11), "fired");
    assert_eq!(due(&mut timers, at(11)), ["fired"]);
    assert!(!timers.cancel(fired), "a timer that fired cannot be cancelled");
}

#[test]
fn a_timer_cancelled_while_others_fire_in_the_same_run_does_not_fire() {
    let at = clock();
    let mut timers = Timers::new();
    timers.add(at(1), "first");
    let second = timers.add(at(2), "second");
    timers.add(at(3), "third");
    assert_eq!(timers.pop_due(at(5)), Some("first"));
    assert!(timers.cancel(second)); // what "first"'s callback might do
    assert_eq!(due(&mut timers, at(5)), ["third"]);
}

#[test]
fn cancelled_entries_do_not_pile_up() {
    let at = clock();
    let mut timers = Timers::new();
    timers.add(at(1_000), "live");
    for n in 0..10_000 {
        let id = timers.add(at(2_000 + n), "re-armed");
        timers.cancel(id);
    }
    assert!(timers.heap.len() < 200, "{} entries left in the heap", timers.heap.len());
    assert_eq!(due(&mut timers, at(100_000)), ["live"]);
}
