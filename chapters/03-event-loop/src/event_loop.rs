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
//! One turn reads top to bottom like Redis's `aeProcessEvents`: wait in `poll` (the only
//! place the program waits), then run the callback of each descriptor that is ready. The
//! waiting itself lives behind a four-method interface in `poll_backend.rs`, so `poll`
//! could be swapped for `epoll` (an exercise) without touching this file.
//!
//! Three things real loops get right, and so does this one, each explained where it
//! happens: an event for a registration that an earlier callback of the same turn removed
//! is not delivered ([`Token`] and `call`); a panic in one callback costs that
//! registration, not the loop (`call`); and the loop never holds the handler while the
//! handler holds the loop (the borrow-checker note on [`Handler`]).

use std::any::{self, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::mem;
use std::os::fd::RawFd;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use shared::trace;

use crate::poll_backend::Poller;

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
        Token {
            index,
            generation: 0,
        }
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
    pub const NONE: Interest = Interest {
        readable: false,
        writable: false,
    };
    pub const READABLE: Interest = Interest {
        readable: true,
        writable: false,
    };
    // Only the tests wait to write first in this chapter; chapter 4's upstream client will.
    #[allow(dead_code)]
    pub const WRITABLE: Interest = Interest {
        readable: false,
        writable: true,
    };
}

/// One thing `poll` reported: this registration is ready to read and/or to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub token: Token,
    pub readable: bool,
    pub writable: bool,
}
// ANCHOR_END: interest_and_event

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
pub trait Handler<S> {
    /// The descriptor can be read without waiting: data, end-of-file, or an error.
    fn on_readable(&mut self, event_loop: &mut EventLoop<S>, token: Token, state: &mut S);

    /// The descriptor can be written without waiting (or has failed). Only called while
    /// the interest includes `writable`, so a handler that never asks need not write one.
    fn on_writable(&mut self, _event_loop: &mut EventLoop<S>, _token: Token, _state: &mut S) {}
}
// ANCHOR_END: handler

// ANCHOR: slots
/// One registered descriptor.
struct Registration<S> {
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
struct Slot<S> {
    generation: u32,
    registration: Option<Registration<S>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Readable,
    Writable,
}

pub struct EventLoop<S> {
    poller: Poller,
    slots: Vec<Slot<S>>,
    /// Indexes of empty slots, to reuse before growing `slots`.
    free: Vec<u32>,
    /// How many registrations there are of each handler type (see [`EventLoop::count`]).
    kinds: HashMap<TypeId, usize>,
    /// What the last `poll` reported. Kept between turns so its memory is reused.
    events: Vec<Event>,
    turns: u64,
    stopped: bool,
}
// ANCHOR_END: slots

impl<S> EventLoop<S> {
    pub fn new() -> EventLoop<S> {
        EventLoop {
            poller: Poller::new(),
            slots: Vec::new(),
            free: Vec::new(),
            kinds: HashMap::new(),
            events: Vec::new(),
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
                self.slots.push(Slot {
                    generation: 0,
                    registration: None,
                });
                index
            }
        };
        let slot = &mut self.slots[index as usize];
        let token = Token {
            index,
            generation: slot.generation,
        };
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
            trace!(
                "fd {} (token {token}): delete failed: {error}",
                registration.fd
            );
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
    /// One turn: wait until something is ready (at most `timeout`; `None` waits as long as
    /// it takes), then run the callbacks of everything that is.
    pub fn turn(&mut self, timeout: Option<Duration>, state: &mut S) -> io::Result<()> {
        // The event list is taken out of `self` for the turn because the callbacks below
        // need all of `self`; it goes back afterwards so its memory serves the next turn.
        let mut events = mem::take(&mut self.events);
        events.clear();

        // 1. Wait. This is the only place the server waits.
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

        // 2. Run the callbacks, readable before writable for each descriptor, as Redis
        //    does: a read may produce a response that the write then sends at once.
        for event in &events {
            if event.readable {
                self.call(event.token, Direction::Readable, state);
            }
            if event.writable {
                self.call(event.token, Direction::Writable, state);
            }
        }
        self.events = events;
        Ok(())
    }
    // ANCHOR_END: turn

