//! Timers: "call me back in 5 seconds", "call me every second", "call me when you're idle".
//!
//! Up to chapter 3 the loop could only wait for sockets. A `/sleep?ms=500` had to block the
//! whole thread, and a client that never finished its request could hold a connection open
//! forever. This file gives the loop a second thing to wait for: time. It is the piece Redis
//! calls "time events" in `ae.c`, and what `setTimeout`, `setInterval` and `setImmediate`
//! are in Node.
//!
//! It does no waiting itself. The loop asks it two questions on every turn:
//!
//! 1. *How long may I sleep?* [`Timers::next_timeout`] gives the time until the nearest
//!    deadline, which becomes the timeout of `poll(2)`. If a socket becomes ready first, poll
//!    returns early; if not, it returns just as the timer is due.
//! 2. *What is due now?* After handling the sockets, the loop starts a [`Run`] and calls
//!    [`Timers::pop_due`] until it returns `None`, handling each timer's payload.
//!
//! The queue does not store closures that would need to capture the server (they could not:
//! the server is borrowed mutably while they run). It stores a *payload* of any type `T`,
//! and the loop decides what a payload means. The server uses a small enum (`RefreshDate`,
//! `Deadline`, ...: see `Timer` in `main.rs`). `T` must be `Clone`: a periodic timer hands
//! out a copy of its payload on every beat.
//!
//! Time is always passed in as `now: Instant` rather than read inside, so the tests below
//! can use a fake clock and never sleep.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::time::{Duration, Instant};

/// A longer delay is treated as this long. Nothing in a server waits a year, and without a
/// cap `now + Duration::MAX` would overflow `Instant` and panic.
const LONGEST_DELAY: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Names one timer so it can be cancelled. Ids are never reused, so cancelling a timer that
/// already fired can never hit a newer timer by mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(u64);

impl fmt::Display for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timer #{}", self.0)
    }
}

// ANCHOR: timers
/// The loop's timers, plus its idle callbacks. `T` is whatever the loop wants handed back
/// when a timer fires.
pub struct Timers<T> {
    /// Every pending deadline, soonest on top. Why a heap: the loop only ever needs the
    /// *nearest* deadline, and a binary heap gives it in O(1) with O(log n) to add or remove,
    /// where a sorted list costs O(n) per insert and an unsorted one O(n) per question.
    /// (Redis kept an unsorted linked list and scanned it each turn; fine for its handful of
    /// timers, not for one timeout per connection.) `BinaryHeap` is a max-heap, so `Reverse`
    /// turns it around: the smallest deadline comes out first.
    queue: BinaryHeap<Reverse<Scheduled>>,
    /// The timers that are still wanted, by id. Cancelling removes the entry here and leaves
    /// its `Scheduled` in the heap (a heap can't remove from the middle cheaply); it is thrown
    /// away when it reaches the top. Invariant: each live timer has exactly one `Scheduled`.
    live: HashMap<TimerId, Timer<T>>,
    /// Counts up forever. Every `Scheduled` gets the next number as its sequence, and a new
    /// timer's id is its first sequence number.
    next_sequence: u64,
    /// Idle callbacks, oldest first; see [`Timers::add_idle`].
    idle: Vec<T>,
}

/// One entry in the heap: a deadline, and which timer it belongs to.
///
/// The derived ordering compares the fields top to bottom: by `deadline` first and, for equal
/// deadlines, by `sequence`. The sequence makes timers due at the same instant fire in the
/// order they were added (first in, first out). Without it the heap would pick among them in
/// no particular order, and "sleep 10 ms, then sleep 10 ms" could finish the second first.
/// Sequences are unique, so `id` never decides anything.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Scheduled {
    deadline: Instant,
    sequence: u64,
    id: TimerId,
}

/// What we keep about a live timer.
struct Timer<T> {
    payload: T,
    /// `Some` for a periodic timer: how long between beats.
    period: Option<Duration>,
}
// ANCHOR_END: timers

/// One pass over the due timers: the time it started, and the first sequence number handed
/// out after it started. Get one from [`Timers::start_run`] and pass it to every
/// [`Timers::pop_due`] of that pass.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    now: Instant,
    first_new_sequence: u64,
}

