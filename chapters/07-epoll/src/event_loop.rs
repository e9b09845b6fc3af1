//! The event loop: "call me back when this socket is ready", the way Redis has `ae.c`.
//!
//! - [`EventLoop::register`] takes a [`Handler`] (an object that owns a socket and has
//!   callbacks) and an [`Interest`] (readable, writable, both), and returns a [`Token`];
//!   [`EventLoop::set_interest`] changes it; [`EventLoop::deregister`] drops the handler.
//! - [`EventLoop::add_timer`] runs a callback after a delay; [`EventLoop::cancel_timer`] stops
//!   it. Since chapter 4 the loop waits for time as well as for sockets (`timers.rs`).
//! - New in chapter 5, the ready queue: callbacks that are ready to run, put there by promises
//!   when they settle (`promise.rs`), and run once a turn.
//! - New in chapter 7, the kernel's side of the loop is a [`Poller`], one per mechanism:
//!   the system's own, the default (`epoll_backend.rs` on Linux, `kqueue_backend.rs` on
//!   macOS and the BSDs), or `poll_backend.rs` (`--backend poll`).
//! - [`EventLoop::turn`] waits in the poller, then runs the callbacks of the sockets that
//!   are ready, the timers that are due and the ready callbacks.

use std::any::Any;
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::os::fd::AsFd;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::time::{Duration, Instant};

use shared::args::Backend;
use shared::{log, trace};

#[cfg(target_os = "linux")]
use crate::epoll_backend::EpollBackend;
#[cfg(not(target_os = "linux"))]
use crate::kqueue_backend::KqueueBackend;
use crate::poll_backend::PollBackend;
use crate::poller::{Interest, Poller, Token};
use crate::timers::{TimerId, Timers};

// ANCHOR: handler
/// What the loop calls back. A handler owns its socket and lends it to the loop (`AsFd`).
/// `S` is the program's state, lent to every callback with the loop itself: a callback may
/// change the loop (register a client, deregister itself) while the loop calls it, which a
/// handler that *stored* `&mut EventLoop` could not: that would be a second `&mut`.
pub trait Handler<S>: AsFd + Any {
    /// The socket can be read without waiting: data, end-of-file, or an error.
    fn on_readable(&mut self, event_loop: &mut EventLoop<S>, token: Token, state: &mut S);

    /// The socket can be written without waiting (or has failed); only while `writable` is wanted.
    fn on_writable(&mut self, _: &mut EventLoop<S>, _: Token, _: &mut S) {}

    /// The registration has ended: deregistered, or its callback panicked. The last call
    /// before the handler is dropped: the one place to tidy up what it left in `state`.
    fn on_close(&mut self, _: &mut EventLoop<S>, _: Token, _: &mut S) {}

    /// Is it waiting for a new request, with nothing in flight? (See `close_idle`.)
    fn is_idle(&self) -> bool {
        false
    }
}
// ANCHOR_END: handler

struct Registration<S> {
    interest: Interest,
    /// What the poller was last told (see `sync`).
    told: Interest,
    /// `None` while its own callback runs (see `call`).
    handler: Option<Box<dyn Handler<S>>>,
}

pub struct EventLoop<S> {
    poller: Box<dyn Poller>,
    /// In token order: the poller is told them, and serves them, oldest first (epoll reports
    /// in an order of its own).
    registrations: BTreeMap<Token, Registration<S>>,
    next_token: u64,
    timers: Timers<Callback<S>>,
    /// Callbacks ready to run on the next turn. Promises hold it too (see `ready_queue`).
    ready: ReadyQueue<S>,
    /// How many times the poller's wait has returned (for `/stats`).
    pub turns: u64,
}

/// Code the loop runs later (a timer's, a promise's next step), lending it the loop and state.
pub type Callback<S> = Box<dyn FnOnce(&mut EventLoop<S>, &mut S)>;

/// The ready queue, shared by the loop and the promises that add to it.
pub type ReadyQueue<S> = Rc<RefCell<VecDeque<Callback<S>>>>;