    /// Runs one callback of one registration, if it still wants it.
    fn call(&mut self, token: Token, direction: Direction, state: &mut S) {
        // ANCHOR: fired_but_removed
        // `poll` reported this event before any callback of the turn ran. Since then an
        // earlier callback may have deregistered this registration (and closed its
        // descriptor, whose number may already belong to a new client: see `Token`), or
        // changed its interest (a connection that stopped reading). So we look again now,
        // at the last moment, as Redis does with `fe->mask & mask`.
        let Some(registration) = self.registration_mut(token) else {
            trace!("token {token} {direction}: deregistered earlier in this turn, skipped");
            return;
        };
        let wanted = match direction {
            Direction::Readable => registration.interest.readable,
            Direction::Writable => registration.interest.writable,
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
        trace!("fd {fd} (token {token}) {direction} -> {name}::on_{direction}");
        // ANCHOR_END: lift_handler

        // ANCHOR: catch_unwind
        // A bug that panics while serving one client must not take every other client
        // down with it. `catch_unwind` stops the panic here; the default panic hook has
        // already printed its message on stderr. We then treat that registration as
        // broken: deregister it and drop the handler, which closes its connection.
        // `AssertUnwindSafe` is our promise that nothing half-updated is used afterwards:
        // the handler is thrown away, and the shared state's counters are at worst off by
        // the one request that failed.
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| match direction {
            Direction::Readable => handler.on_readable(self, token, state),
            Direction::Writable => handler.on_writable(self, token, state),
        }));
        if outcome.is_err() {
            eprintln!("fd {fd} (token {token}): {name}::on_{direction} panicked; closing it");
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

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Readable => "readable",
            Direction::Writable => "writable",
        })
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

    type Action = Box<dyn FnMut(&mut EventLoop<State>, Token, &mut State)>;

    const BOTH: Interest = Interest {
        readable: true,
        writable: true,
    };

    /// A handler that owns its socket (so dropping it closes the socket, as with a real
    /// connection), logs each call as "name readable" / "name writable", then runs `action`.
    struct Probe {
        name: &'static str,
        _socket: UnixStream,
        action: Action,
    }

    impl Probe {
        fn log(
            &mut self,
            direction: &str,
            event_loop: &mut EventLoop<State>,
            token: Token,
            state: &mut State,
        ) {
            state.log.push(format!("{} {direction}", self.name));
            (self.action)(event_loop, token, state);
        }
    }

    impl Handler<State> for Probe {
        fn on_readable(
            &mut self,
            event_loop: &mut EventLoop<State>,
            token: Token,
            state: &mut State,
        ) {
            self.log("readable", event_loop, token, state);
        }
        fn on_writable(
            &mut self,
            event_loop: &mut EventLoop<State>,
            token: Token,
            state: &mut State,
        ) {
            self.log("writable", event_loop, token, state);
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
        event_loop: &mut EventLoop<State>,
        name: &'static str,
        interest: Interest,
        action: Action,
    ) -> (Token, UnixStream) {
        let (socket, peer) = readable_socket();
        let probe = Probe {
            name,
            action,
            _socket: socket,
        };
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
        event_loop
            .turn(Some(Duration::from_secs(10)), state)
            .expect("turn");
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
        assert_eq!(
            state.log.len(),
            1,
            "only the first callback runs: {:?}",
            state.log
        );
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
        assert!(
            state.log.contains(&"newcomer readable".to_string()),
            "{:?}",
            state.log
        );
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
        assert_eq!(
            state.log,
            ["bad readable", "good readable"],
            "the loop went on"
        );
        assert!(
            !event_loop.deregister(bad),
            "the panicking handler is deregistered already"
        );
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
        assert_eq!(
            state.log,
            ["p readable", "p writable"],
            "readable first, then writable"
        );

        state.log.clear();
        event_loop
            .set_interest(token, Interest::WRITABLE)
            .expect("set_interest");
        turn(&mut event_loop, &mut state);
        assert_eq!(state.log, ["p writable"]);

        // Waiting for nothing: `poll` must not report the socket at all, so a zero
        // timeout comes back empty.
        state.log.clear();
        event_loop
            .set_interest(token, Interest::NONE)
            .expect("set_interest");
        event_loop
            .turn(Some(Duration::ZERO), &mut state)
            .expect("turn");
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
            event_loop
                .set_interest(other, Interest::NONE)
                .expect("set_interest");
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
        assert!(
            !event_loop.deregister(token),
            "gone once its callback returned"
        );
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
}