impl<T: Clone> Timers<T> {
    pub fn new() -> Self {
        Timers {
            queue: BinaryHeap::new(),
            live: HashMap::new(),
            next_sequence: 0,
            idle: Vec::new(),
        }
    }

    /// Calls back once, `delay` after `now`. Pass the real current time (`Instant::now()`),
    /// never an older one saved earlier in the turn: a timer must not land before the run it
    /// was added in started.
    pub fn add(&mut self, now: Instant, delay: Duration, payload: T) -> TimerId {
        let id = TimerId(self.next_sequence);
        self.live.insert(id, Timer { payload, period: None });
        self.schedule(id, now + delay.min(LONGEST_DELAY));
        id
    }

    /// Calls back every `period`, the first time one period after `now`, until cancelled.
    ///
    /// Panics if `period` is zero: such a timer would be due on every turn and the loop would
    /// never sleep again. That is a bug in the caller, never something a client can cause.
    pub fn add_periodic(&mut self, now: Instant, period: Duration, payload: T) -> TimerId {
        assert!(!period.is_zero(), "a periodic timer needs a period above zero");
        let period = period.min(LONGEST_DELAY);
        let id = TimerId(self.next_sequence);
        let timer = Timer { payload, period: Some(period) };
        self.live.insert(id, timer);
        self.schedule(id, now + period);
        id
    }

    /// Stops a timer so it never fires (again). O(1): it only forgets the timer; the heap
    /// entry is skipped later. Returns `false` if there was nothing to cancel: an id that
    /// already fired (a one-off timer is gone once `pop_due` handed it out, even while its
    /// payload is being handled), or one already cancelled.
    ///
    /// Safe to call while handling a due timer: cancelling another timer due in the same run
    /// keeps it from firing, and a periodic timer may cancel itself.
    pub fn cancel(&mut self, id: TimerId) -> bool {
        if self.live.remove(&id).is_none() {
            return false;
        }
        // Cancelled entries wait in the heap until their deadline. With a 10 s header timeout
        // cancelled on every request, that could be many thousands of dead entries. Once the
        // dead outnumber the living, sweep them out: O(n), but it happens at most once per n/2
        // cancels, so each cancel still costs O(1) on average.
        if self.queue.len() > 64 && self.queue.len() > 2 * self.live.len() {
            self.queue.retain(|Reverse(entry)| self.live.contains_key(&entry.id));
        }
        true
    }

    /// How many timers are pending (one-off and periodic, not idle callbacks): the
    /// `timers_pending` line of `/stats`.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    // ANCHOR: next_timeout
    /// How long the loop may sleep in `poll`: until the nearest deadline, zero if something is
    /// already due or idle work is waiting, `None` (wait for sockets only) if there are no
    /// timers at all.
    ///
    /// Rounded *up* to whole milliseconds, because `poll(2)` counts in milliseconds. Rounding
    /// down would wake the loop just before the deadline: with 0.3 ms to go it would ask for 0
    /// ms, find nothing due, ask again for 0 ms, and spin at 100% CPU until the deadline
    /// passed. Waking up to a millisecond late is harmless; waking early is wasted work.
    pub fn next_timeout(&mut self, now: Instant) -> Option<Duration> {
        if !self.idle.is_empty() {
            return Some(Duration::ZERO);
        }
        // Don't wake up for a timer somebody cancelled.
        while let Some(Reverse(next)) = self.queue.peek() {
            if self.live.contains_key(&next.id) {
                break;
            }
            self.queue.pop();
        }
        let Reverse(next) = self.queue.peek()?;
        let remaining = next.deadline.saturating_duration_since(now);
        Some(Duration::from_millis(
            remaining.as_nanos().div_ceil(1_000_000) as u64, // a year in ms fits easily
        ))
    }
    // ANCHOR_END: next_timeout

    // ANCHOR: run
    /// Starts a pass over the timers due at `now`.
    ///
    /// A run covers only what was already scheduled when it started. A timer added (or a
    /// periodic timer re-armed) while the run's payloads are being handled waits for the next
    /// run, even with a zero delay. Otherwise a callback that schedules itself again with zero
    /// delay would keep this loop busy forever, and the sockets would never be polled.
    pub fn start_run(&self, now: Instant) -> Run {
        Run { now, first_new_sequence: self.next_sequence }
    }

