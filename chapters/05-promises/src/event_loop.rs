//! The event loop: "call me back when this descriptor is ready".
//!
//! Chapter 2's `main` did everything itself: built the list for `poll`, waited, and walked
//! the answers back to the right `Connection`. Here that machinery becomes a small library
//! the server *uses*, the way Redis uses its `ae.c` and Rust programs use mio:
//!
//! - [`EventLoop::register`] a file descriptor with an [`Interest`] (readable, writable,
//!   both) and a [`Handler`], the object whose `on_readable` / `on_writable` the loop calls.
//!   You get back a [`Token`] that names the registration from then on.
//! - [`EventLoop::set_interest`] changes what to wait for; [`EventLoop::deregister`] stops.
//! - [`EventLoop::run`] turns the loop until a callback calls [`EventLoop::stop`].
//!
//! New in chapter 4, the loop also waits for time (the queue itself is in `timers.rs`):
//!
//! - [`EventLoop::add_timer_for`] calls a registration's `on_timer` after a delay: a
//!   connection's `/sleep`, its timeouts. [`EventLoop::add_timer`] and
//!   [`EventLoop::add_periodic_timer`] call the program's own [`SharedState::on_timer`]
//!   instead: the `Date` header, refreshed once a second. [`EventLoop::cancel_timer`] stops
//!   either kind.
//! - [`EventLoop::add_idle`] (and `add_idle_for`) queue work with no deadline at all, run
//!   on a turn when nothing else was ready.
//!
//! New in chapter 5, the loop runs promise callbacks (the promises are in `promise.rs`):
//!
//! - [`EventLoop::ready`] is the loop's [`ReadyQueue`]: a promise's next step waits there
//!   once its Deferred has settled, and the loop runs the queue once per turn.
//! - [`EventLoop::delay`] is a timer as a promise: it resolves when the time is up.
//! - [`EventLoop::outbox`] is how a promise callback, which runs with nothing borrowed,
//!   reaches a registration: it posts a message, which the loop hands to that
//!   registration's `on_timer`.
//!
//! One turn reads top to bottom like Redis's `aeProcessEvents`: ask the timers how long we
//! may wait, wait in `poll` (the only place the program waits), run the callback of each
//! descriptor that is ready, then the timers that are due, then the promise callbacks all
//! of that made ready, then, if nothing was ready, the idle callbacks. The waiting itself
//! lives behind a four-method interface in `poll_backend.rs`, so `poll` could be swapped
//! for `epoll` (an exercise) without touching this file.
//!
//! Three things real loops get right, and so does this one, each explained where it
//! happens: an event for a registration that an earlier callback of the same turn removed
//! is not delivered ([`Token`] and `call`); a panic in one callback costs that
//! registration, not the loop (`call`); and the loop never holds the handler while the
//! handler holds the loop (the borrow-checker note on [`Handler`]).

use std::any::{self, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::mem;
use std::os::fd::RawFd;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::time::{Duration, Instant};

use shared::trace;

use crate::poll_backend::Poller;
use crate::promise::{Abandoned, Deferred, Promise, ReadyQueue};
use crate::timers::{TimerId, Timers};

// ANCHOR: token
/// Names one registration: which slot of the loop holds it, and which *generation* of
/// that slot it is.
///
/// Why not just the file descriptor, as in Chapter 2 or Redis? Because descriptor numbers
/// are reused at once: close fd 7 and the very next `accept` returns 7 again. Suppose
/// `poll` reports fd 7 readable, an earlier callback in the same turn closes fd 7, and the
/// listener's callback then accepts a new client that gets fd 7. Keyed by descriptor, the
/// old connection's event would be handed to the new connection. Slots are reused too,
/// so each slot counts how often it has been freed: the event carries `3.1`, the new
/// registration in slot 3 is `3.2`, and the loop sees that they differ. (mio's `Token`
/// is a plain number the program chooses; ours adds the generation for this check.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Token {
    index: u32,
    generation: u32,
}
// ANCHOR_END: token

#[cfg(test)]
impl Token {
    /// A token for testing the poll backend alone, without a loop.
    pub fn for_tests(index: u32) -> Token {
        Token { index, generation: 0 }
    }
}

/// Printed as `slot.generation`, such as `3.1`, in `--trace` lines.
impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.index, self.generation)
    }
}

// ANCHOR: interest_and_event
/// What a registration waits for. Plain booleans rather than bit flags: the two questions
/// `poll` can answer for us, "may I read without waiting?" and "may I write?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interest {
    pub readable: bool,
    pub writable: bool,
}

impl Interest {
    /// Wait for nothing for now; the registration stays (see `poll_backend::pollfd`).
    pub const NONE: Interest = Interest { readable: false, writable: false };
    pub const READABLE: Interest = Interest { readable: true, writable: false };
    pub const WRITABLE: Interest = Interest { readable: false, writable: true };
}

/// One thing `poll` reported: this registration is ready to read and/or to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub token: Token,
    pub readable: bool,
    pub writable: bool,
}
// ANCHOR_END: interest_and_event

// ANCHOR: shared_state
/// The program's shared state `S`, as far as the loop needs to know it now that it keeps
/// time: what the program's timers carry, and who handles the ones that belong to no
/// registration.
pub trait SharedState: Sized {
    /// What a timer hands back when it fires. The server uses an enum that says what the
    /// timer is for (`Deadline`, `Answer`, ...; see `main.rs`). `Debug`, so that
    /// `--trace` can name a timer as it fires; `Clone`, because a periodic timer hands out
    /// a copy on every beat.
    type Timer: fmt::Debug + Clone;