impl<S: 'static> EventLoop<S> {
    // ANCHOR: registrations
    pub fn new(backend: Backend) -> io::Result<EventLoop<S>> {
        let poller: Box<dyn Poller> = match backend {
            #[cfg(target_os = "linux")]
            Backend::Epoll => Box::new(EpollBackend::new()?),
            #[cfg(not(target_os = "linux"))]
            Backend::Kqueue => Box::new(KqueueBackend::new()?),
            Backend::Poll => Box::new(PollBackend),
        };
        trace!("backend: {}", backend.name());
        Ok(EventLoop {
            poller,
            registrations: BTreeMap::new(),
            next_token: 0,
            timers: Timers::new(),
            ready: ReadyQueue::default(),
            turns: 0,
        })
    }

    /// Starts watching `handler`'s socket for `interest`. The loop owns the handler: the
    /// socket closes when the registration ends.
    pub fn register(
        &mut self, handler: impl Handler<S> + 'static, interest: Interest,
    ) -> io::Result<Token> {
        let token = Token(self.next_token);
        self.next_token += 1;
        self.poller.add(handler.as_fd(), token, interest)?;
        let handler = Some(Box::new(handler) as Box<dyn Handler<S>>);
        self.registrations.insert(token, Registration { interest, told: interest, handler });
        Ok(token)
    }

    /// Changes what `token` waits for. A token that is no longer registered is ignored.
    pub fn set_interest(&mut self, token: Token, interest: Interest) {
        if let Some(registration) = self.registrations.get_mut(&token) {
            registration.interest = interest;
            self.sync(token);
        }
    }

    /// Tells the poller a registration's new interest, once: a socket that goes on waiting
    /// for the same thing costs no system call. While its handler is out (its own callback
    /// runs), there is no socket to show the poller: `lend` calls this again after.
    fn sync(&mut self, token: Token) {
        let Some(registration) = self.registrations.get_mut(&token) else { return };
        let Some(handler) = registration.handler.as_ref() else { return };
        if registration.told != registration.interest {
            match self.poller.modify(handler.as_fd(), token, registration.interest) {
                Ok(()) => registration.told = registration.interest,
                // Rare (out of memory): `told` is unchanged, so the next `sync` tries again.
                Err(error) => log!("token {}: cannot change what it waits for: {error}", token.0),
            }
        }
    }

    /// Ends `token`'s registration: its handler's `on_close` runs, then the handler is
    /// dropped, which closes its socket. Returns whether `token` was registered.
    pub fn deregister(&mut self, token: Token, state: &mut S) -> bool {
        let Some(registration) = self.registrations.remove(&token) else { return false };
        // Not there while its own callback runs: `call` then closes it after the callback.
        if let Some(mut handler) = registration.handler {
            let _ = self.poller.delete(handler.as_fd()); // before the socket closes
            handler.on_close(self, token, state);
        }
        true
    }
    // ANCHOR_END: registrations

    /// Deregisters every idle handler: the first step of a graceful shutdown, as nginx's
    /// `ngx_close_idle_connections` does. The busy ones are left to finish.
    pub fn close_idle(&mut self, state: &mut S) {
        let idle = self.registrations.iter().filter(|(_, registration)| {
            registration.handler.as_ref().is_some_and(|handler| handler.is_idle())
        });
        for token in idle.map(|(&token, _)| token).collect::<Vec<_>>() {
            self.deregister(token, state);
        }
    }

    // ANCHOR: turn
    /// One turn: wait until something is ready or a timer is due (at most `timeout`;
    /// `None`: no limit), then run the callbacks of what is ready, then the due timers.
    pub fn turn(&mut self, timeout: Option<Duration>, state: &mut S) -> io::Result<()> {
        // 1. Wait, no longer than until the nearest timer is due: the only place we wait.
        let next_timer = self.timers.next_deadline();
        let until_timer = next_timer.map(|at| at.saturating_duration_since(Instant::now()));
        let timeout = match (timeout, until_timer) {
            _ if !self.ready.borrow().is_empty() => Some(Duration::ZERO), // callbacks are ready
            (Some(limit), Some(until_timer)) => Some(limit.min(until_timer)),
            (limit, until_timer) => limit.or(until_timer),
        };
        let mut watched = self.registrations.iter().filter_map(|(&token, registration)| {
            Some((token, registration.handler.as_ref()?.as_fd(), registration.interest))
        });
        let events = match self.poller.wait(&mut watched, timeout) {
            Ok(events) => events,
            // A signal (our own SIGTERM, say) interrupted the wait: nothing is ready yet.
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(error) => return Err(error),
        };
        self.turns += 1;

        // 2. Run the callbacks, readable before writable for each socket, as Redis does:
        //    a read may produce a response that the write then sends at once.
        for event in events {
            if event.readable {
                self.call(event.token, true, event.failed, state);
            }
            if event.writable {
                self.call(event.token, false, event.failed, state);
            }
        }

        // 3. Run the timers that are due, soonest first. One that a callback adds now is due
        //    after `now` (the clock has moved on), so one that re-arms cannot keep us here.
        let now = Instant::now();
        while let Some(callback) = self.timers.pop_due(now) {
            trace!("timer fired");
            self.run_callback(callback, state);
        }

        // 4. Run the ready queue, the next steps of promises that settled: only those ready
        //    now, so a long chain takes turns with the sockets (the next turn won't sleep, 1).
        let ready = std::mem::take(&mut *self.ready.borrow_mut());
        for callback in ready {
            self.run_callback(callback, state);
        }
        Ok(())
    }

    /// Runs one callback. Each on its own: if it panics, the others still run.
    fn run_callback(&mut self, callback: Callback<S>, state: &mut S) {
        if panic::catch_unwind(AssertUnwindSafe(|| callback(self, state))).is_err() {
            log!("a callback panicked");
        }
    }
    // ANCHOR_END: turn

    // ANCHOR: call
    /// Runs `on_readable` (or else `on_writable`) of `token`'s handler, if it still wants it.
    fn call(&mut self, token: Token, readable: bool, failed: bool, state: &mut S) {
        // The poller reported this before the turn's first callback, which may since have
        // deregistered it or changed its interest: look again (Redis: `fe->mask & mask`).
        let Some(&Registration { interest, .. }) = self.registrations.get(&token) else { return };
        // An error or a hang-up goes to one that reads no more too, as a read, which meets
        // it (new in chapter 4: a client that leaves while its request waits, its pipeline
        // too long to read more of, is gone at once, not once the wait is over).
        let wanted = if readable { interest.readable } else { interest.writable };
        if !(wanted || readable && failed) {
            return;
        }
        trace!("token {} {}", token.0, if readable { "readable" } else { "writable" });
        self.lend(token, state, |handler, event_loop, state| match readable {
            true => handler.on_readable(event_loop, token, state),
            false => handler.on_writable(event_loop, token, state),
        });
    }

    /// Lends `token`'s handler to `f`: lifts it out of its registration while `f` runs, so
    /// that `f` can have `&mut self` (the whole loop) without the loop also holding it.
    fn lend(
        &mut self, token: Token, state: &mut S,
        f: impl FnOnce(&mut dyn Handler<S>, &mut EventLoop<S>, &mut S),
    ) {
        let handler = self.registrations.get_mut(&token).and_then(|r| r.handler.take());
        let Some(mut handler) = handler else { return }; // gone, or lent already (it runs)

        // A panic serving one client must not take the others down: `catch_unwind` stops it
        // here (the hook printed it), and we close that registration, never to use it again.
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(&mut *handler, self, state)));
        if outcome.is_err() {
            log!("token {}: a callback panicked; closing it", token.0);
            self.registrations.remove(&token);
        }
        match self.registrations.get_mut(&token) {
            // Still registered: the handler goes back in its place.
            Some(registration) => {
                registration.handler = Some(handler);
                self.sync(token); // what it asked for while it was out
            }
            // Deregistered during the call: out of the poller, its `on_close`, then drop.
            None => {
                let _ = self.poller.delete(handler.as_fd());
                handler.on_close(self, token, state);
            }
        }
    }
    // ANCHOR_END: call

    // ANCHOR: with_handler
    /// Lends `token`'s handler to `f` as what it is, an `H` (a `Connection`, say), if still
    /// registered: how a timer, which holds a token and never the handler, calls it back.
    pub fn with_handler<H: Handler<S>>(
        &mut self, token: Token, state: &mut S,
        f: impl FnOnce(&mut H, &mut EventLoop<S>, Token, &mut S),
    ) {
        self.lend(token, state, |handler, event_loop, state| {
            // `Any` asks the handler, at run time, whether it is an `H`.
            if let Some(handler) = (handler as &mut dyn Any).downcast_mut::<H>() {
                f(handler, event_loop, token, state);
            }
        });
    }
    // ANCHOR_END: with_handler

    // ANCHOR: timer_api
    /// Runs `callback` once `delay` has passed, unless the timer is cancelled first.
    pub fn add_timer(
        &mut self, delay: Duration, callback: impl FnOnce(&mut EventLoop<S>, &mut S) + 'static,
    ) -> TimerId {
        self.timers.add(Instant::now() + delay, Box::new(callback))
    }

    /// Stops a timer so that it never fires. `false` if it has fired or was cancelled.
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        self.timers.cancel(id)
    }

    pub fn ready_queue(&self) -> &ReadyQueue<S> {
        &self.ready
    }

    /// How many timers are pending (for `/stats`).
    pub fn timers_pending(&self) -> usize {
        self.timers.len()
    }
    // ANCHOR_END: timer_api
}

#[cfg(test)]
#[path = "event_loop_tests.rs"]
mod tests;