    /// The next timer of this run that is due, oldest deadline first, or `None` once there
    /// are no more. The loop calls it until `None`, handling each payload in between; the
    /// handler may add and cancel timers freely.
    pub fn pop_due(&mut self, run: Run) -> Option<(TimerId, T)> {
        loop {
            let Reverse(next) = self.queue.peek()?;
            // Stop at the first entry that is not yet due, or that was added during this run.
            // Either way nothing behind it is for this run: a timer added during the run
            // counts from a `now` no earlier than the run's, so whatever sorts after it is
            // due later still, or has the same deadline and was added later still.
            if next.deadline > run.now || next.sequence >= run.first_new_sequence {
                return None;
            }
            let Reverse(due) = self.queue.pop()?;
            let Some(timer) = self.live.get(&due.id) else {
                continue; // cancelled after it was scheduled: skip it
            };
            let Some(period) = timer.period else {
                // A one-off timer fires once and is then forgotten.
                let timer = self.live.remove(&due.id)?;
                return Some((due.id, timer.payload));
            };
            let payload = timer.payload.clone();
            let next_deadline = next_beat(due.deadline, period, run.now);
            self.schedule(due.id, next_deadline);
            return Some((due.id, payload));
        }
    }
    // ANCHOR_END: run

    /// Queues an idle callback: work with no deadline that should happen when the loop has
    /// nothing better to do (Node's `setImmediate`, libuv's idle handles).
    ///
    /// How the loop uses it: while idle work is queued, `next_timeout` says zero, so `poll`
    /// only checks the sockets and does not sleep. If that poll reported no events, the loop
    /// runs [`Timers::take_idle`]. Under steady load idle work can wait a long time; put
    /// nothing there that has to happen.
    pub fn add_idle(&mut self, payload: T) {
        self.idle.push(payload);
    }

    /// Takes every queued idle callback, oldest first. Like timers, callbacks queued while
    /// these are handled wait for the next idle turn.
    pub fn take_idle(&mut self) -> Vec<T> {
        std::mem::take(&mut self.idle)
    }

    /// Puts `id` in the heap at `deadline`, with a fresh sequence number.
    fn schedule(&mut self, id: TimerId, deadline: Instant) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.queue.push(Reverse(Scheduled { deadline, sequence, id }));
    }
}

/// When a periodic timer that was due at `deadline` fires next.
///
/// Normally one period after `deadline`, not after `now`: counting from `now` would add the
/// loop's lateness to every beat, and a once-a-second timer would drift later and later. But
/// if the loop was held up (a slow callback, a suspended laptop) and even that beat has
/// passed, we skip to the first beat still ahead instead of firing all the missed ones in a
/// burst: a date header refreshed ten times in a row is no better than once.
fn next_beat(deadline: Instant, period: Duration, now: Instant) -> Instant {
    let late = now.saturating_duration_since(deadline);
    // How far `now` is into the current period; below `period`, so it fits in u64 nanoseconds.
    let into_period = Duration::from_nanos((late.as_nanos() % period.as_nanos()) as u64);
    now + (period - into_period)
}

// Why `Instant` and never `SystemTime`: `SystemTime` is the wall clock, and people, NTP and
// virtual machines set it backwards and forwards. Redis measured its timers with the wall
// clock and had to guess: when time seemed to run backwards, `ae.c` fired *every* timer at
// once, because a timer due "in an hour" might otherwise wait for the clock to catch up. An
// `Instant` comes from the monotonic clock, which only moves forward, so a deadline means
// what it says.

#[cfg(test)]
mod tests {
    use super::*;