    /// One of the program's own timers fired, or its idle callback ran: one added with
    /// [`EventLoop::add_timer`], [`EventLoop::add_periodic_timer`] or
    /// [`EventLoop::add_idle`].
    fn on_timer(&mut self, event_loop: &mut EventLoop<Self>, timer: Self::Timer);
}
// ANCHOR_END: shared_state

// ANCHOR: handler
/// What the loop calls back. `S` is the program's shared state (the server's counters,
/// its configuration, ...), which the loop lends to every callback as `&mut S`.
///
/// Why the loop passes `event_loop` and `state` in, instead of the handler keeping
/// references to them: a callback must be able to change the loop (register the client it
/// just accepted, change its own interest, deregister itself or another descriptor) while
/// the loop is in the middle of calling it. In C, Redis passes the loop pointer and reaches
/// its state through a global. In Rust, a handler that *stored* `&mut EventLoop` would be a
/// second mutable borrow of the loop that owns it, which the borrow checker rightly
/// refuses. So the loop lends both for the length of one call. (The other common shape,
/// closures capturing `Rc<RefCell<...>>`, moves that check from compile time to a panic at
/// run time.)
pub trait Handler<S: SharedState> {
    /// The descriptor can be read without waiting: data, end-of-file, or an error.
    fn on_readable(&mut self, event_loop: &mut EventLoop<S>, token: Token, state: &mut S);

    /// The descriptor can be written without waiting (or has failed). Only called while
    /// the interest includes `writable`, so a handler that never asks need not write one.
    fn on_writable(&mut self, _event_loop: &mut EventLoop<S>, _token: Token, _state: &mut S) {}

    /// A timer set for this registration has fired, or its idle callback is up (see
    /// [`EventLoop::add_timer_for`]). Never once the registration has ended: the loop
    /// checks the token, as it does for events.
    fn on_timer(
        &mut self, _event_loop: &mut EventLoop<S>, _token: Token, _state: &mut S, _timer: S::Timer,
    ) {
    }
}
// ANCHOR_END: handler

// ANCHOR: outbox
/// New in chapter 5: how a promise callback reaches a registration.
///
/// A promise's steps run from the ready queue with nothing borrowed: not the loop, not the
/// shared state, not a connection. That is what makes them safe to run (see `promise.rs`),
/// but it also means a step cannot call a connection, nor change what the loop watches.
/// Only the loop can lend a handler out. So the step leaves a message instead, with
/// [`Outbox::post`], and right after the ready callbacks the loop hands each message to
/// its registration's [`Handler::on_timer`], as if a timer had fired. A message for a
/// registration that has ended is skipped, like a stale event (see [`Token`]).
///
/// Cloning gives another handle to the same outbox (it is an `Rc` inside).
pub struct Outbox<T> {
    messages: Rc<RefCell<Vec<(Token, T)>>>,
}

impl<T> Clone for Outbox<T> {
    fn clone(&self) -> Outbox<T> {
        Outbox { messages: Rc::clone(&self.messages) }
    }
}

impl<T> Outbox<T> {
    /// Leaves `message` for `token`'s handler, delivered at the end of this turn.
    pub fn post(&self, token: Token, message: T) {
        self.messages.borrow_mut().push((token, message));
    }
}
// ANCHOR_END: outbox

// ANCHOR: slots
/// One registered descriptor.
struct Registration<S: SharedState> {
    fd: RawFd,
    interest: Interest,
    /// The handler's type name, for `--trace`:
    /// `fd 7 (token 3.1) readable -> Connection::on_readable`.
    name: &'static str,
    /// The handler's type, for [`EventLoop::count`].
    kind: TypeId,
    /// `None` while its own callback runs (see `call`).
    handler: Option<Box<dyn Handler<S>>>,
}

/// A place for a registration. Freed slots are reused; `generation` counts the reuses.
struct Slot<S: SharedState> {
    generation: u32,
    registration: Option<Registration<S>>,
}

/// Which of a handler's callbacks to run. A timer brings its payload along.
enum Callback<T> {
    Readable,
    Writable,
    Timer(T),
}

/// What a timer does when it fires.
#[derive(Clone)]
enum Payload<T> {
    /// Calls a registration's handler (`Some(token)`) or the program's
    /// [`SharedState::on_timer`] (`None`) with the program's own payload.
    Call(Option<Token>, T),
    /// New in chapter 5: resolves the promise of a [`EventLoop::delay`]. Its Deferred waits
    /// in `delays`, under this timer's id, and not in the payload itself: a payload must
    /// be `Clone`, for periodic timers, and a Deferred cannot be copied (it settles once).
    Resolve,
}

pub struct EventLoop<S: SharedState> {
    poller: Poller,
    slots: Vec<Slot<S>>,
    /// Indexes of empty slots, to reuse before growing `slots`.
    free: Vec<u32>,
    /// How many registrations there are of each handler type (see [`EventLoop::count`]).
    kinds: HashMap<TypeId, usize>,
    /// What the last `poll` reported. Kept between turns so its memory is reused.
    events: Vec<Event>,
    /// The timers and idle callbacks. Each carries whom to call: the handler of a
    /// registration (`Some(token)`), or the program's [`SharedState::on_timer`] (`None`).
    timers: Timers<Payload<S::Timer>>,
    /// The Deferreds of the `delay` timers, by timer id, each inside the call that resolves
    /// it (a call, because each `delay` may have its own error type).
    delays: HashMap<TimerId, Box<dyn FnOnce()>>,
    /// Promise callbacks whose turn has come (see `turn`).
    ready: ReadyQueue,
    /// Messages from promise callbacks to registrations (see [`Outbox`]).
    outbox: Outbox<S::Timer>,
    turns: u64,
    stopped: bool,
}
// ANCHOR_END: slots