    /// The fake clock: `at(n)` is n milliseconds after one fixed starting instant.
    fn clock() -> impl Fn(u64) -> Instant {
        let start = Instant::now();
        move |ms| start + Duration::from_millis(ms)
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Every payload one run hands out, in order.
    fn run_all<T: Clone>(timers: &mut Timers<T>, now: Instant) -> Vec<T> {
        let run = timers.start_run(now);
        std::iter::from_fn(|| timers.pop_due(run).map(|(_, payload)| payload)).collect()
    }

    #[test]
    fn fires_in_deadline_order_and_not_before() {
        let at = clock();
        let mut timers = Timers::new();
        timers.add(at(0), ms(30), "thirty");
        timers.add(at(0), ms(10), "ten");
        timers.add(at(0), ms(20), "twenty");
        assert!(run_all(&mut timers, at(9) + us(900)).is_empty());
        assert_eq!(run_all(&mut timers, at(10)), ["ten"]);
        assert_eq!(run_all(&mut timers, at(35)), ["twenty", "thirty"]);
        assert_eq!(timers.len(), 0);
    }

    #[test]
    fn equal_deadlines_fire_first_in_first_out() {
        let at = clock();
        let mut timers = Timers::new();
        for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
            timers.add(at(0), ms(5), name);
        }
        // Added later with a shorter delay, landing on the same instant: still after them.
        timers.add(at(3), ms(2), "late");
        assert_eq!(run_all(&mut timers, at(5)), ["a", "b", "c", "d", "e", "f", "g", "h", "late"]);
    }

    #[test]
    fn cancel_before_due() {
        let at = clock();
        let mut timers = Timers::new();
        let keep = timers.add(at(0), ms(10), "keep");
        let drop = timers.add(at(0), ms(10), "drop");
        assert_ne!(keep, drop);
        assert!(timers.cancel(drop));
        assert_eq!(timers.len(), 1);
        assert_eq!(run_all(&mut timers, at(10)), ["keep"]);
    }

    #[test]
    fn cancel_inside_a_run_a_timer_due_in_the_same_run() {
        let at = clock();
        let mut timers = Timers::new();
        timers.add(at(0), ms(1), "first");
        let second = timers.add(at(0), ms(2), "second");
        timers.add(at(0), ms(3), "third");
        let run = timers.start_run(at(5));
        assert_eq!(timers.pop_due(run).map(|(_, p)| p), Some("first"));
        // While handling "first", the loop cancels "second", which is already due.
        assert!(timers.cancel(second));
        assert_eq!(timers.pop_due(run).map(|(_, p)| p), Some("third"));
        assert_eq!(timers.pop_due(run), None);
    }

    #[test]
    fn periodic_timer_cancels_itself_from_its_own_callback() {
        let at = clock();
        let mut timers = Timers::new();
        let tick = timers.add_periodic(at(0), ms(10), "tick");
        assert_eq!(run_all(&mut timers, at(10)), ["tick"]);
        let run = timers.start_run(at(20));
        let (id, _) = timers.pop_due(run).expect("the second beat is due");
        assert_eq!(id, tick);
        assert!(timers.cancel(id), "a periodic timer is live while it runs");
        assert_eq!(timers.pop_due(run), None);
        assert_eq!(timers.len(), 0);
        assert_eq!(timers.next_timeout(at(20)), None);
        assert!(run_all(&mut timers, at(1000)).is_empty());
    }

    #[test]
    fn cancel_of_unknown_fired_or_cancelled_id_is_false() {
        let at = clock();
        let mut timers = Timers::new();
        assert!(!timers.cancel(TimerId(42)));
        let fired = timers.add(at(0), ms(1), ());
        let run = timers.start_run(at(1));
        assert_eq!(timers.pop_due(run), Some((fired, ())));
        // Even from inside its own callback, a one-off timer is already gone.
        assert!(!timers.cancel(fired));
        let twice = timers.add(at(0), ms(5), ());
        assert!(timers.cancel(twice));
        assert!(!timers.cancel(twice));
    }

    #[test]
    fn zero_delay_timer_added_during_a_run_waits_for_the_next_run() {
        let at = clock();
        let mut timers = Timers::new();
        timers.add(at(0), ms(1), "again");
        let run = timers.start_run(at(1));
        assert_eq!(timers.pop_due(run).map(|(_, p)| p), Some("again"));
        // The callback re-arms itself with no delay, at the very same instant.
        timers.add(at(1), Duration::ZERO, "again");
        assert_eq!(timers.pop_due(run), None, "not in the run that added it");
        assert_eq!(timers.next_timeout(at(1)), Some(Duration::ZERO));
        assert_eq!(run_all(&mut timers, at(1)), ["again"], "but in the next");
    }