impl<S: SharedState> EventLoop<S> {
    pub fn new() -> EventLoop<S> {
        EventLoop {
            poller: Poller::new(),
            slots: Vec::new(),
            free: Vec::new(),
            kinds: HashMap::new(),
            events: Vec::new(),
            timers: Timers::new(),
            delays: HashMap::new(),
            ready: ReadyQueue::new(),
            outbox: Outbox { messages: Rc::default() },
            turns: 0,
            stopped: false,
        }
    }

    // ANCHOR: register
    /// Starts watching `fd` for `interest`; when it is ready, the loop calls `handler`.
    ///
    /// The handler usually owns the descriptor (a `Connection` owns its `TcpStream`), so
    /// the loop owning the handler means it decides when the descriptor closes: when the
    /// registration ends and the handler is dropped. The descriptor must stay open until
    /// then; closing it behind the loop's back would leave `poll` watching a dead number.
    pub fn register<H>(&mut self, fd: RawFd, interest: Interest, handler: H) -> io::Result<Token>
    where
        H: Handler<S> + 'static,
    {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(self.slots.len())
                    .map_err(|_| io::Error::other("too many registrations"))?;
                self.slots.push(Slot { generation: 0, registration: None });
                index
            }
        };
        let slot = &mut self.slots[index as usize];
        let token = Token { index, generation: slot.generation };
        if let Err(error) = self.poller.add(fd, token, interest) {
            self.free.push(index);
            return Err(error);
        }
        slot.registration = Some(Registration {
            fd,
            interest,
            name: short_type_name::<H>(),
            kind: TypeId::of::<H>(),
            handler: Some(Box::new(handler)),
        });
        *self.kinds.entry(TypeId::of::<H>()).or_default() += 1;
        Ok(token)
    }

    /// Changes what `token` waits for. A token that is no longer registered is ignored:
    /// whoever holds it is simply late.
    pub fn set_interest(&mut self, token: Token, interest: Interest) -> io::Result<()> {
        let Some(registration) = self.registration_mut(token) else {
            return Ok(());
        };
        // The common case (a connection that keeps waiting for the same thing) costs
        // nothing; with epoll it would otherwise cost a system call per event.
        if registration.interest == interest {
            return Ok(());
        }
        let fd = registration.fd;
        registration.interest = interest;
        self.poller.modify(fd, token, interest)
    }

    /// Stops watching `token`'s descriptor and drops its handler, which closes the
    /// descriptor if the handler owns it. Returns whether `token` was registered: a stale
    /// token (already deregistered, its slot perhaps reused) does nothing, thanks to the
    /// generation. A handler may deregister itself from inside its own callback; it is
    /// then dropped as soon as that callback returns (see `call`).
    pub fn deregister(&mut self, token: Token) -> bool {
        let Some(slot) = self.slots.get_mut(token.index as usize) else {
            return false;
        };
        if slot.generation != token.generation {
            return false;
        }
        let Some(registration) = slot.registration.take() else {
            return false;
        };
        // A new generation: every copy of the old token, including events of this turn
        // that are not delivered yet, now names nothing.
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(token.index);
        if let Some(count) = self.kinds.get_mut(&registration.kind) {
            *count -= 1;
        }
        // Forget the descriptor *before* the handler is dropped and closes it: the number
        // may be reused by the next `accept`, and must not still be in the poller then.
        if let Err(error) = self.poller.delete(registration.fd) {
            trace!("fd {} (token {token}): delete failed: {error}", registration.fd);
        }
        trace!("fd {} (token {token}): deregistered", registration.fd);
        drop(registration.handler);
        true
    }
    // ANCHOR_END: register

    /// How many registrations have a handler of type `H`. `/stats` counts its open
    /// connections this way: the registrations whose handler is a `Connection`, whatever
    /// else the loop is watching.
    pub fn count<H: 'static>(&self) -> usize {
        self.kinds.get(&TypeId::of::<H>()).copied().unwrap_or(0)
    }

    /// How many times `poll` has returned (for `/stats`).
    pub fn turns(&self) -> u64 {
        self.turns
    }

    // ANCHOR: timer_api
    /// Calls `token`'s handler ([`Handler::on_timer`]) with `timer` once `delay` has
    /// passed, unless cancelled first. If the registration has ended by then, the timer
    /// fires into nothing, like an event for a closed descriptor.
    pub fn add_timer_for(&mut self, token: Token, delay: Duration, timer: S::Timer) -> TimerId {
        let payload = Payload::Call(Some(token), timer);
        self.timers.add(Instant::now(), delay, payload)
    }

    /// Calls the program's [`SharedState::on_timer`] with `timer` once `delay` has passed.
    pub fn add_timer(&mut self, delay: Duration, timer: S::Timer) -> TimerId {
        self.timers.add(Instant::now(), delay, Payload::Call(None, timer))
    }

    /// Calls [`SharedState::on_timer`] with a copy of `timer` every `period`, until
    /// cancelled.
    pub fn add_periodic_timer(&mut self, period: Duration, timer: S::Timer) -> TimerId {
        self.timers.add_periodic(Instant::now(), period, Payload::Call(None, timer))
    }

    /// Stops a timer so that it never fires (again). `false` if there was nothing to stop:
    /// it already fired, or was already cancelled. Cancelling a `delay` drops its Deferred,
    /// which rejects its promise with `Abandoned`: the chain waiting on it ends, in its
    /// `catch`, instead of waiting forever.
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        self.delays.remove(&id);
        self.timers.cancel(id)
    }

    /// Calls [`SharedState::on_timer`] with `timer` on the next turn when nothing else is
    /// ready. Under steady load that may be a long time: only for work that can wait.
    pub fn add_idle(&mut self, timer: S::Timer) {
        self.timers.add_idle(Payload::Call(None, timer));
    }

    /// The same, for `token`'s handler.
    pub fn add_idle_for(&mut self, token: Token, timer: S::Timer) {
        self.timers.add_idle(Payload::Call(Some(token), timer));
    }

    /// How many timers are pending, one-off and periodic (for `/stats`).
    pub fn timers_pending(&self) -> usize {
        self.timers.len()
    }
    // ANCHOR_END: timer_api

    // ANCHOR: delay
    /// New in chapter 5: a promise that resolves once `delay` has passed, JavaScript's
    /// `setTimeout` made a promise. It is an ordinary timer; when it fires, the loop
    /// resolves the promise's Deferred, and the steps chained after it run from the ready
    /// queue at the end of that same turn. The id cancels it like any timer.
    pub fn delay<E>(&mut self, delay: Duration) -> (TimerId, Promise<(), E>)
    where
        E: From<Abandoned> + 'static,
    {
        let (deferred, promise) = Deferred::new(&self.ready);
        let id = self.timers.add(Instant::now(), delay, Payload::Resolve);
        self.delays.insert(id, Box::new(move || deferred.resolve(())));
        (id, promise)
    }
    // ANCHOR_END: delay

    /// The ready queue, for making promises: `Deferred::new(event_loop.ready())`.
    pub fn ready(&self) -> &ReadyQueue {
        &self.ready
    }

    /// A handle on the outbox, for promise callbacks to keep (see [`Outbox`]).
    pub fn outbox(&self) -> Outbox<S::Timer> {
        self.outbox.clone()
    }

    /// Turns the loop until a callback calls [`EventLoop::stop`]. Fails only if `poll`
    /// itself fails, which means something is badly wrong (out of memory, say).
    pub fn run(&mut self, state: &mut S) -> io::Result<()> {
        self.stopped = false;
        while !self.stopped {
            self.turn(None, state)?;
        }
        Ok(())
    }

    /// Makes `run` return once the current turn is finished. The rest of this turn's
    /// events are still delivered: they already happened.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    // ANCHOR: turn
    /// One turn: wait until something is ready or a timer is due (at most `timeout`;
    /// `None` adds no limit of its own), then run the callbacks of everything that is
    /// ready, then the timers that are due, then the promise callbacks, then, if nothing
    /// was ready, the idle callbacks.
    pub fn turn(&mut self, timeout: Option<Duration>, state: &mut S) -> io::Result<()> {
        // The event list is taken out of `self` for the turn because the callbacks below
        // need all of `self`; it goes back afterwards so its memory serves the next turn.
        let mut events = mem::take(&mut self.events);
        events.clear();

        // 1. How long may we wait? Until the nearest timer is due, and no longer than the
        //    caller allows. With no timers and no limit, as long as it takes. (Time comes
        //    from `Instant`, here and everywhere in the loop: a monotonic clock, see
        //    timers.rs.)
        let timeout = match (timeout, self.timers.next_timeout(Instant::now())) {
            (Some(limit), Some(next_timer)) => Some(limit.min(next_timer)),
            (limit, next_timer) => limit.or(next_timer),
        };
        //    New in chapter 5: not at all while promise callbacks are waiting in the ready
        //    queue (the last turn's callbacks settled more promises). `poll` then only
        //    looks at the sockets, and we come back to the callbacks in step 5.
        let timeout = if self.ready.has_work() { Some(Duration::ZERO) } else { timeout };

        // 2. Wait. This is the only place the server waits.
        match self.poller.wait(&mut events, timeout) {
            Ok(()) => {}
            // A signal interrupted the wait (our own SIGTERM handler, say). Nothing is
            // ready yet; the caller turns again and then sees what the signal left.
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {
                trace!("poll: interrupted by a signal");
                self.events = events;
                return Ok(());
            }
            Err(error) => return Err(error),
        }
        self.turns += 1;

        // 3. Run the callbacks, readable before writable for each descriptor, as Redis
        //    does: a read may produce a response that the write then sends at once.
        for event in &events {
            if event.readable {
                self.call(event.token, Callback::Readable, state);
            }
            if event.writable {
                self.call(event.token, Callback::Writable, state);
            }
        }

        // 4. Run the timers that are due, soonest deadline first. The clock is read again:
        //    `poll` may have slept, and the callbacks taken their time. A timer that a
        //    callback adds from here on waits for the next turn, even with no delay (see
        //    `Timers::start_run`): a timer that keeps re-arming itself must not keep us
        //    from ever polling again.
        let run = self.timers.start_run(Instant::now());
        while let Some((id, payload)) = self.timers.pop_due(run) {
            let (owner, timer) = match payload {
                Payload::Call(owner, timer) => (owner, timer),
                // A `delay` is over: resolve its promise. What comes next in its chain
                // runs in step 5, like every promise callback.
                Payload::Resolve => {
                    trace!("{id} fired: delay");
                    if let Some(resolve) = self.delays.remove(&id) {
                        resolve();
                    }
                    continue;
                }
            };
            match owner {
                Some(token) => trace!("{id} fired: {timer:?} for token {token}"),
                None => trace!("{id} fired: {timer:?}"),
            }
            self.deliver(owner, timer, state);
        }

        // ANCHOR: ready_in_the_turn
        // 5. New in chapter 5: the promise callbacks. The socket callbacks and timers above
        //    resolved Deferreds; the next step of each of those chains has been waiting in
        //    the ready queue, and runs now, never inside `resolve` (see `promise.rs`).
        //    Why here, once per turn, after I/O and timers? Every source of settled
        //    promises has had its say by now, so one batch serves them all; and a step
        //    that settles the next promise of its chain leaves that one for the next turn
        //    (see `ReadyQueue::run_ready`), so a long chain takes turns with the sockets
        //    instead of starving them. Step 1 keeps those turns from sleeping.
        //    A panic in a promise callback must not take the server down either (see
        //    `call`). The rest of its batch is then dropped, which drops their Deferreds:
        //    those chains end with `Abandoned`, and the loop goes on.
        let ran =
            panic::catch_unwind(AssertUnwindSafe(|| self.ready.run_ready())).unwrap_or_else(|_| {
                eprintln!("a promise callback panicked; the chains of its batch end");
                // At least the callback that panicked ran: a turn that ran callbacks is not
                // idle, so step 6 below waits for a quieter one.
                1
            });
        if ran > 0 {
            let next = self.ready.len();
            trace!("ready: ran {ran} callbacks; {next} wait for the next turn");
        }
        //    The callbacks ran with nothing borrowed. What they left for a registration
        //    (an answer for a connection, say) is delivered now, with the loop lent out as
        //    usual (see `Outbox`).
        let messages = mem::take(&mut *self.outbox.messages.borrow_mut());
        for (token, message) in messages {
            trace!("outbox: {message:?} for token {token}");
            self.call(token, Callback::Timer(message), state);
        }
        // ANCHOR_END: ready_in_the_turn

        // 6. Idle callbacks, but only on a turn when nothing was ready. While one is
        //    queued, `next_timeout` says zero, so `poll` only looks and does not sleep.
        if events.is_empty() && ran == 0 {
            for payload in self.timers.take_idle() {
                // Only `add_idle` and `add_idle_for` queue idle work: always a `Call`.
                if let Payload::Call(owner, timer) = payload {
                    trace!("idle: {timer:?}");
                    self.deliver(owner, timer, state);
                }
            }
        }
        self.events = events;
        Ok(())
    }
    // ANCHOR_END: turn

    /// Hands a fired timer or an idle callback to whoever it is for.
    fn deliver(&mut self, owner: Option<Token>, timer: S::Timer, state: &mut S) {
        match owner {
            Some(token) => self.call(token, Callback::Timer(timer), state),
            None => state.on_timer(self, timer),
        }
    }

    /// Runs one callback of one registration, if it still wants it.
    fn call(&mut self, token: Token, callback: Callback<S::Timer>, state: &mut S) {
        // ANCHOR: fired_but_removed
        // `poll` reported this event before any callback of the turn ran. Since then an
        // earlier callback may have deregistered this registration (and closed its
        // descriptor, whose number may already belong to a new client: see `Token`), or
        // changed its interest (a connection that stopped reading). So we look again now,
        // at the last moment, as Redis does with `fe->mask & mask`. (A timer for a
        // registration that has ended is skipped here too.)
        let Some(registration) = self.registration_mut(token) else {
            trace!("token {token} {callback}: deregistered, skipped");
            return;
        };
        let wanted = match callback {
            Callback::Readable => registration.interest.readable,
            Callback::Writable => registration.interest.writable,
            Callback::Timer(_) => true,
        };
        if !wanted {
            return;
        }
        // ANCHOR_END: fired_but_removed
        // ANCHOR: lift_handler
        let (fd, name) = (registration.fd, registration.name);
        // Lift the handler out of its slot while it runs, so that it can have `&mut self`
        // (the whole loop) without the loop also holding it. It is `None` only while its
        // own callback runs, and callbacks never run inside each other.
        let Some(mut handler) = registration.handler.take() else {
            return;
        };
        trace!("fd {fd} (token {token}) {callback} -> {name}::on_{callback}");
        // ANCHOR_END: lift_handler

        // ANCHOR: catch_unwind
        // A bug that panics while serving one client must not take every other client
        // down with it. `catch_unwind` stops the panic here; the default panic hook has
        // already printed its message on stderr. We then treat that registration as
        // broken: deregister it and drop the handler, which closes its connection.
        // `AssertUnwindSafe` is our promise that nothing half-updated is used afterwards:
        // the handler is thrown away, and the shared state's counters are at worst off by
        // the one request that failed.
        let on = callback.name(); // for the message below: `callback` moves into the call
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| match callback {
            Callback::Readable => handler.on_readable(self, token, state),
            Callback::Writable => handler.on_writable(self, token, state),
            Callback::Timer(timer) => handler.on_timer(self, token, state, timer),
        }));
        if outcome.is_err() {
            eprintln!("fd {fd} (token {token}): {name}::on_{on} panicked; closing it");
            self.deregister(token);
            drop(handler);
            return;
        }
        // ANCHOR_END: catch_unwind

        // ANCHOR: put_back
        match self.registration_mut(token) {
            // Still registered: the handler goes back into its slot.
            Some(registration) => registration.handler = Some(handler),
            // It deregistered itself during the call: dropping it now closes its
            // descriptor (after `deregister` took it out of the poller).
            None => drop(handler),
        }
        // ANCHOR_END: put_back
    }

    /// The registration `token` names, if it is still the one it named.
    fn registration_mut(&mut self, token: Token) -> Option<&mut Registration<S>> {
        let slot = self.slots.get_mut(token.index as usize)?;
        if slot.generation != token.generation {
            return None;
        }
        slot.registration.as_mut()
    }
}

impl<T> Callback<T> {
    /// `readable`, `writable` or `timer`: which `on_...` method runs, for messages.
    fn name(&self) -> &'static str {
        match self {
            Callback::Readable => "readable",
            Callback::Writable => "writable",
            Callback::Timer(_) => "timer",
        }
    }
}

impl<T> fmt::Display for Callback<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `chNN_name::connection::Connection` -> `Connection`, for `--trace`.
fn short_type_name<H>() -> &'static str {
    let full = any::type_name::<H>();
    full.rsplit("::").next().unwrap_or(full)
}

#[cfg(test)]
mod tests {
    //! The edge cases, each on real sockets (`UnixStream::pair`): a byte written into one
    //! end makes the other end readable, so no test needs to sleep or guess.

    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// What the test handlers share: a log of the callbacks that ran, and slots for tokens
    /// a callback needs to know about (the one it will deregister, say).
    #[derive(Default)]
    struct State {
        log: Vec<String>,
        tokens: Vec<Token>,
    }

    /// The tests' timers carry a word to log.
    impl SharedState for State {
        type Timer = &'static str;
        fn on_timer(&mut self, _event_loop: &mut EventLoop<State>, timer: &'static str) {
            self.log.push(format!("state {timer}"));
        }
    }

    type Action = Box<dyn FnMut(&mut EventLoop<State>, Token, &mut State)>;