    #[test]
    fn periodic_keeps_its_beat_and_skips_missed_beats() {
        let at = clock();
        let mut timers = Timers::new();
        timers.add_periodic(at(0), ms(10), "beat");
        // Late by 3 ms: fires once, and the next beat is still at 20, not at 23.
        assert_eq!(run_all(&mut timers, at(13)), ["beat"]);
        assert_eq!(timers.next_timeout(at(13)), Some(ms(7)));
        // The loop was stuck from 13 to 55: beats 20, 30, 40 and 50 were missed. One call,
        // not four, and the next beat is 60.
        assert_eq!(run_all(&mut timers, at(55)), ["beat"]);
        assert_eq!(timers.next_timeout(at(55)), Some(ms(5)));
        assert!(run_all(&mut timers, at(59)).is_empty());
        assert_eq!(run_all(&mut timers, at(60)), ["beat"]);
        // Exactly on a later beat (70 missed, 80 is now): once, and the next is 90.
        assert_eq!(run_all(&mut timers, at(80)), ["beat"]);
        assert_eq!(timers.next_timeout(at(80)), Some(ms(10)));
        assert_eq!(timers.len(), 1);
    }

    #[test]
    fn next_timeout_rounds_up_to_whole_milliseconds() {
        let at = clock();
        let cases = [
            (us(1200), Some(ms(2))),
            (us(2000), Some(ms(2))),
            (Duration::from_nanos(1), Some(ms(1))),
            (Duration::ZERO, Some(ms(0))),
        ];
        for (delay, expected) in cases {
            let mut timers = Timers::new();
            timers.add(at(0), delay, ());
            assert_eq!(timers.next_timeout(at(0)), expected, "{delay:?}");
        }
        let mut timers = Timers::new();
        assert_eq!(timers.next_timeout(at(0)), None, "no timers: wait for sockets");
        timers.add(at(0), ms(5), ());
        assert_eq!(timers.next_timeout(at(9)), Some(ms(0)), "overdue");
    }

    #[test]
    fn a_sub_millisecond_remainder_does_not_busy_loop() {
        let at = clock();
        let mut timers = Timers::new();
        timers.add(at(0), us(300), "soon");
        // Asking for 0 ms here would return at once with nothing due, again and again.
        assert_eq!(timers.next_timeout(at(0)), Some(ms(1)));
        assert!(run_all(&mut timers, at(0)).is_empty());
        // After sleeping the 1 ms it asked for, the timer is due.
        assert_eq!(run_all(&mut timers, at(1)), ["soon"]);
    }

    #[test]
    fn cancelled_timers_do_not_shorten_the_wait_or_pile_up() {
        let at = clock();
        let mut timers = Timers::new();
        let early = timers.add(at(0), ms(5), 0);
        timers.add(at(0), ms(50), 1);
        timers.cancel(early);
        assert_eq!(timers.next_timeout(at(0)), Some(ms(50)));
        // A header timeout per request, each cancelled when the request arrives.
        for request in 0..10_000 {
            let id = timers.add(at(0), ms(10_000), request);
            timers.cancel(id);
        }
        assert_eq!(timers.len(), 1);
        assert!(timers.queue.len() <= 130, "{} entries", timers.queue.len());
    }

    #[test]
    fn len_counts_pending_timers() {
        let at = clock();
        let mut timers = Timers::new();
        assert_eq!(timers.len(), 0);
        let one = timers.add(at(0), ms(10), "one");
        timers.add(at(0), ms(20), "two");
        timers.add_periodic(at(0), ms(15), "every");
        timers.add_idle("idle work is not a timer");
        assert_eq!(timers.len(), 3);
        timers.cancel(one);
        assert_eq!(timers.len(), 2);
        assert_eq!(run_all(&mut timers, at(20)), ["every", "two"]);
        assert_eq!(timers.len(), 1, "the periodic timer stays");
    }

    #[test]
    fn idle_callbacks_run_in_order_and_keep_the_poll_from_sleeping() {
        let at = clock();
        let mut timers = Timers::new();
        timers.add(at(0), ms(100), "timer");
        timers.add_idle("first");
        timers.add_idle("second");
        assert_eq!(timers.next_timeout(at(0)), Some(Duration::ZERO));
        let batch = timers.take_idle();
        assert_eq!(batch, ["first", "second"]);
        // Idle work queued while that batch runs waits for the next idle turn.
        timers.add_idle("later");
        assert_eq!(timers.take_idle(), ["later"]);
        assert_eq!(timers.next_timeout(at(0)), Some(ms(100)));
    }
}