    const BOTH: Interest = Interest { readable: true, writable: true };

    /// A handler that owns its socket (so dropping it closes the socket, as with a real
    /// connection), logs each call as "name readable" / "name writable", then runs `action`.
    struct Probe {
        name: &'static str,
        _socket: UnixStream,
        action: Action,
    }

    impl Probe {
        fn log(
            &mut self, direction: &str, event_loop: &mut EventLoop<State>, token: Token,
            state: &mut State,
        ) {
            state.log.push(format!("{} {direction}", self.name));
            (self.action)(event_loop, token, state);
        }
    }

    impl Handler<State> for Probe {
        fn on_readable(
            &mut self, event_loop: &mut EventLoop<State>, token: Token, state: &mut State,
        ) {
            self.log("readable", event_loop, token, state);
        }
        fn on_writable(
            &mut self, event_loop: &mut EventLoop<State>, token: Token, state: &mut State,
        ) {
            self.log("writable", event_loop, token, state);
        }
        fn on_timer(
            &mut self, event_loop: &mut EventLoop<State>, token: Token, state: &mut State,
            timer: &'static str,
        ) {
            self.log(&format!("timer {timer}"), event_loop, token, state);
        }
    }

    /// A socket that is readable at once (a byte waits in it), and its peer, which the
    /// test keeps so that the socket does not see a hang-up.
    fn readable_socket() -> (UnixStream, UnixStream) {
        let (ours, peer) = UnixStream::pair().expect("socketpair");
        (&peer).write_all(b"x").expect("write");
        (ours, peer)
    }

    /// Registers a probe on a fresh readable socket; returns its token and the peer.
    fn register_probe(
        event_loop: &mut EventLoop<State>, name: &'static str, interest: Interest, action: Action,
    ) -> (Token, UnixStream) {
        let (socket, peer) = readable_socket();
        let probe = Probe { name, action, _socket: socket };
        let fd = probe._socket.as_raw_fd();
        let token = event_loop.register(fd, interest, probe).expect("register");
        (token, peer)
    }

    fn nothing() -> Action {
        Box::new(|_, _, _| {})
    }

    /// One turn that waits at most 10 s: long enough never to be the reason a test fails,
    /// and every test here has something ready at once, so it never actually waits.
    fn turn(event_loop: &mut EventLoop<State>, state: &mut State) {
        event_loop.turn(Some(Duration::from_secs(10)), state).expect("turn");
    }

    /// Has our end of `peer`'s pair been closed? The peer then reads end-of-file, or a
    /// reset, since our end was closed with the byte in it unread.
    fn closed(peer: &UnixStream) -> bool {
        peer.set_nonblocking(true).expect("nonblocking");
        match (&*peer).read(&mut [0u8; 8]) {
            Ok(0) => true,
            Err(error) => error.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(_) => false,
        }
    }

    #[test]
    fn a_registration_removed_earlier_in_the_turn_gets_no_event() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        // Two readable sockets; whichever callback runs first deregisters the other.
        // Both were reported by the same `poll`, yet only one callback may run.
        let kill_other: fn() -> Action = || {
            Box::new(|event_loop, token, state: &mut State| {
                let other = state.tokens.iter().copied().find(|&t| t != token);
                assert!(event_loop.deregister(other.expect("two tokens")));
            })
        };
        let (a, _peer_a) = register_probe(&mut event_loop, "a", Interest::READABLE, kill_other());
        let (b, _peer_b) = register_probe(&mut event_loop, "b", Interest::READABLE, kill_other());
        state.tokens = vec![a, b];

        turn(&mut event_loop, &mut state);
        assert_eq!(state.log.len(), 1, "only the first callback runs: {:?}", state.log);
        assert_eq!(event_loop.count::<Probe>(), 1);
    }

    #[test]
    fn a_reused_descriptor_does_not_get_the_old_registrations_event() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        // "killer" runs first (the poll backend reports in registration order), closes
        // "victim", and registers "newcomer" on a new socket, which goes into the
        // victim's freed slot. The victim's event of this turn must not be handed to the
        // newcomer. (In a server the newcomer usually gets the victim's descriptor number
        // too, as the kernel hands out the lowest free one. Not asserted here: tests run
        // on parallel threads that share one table of descriptors.)
        let peers = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let keep_peers = peers.clone();
        let killer: Action = Box::new(move |event_loop, _token, state: &mut State| {
            let victim = state.tokens[0];
            assert!(event_loop.deregister(victim)); // drops the victim: its fd closes
            let (newcomer, peer) =
                register_probe(event_loop, "newcomer", Interest::READABLE, nothing());
            keep_peers.borrow_mut().push(peer);
            state.tokens.push(newcomer);
        });
        let (_killer, _peer_k) =
            register_probe(&mut event_loop, "killer", Interest::READABLE, killer);
        let (victim, _peer_v) =
            register_probe(&mut event_loop, "victim", Interest::READABLE, nothing());
        state.tokens = vec![victim];

        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["killer readable"]);
        let newcomer = state.tokens[1];
        // Same slot, new generation: that is what told them apart.
        assert_eq!(newcomer.index, victim.index);
        assert_eq!(newcomer.generation, victim.generation + 1);

        // On the next turn the newcomer's own event arrives, under its own token.
        turn(&mut event_loop, &mut state);
        assert!(state.log.contains(&"newcomer readable".to_string()), "{:?}", state.log);
        assert!(!state.log.contains(&"victim readable".to_string()));
    }

    #[test]
    fn a_panicking_callback_costs_only_its_own_registration() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let (bad, peer_bad) = register_probe(
            &mut event_loop,
            "bad",
            Interest::READABLE,
            Box::new(|_, _, _| panic!("a bug in one handler (this panic is expected)")),
        );
        let (_good, peer_good) =
            register_probe(&mut event_loop, "good", Interest::READABLE, nothing());

        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["bad readable", "good readable"], "the loop went on");
        assert!(!event_loop.deregister(bad), "the panicking handler is deregistered already");
        assert!(closed(&peer_bad), "and dropped, which closed its socket");
        assert_eq!(event_loop.count::<Probe>(), 1, "the good one stays");
        assert!(!closed(&peer_good));

        // And the loop keeps working: the good one is still readable (we never read the byte).
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log.last().map(String::as_str), Some("good readable"));
    }

    #[test]
    fn interest_decides_which_callbacks_run() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        // A socket is almost always writable, and this one is readable too.
        let (token, _peer) = register_probe(&mut event_loop, "p", BOTH, nothing());
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p readable", "p writable"], "readable first, then writable");

        state.log.clear();
        event_loop.set_interest(token, Interest::WRITABLE).expect("set_interest");
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p writable"]);

        // Waiting for nothing: `poll` must not report the socket at all, so a zero
        // timeout comes back empty.
        state.log.clear();
        event_loop.set_interest(token, Interest::NONE).expect("set_interest");
        event_loop.turn(Some(Duration::ZERO), &mut state).expect("turn");
        assert!(state.log.is_empty(), "{:?}", state.log);
    }

    #[test]
    fn interest_changed_earlier_in_the_turn_is_respected() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        // "first" stops "second" from reading before second's readable event, reported
        // by the same `poll`, is delivered.
        let mute_other: Action = Box::new(|event_loop, _token, state: &mut State| {
            let other = state.tokens[0];
            event_loop.set_interest(other, Interest::NONE).expect("set_interest");
        });
        let (_first, _peer_1) =
            register_probe(&mut event_loop, "first", Interest::READABLE, mute_other);
        let (second, _peer_2) =
            register_probe(&mut event_loop, "second", Interest::READABLE, nothing());
        state.tokens = vec![second];

        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["first readable"]);
        assert_eq!(event_loop.count::<Probe>(), 2, "muted, not removed");
    }

    #[test]
    fn a_handler_that_deregisters_itself_is_dropped_after_its_callback() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let close_self: Action = Box::new(|event_loop, token, _state| {
            assert!(event_loop.deregister(token));
            assert!(!event_loop.deregister(token), "a second time does nothing");
        });
        let (token, peer) = register_probe(&mut event_loop, "p", BOTH, close_self);

        turn(&mut event_loop, &mut state);
        // Its writable event of the same turn was not delivered: it was gone by then.
        assert_eq!(state.log, ["p readable"]);
        assert!(!event_loop.deregister(token), "gone once its callback returned");
        assert!(closed(&peer));
        assert_eq!(event_loop.count::<Probe>(), 0);
    }

    #[test]
    fn run_returns_after_the_turn_in_which_stop_was_called() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let stop: Action = Box::new(|event_loop, _token, _state| event_loop.stop());
        let (_token, _peer) = register_probe(&mut event_loop, "p", Interest::READABLE, stop);
        event_loop.run(&mut state).expect("run");
        assert_eq!(state.log, ["p readable"]);
        assert_eq!(event_loop.turns(), 1);
    }

    /// Turns the loop until `done` holds. Each turn may wait at most 5 s, and we give up
    /// after 10 turns: a broken loop fails the assertions that follow, never hangs.
    fn turn_until(
        event_loop: &mut EventLoop<State>, state: &mut State, done: impl Fn(&State) -> bool,
    ) {
        while !done(state) && event_loop.turns() < 10 {
            event_loop.turn(Some(Duration::from_secs(5)), state).expect("turn");
        }
    }

    #[test]
    fn a_due_timer_ends_the_wait_and_the_loop_does_not_spin_meanwhile() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let started = Instant::now();
        event_loop.add_timer(Duration::from_millis(50), "due");
        // Nothing is registered, so only the timer can end the wait.
        turn_until(&mut event_loop, &mut state, |state| !state.log.is_empty());
        let waited = started.elapsed();
        assert_eq!(state.log, ["state due"]);
        assert!(waited >= Duration::from_millis(50), "fired early: {waited:?}");
        assert!(waited < Duration::from_secs(2), "fired late: {waited:?}");
        // One turn that sleeps until the deadline, perhaps a second if `poll` woke a hair
        // early: never the thousands of a loop that polls with a zero timeout.
        assert!(event_loop.turns() <= 2, "{} turns", event_loop.turns());
        assert_eq!(event_loop.timers_pending(), 0);
    }

    #[test]
    fn io_then_due_timers_then_idle_callbacks_only_when_nothing_was_ready() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        // A probe that stops reading after its first callback, so the next turn has no I/O.
        let mute: Action = Box::new(|event_loop, token, _state| {
            event_loop.set_interest(token, Interest::NONE).expect("set_interest");
        });
        let (_token, _peer) = register_probe(&mut event_loop, "p", Interest::READABLE, mute);
        event_loop.add_idle("idle");
        event_loop.add_timer(Duration::ZERO, "timer");
        // Idle work is queued, so `poll` does not sleep; the socket is ready anyway.
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p readable", "state timer"], "no idle: I/O was ready");
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p readable", "state timer", "state idle"]);
        assert_eq!(event_loop.count::<Probe>(), 1);
    }

    #[test]
    fn a_timer_for_a_registration_reaches_its_handler_and_is_skipped_once_it_is_gone() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let (token, _peer) = register_probe(&mut event_loop, "p", Interest::NONE, nothing());
        assert_eq!(event_loop.count::<Probe>(), 1);
        event_loop.add_timer_for(token, Duration::ZERO, "ping");
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p timer ping"]);

        // Cancelled: never delivered.
        let cancelled = event_loop.add_timer_for(token, Duration::ZERO, "cancelled");
        assert!(event_loop.cancel_timer(cancelled));
        // Its registration ended before it fired: skipped, like a stale event.
        event_loop.add_timer_for(token, Duration::ZERO, "too late");
        assert!(event_loop.deregister(token));
        assert_eq!(event_loop.count::<Probe>(), 0);
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p timer ping"]);
        assert_eq!(event_loop.timers_pending(), 0);
    }

    /// What promise callbacks saw, in order. (They run with nothing borrowed, so they
    /// cannot write to the test's `State`: they share this instead.)
    fn promise_log() -> Rc<RefCell<Vec<String>>> {
        Rc::default()
    }

    /// A chain's last step that writes the chain's outcome to `log`.
    fn record<T: fmt::Debug>(log: &Rc<RefCell<Vec<String>>>) -> impl FnOnce(Result<T, Abandoned>) {
        let log = Rc::clone(log);
        move |outcome| log.borrow_mut().push(format!("{outcome:?}"))
    }

    #[test]
    fn a_delay_resolves_after_its_time_and_its_chain_runs_in_the_next_turns() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let log = promise_log();
        let started = Instant::now();
        let (_id, promise) = event_loop.delay::<Abandoned>(Duration::from_millis(50));
        promise.then(|()| "slept").on_settled(record(&log));
        turn_until(&mut event_loop, &mut state, |_| !log.borrow().is_empty());
        let waited = started.elapsed();
        assert_eq!(*log.borrow(), ["Ok(\"slept\")"]);
        assert!(waited >= Duration::from_millis(50), "resolved early: {waited:?}");
        assert!(waited < Duration::from_secs(2), "resolved late: {waited:?}");
        // One turn that sleeps until the timer, whose `then` runs in that same turn's step 5,
        // then one for the last step (perhaps one more, if `poll` woke a hair early).
        assert!(event_loop.turns() <= 3, "{} turns", event_loop.turns());
        assert_eq!(event_loop.timers_pending(), 0);
    }

    #[test]
    fn a_chain_takes_one_turn_per_link_and_the_loop_does_not_sleep_between() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let log = promise_log();
        let (deferred, promise) = Deferred::<i32, Abandoned>::new(event_loop.ready());
        promise
            .then(|n| n + 1)
            .then(|n| n * 10)
            .then(|n| format!("got {n}"))
            .on_settled(record(&log));
        deferred.resolve(4);
        let started = Instant::now();
        // Nothing is registered and no timer is pending: were the loop to sleep with
        // callbacks waiting, this 10 s limit would show it.
        for _ in 0..4 {
            turn(&mut event_loop, &mut state);
        }
        assert_eq!(*log.borrow(), ["Ok(\"got 50\")"]);
        assert!(!event_loop.ready().has_work());
        assert!(started.elapsed() < Duration::from_secs(1), "the loop slept");
    }

    #[test]
    fn cancelling_a_delay_rejects_its_promise_with_abandoned() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let log = promise_log();
        let (id, promise) = event_loop.delay::<Abandoned>(Duration::from_secs(60));
        promise.then(|()| "never").on_settled(record(&log));
        assert_eq!(event_loop.timers_pending(), 1);
        assert!(event_loop.cancel_timer(id));
        assert_eq!(event_loop.timers_pending(), 0);
        for _ in 0..2 {
            turn(&mut event_loop, &mut state);
        }
        assert_eq!(*log.borrow(), ["Err(Abandoned)"]);
    }

    #[test]
    fn a_posted_message_reaches_its_handler_after_the_ready_callbacks_unless_it_is_gone() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let (token, _peer) = register_probe(&mut event_loop, "p", Interest::NONE, nothing());
        let (gone, _peer_gone) = register_probe(&mut event_loop, "gone", Interest::NONE, nothing());
        let (deferred, promise) = Deferred::<(), Abandoned>::new(event_loop.ready());
        let outbox = event_loop.outbox();
        promise.on_settled(move |_| {
            outbox.post(token, "hello");
            outbox.post(gone, "too late");
        });
        assert!(event_loop.deregister(gone));
        deferred.resolve(());
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p timer hello"]);
    }

    #[test]
    fn a_panicking_promise_callback_ends_its_chain_not_the_loop() {
        let mut event_loop = EventLoop::new();
        let mut state = State::default();
        let log = promise_log();
        let (deferred, promise) = Deferred::<i32, Abandoned>::new(event_loop.ready());
        promise
            .then(|n| -> i32 { panic!("a bug in one step (this panic is expected): {n}") })
            .on_settled(record(&log));
        deferred.resolve(1);
        // The step panics in the first turn; its chain's end runs in the second.
        for _ in 0..2 {
            turn(&mut event_loop, &mut state);
        }
        assert_eq!(*log.borrow(), ["Err(Abandoned)"]);
        event_loop.add_timer(Duration::ZERO, "still turning");
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["state still turning"]);
    }
}
