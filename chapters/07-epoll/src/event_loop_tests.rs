//! The event loop's edge cases, each on real sockets (`UnixStream::pair`): a byte written
//! into one end makes the other end readable, so no test needs to sleep or guess.

use super::*;
use shared::args::Backend;
use std::io::{Read, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixStream;

/// What the test handlers share: a log of the callbacks that ran, and the tokens a
/// callback needs to know about (the one it will deregister, say).
#[derive(Default)]
struct State {
    log: Vec<String>,
    tokens: Vec<Token>,
}

type Action = Box<dyn FnMut(&mut EventLoop<State>, Token, &mut State)>;

const BOTH: Interest = Interest { readable: true, writable: true };

/// A handler that owns its socket (so dropping it closes the socket, as with a real
/// connection), logs each call as "name readable" / "name writable" / "name closed",
/// then runs `action` (not on close).
struct Probe {
    name: &'static str,
    socket: UnixStream,
    action: Action,
}

impl Handler<State> for Probe {
    fn on_readable(&mut self, event_loop: &mut EventLoop<State>, token: Token, state: &mut State) {
        state.log.push(format!("{} readable", self.name));
        (self.action)(event_loop, token, state);
    }
    fn on_writable(&mut self, event_loop: &mut EventLoop<State>, token: Token, state: &mut State) {
        state.log.push(format!("{} writable", self.name));
        (self.action)(event_loop, token, state);
    }
    fn on_close(&mut self, _: &mut EventLoop<State>, _: Token, state: &mut State) {
        state.log.push(format!("{} closed", self.name));
    }
}

impl AsFd for Probe {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// Registers a probe on a fresh socket that is readable at once (a byte waits in it);
/// returns its token and the peer, which the test keeps so the socket sees no hang-up.
fn register_probe(
    event_loop: &mut EventLoop<State>, name: &'static str, interest: Interest, action: Action,
) -> (Token, UnixStream) {
    let (socket, peer) = UnixStream::pair().expect("socketpair");
    (&peer).write_all(b"x").expect("write");
    let probe = Probe { name, socket, action };
    (event_loop.register(probe, interest).expect("register"), peer)
}

/// The loop on the system's own backend, the chapter's default (epoll; kqueue on macOS and
/// the BSDs): these tests once ran on `poll` (chapters 3-6) and must not notice the difference.
fn new_loop() -> EventLoop<State> {
    EventLoop::new(Backend::NATIVE).expect("the system's backend")
}

fn nothing() -> Action {
    Box::new(|_, _, _| {})
}

/// One turn that waits at most 10 s: long enough never to be the reason a test fails,
/// and every test here has something ready at once, so it never actually waits.
fn turn(event_loop: &mut EventLoop<State>, state: &mut State) {
    event_loop.turn(Some(Duration::from_secs(10)), state).expect("turn");
}

/// Has our end of `peer`'s pair been closed? The peer then reads end-of-file, or a reset,
/// since our end was closed with the byte in it unread.
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
    let mut event_loop = new_loop();
    let mut state = State::default();
    // Two readable sockets; whichever callback runs first deregisters the other. Both
    // were reported by the same `poll`, yet only one callback may run.
    let kill_other = || -> Action {
        Box::new(|event_loop, token, state: &mut State| {
            let other = state.tokens.iter().copied().find(|&t| t != token);
            assert!(event_loop.deregister(other.expect("two tokens"), state));
        })
    };
    let (a, _peer_a) = register_probe(&mut event_loop, "a", Interest::READABLE, kill_other());
    let (b, _peer_b) = register_probe(&mut event_loop, "b", Interest::READABLE, kill_other());
    state.tokens = vec![a, b];

    turn(&mut event_loop, &mut state);
    assert_eq!(state.log.len(), 2, "one callback, one close: {:?}", state.log);
    assert!(state.log[1].ends_with("closed"));
}

#[test]
fn a_newcomer_never_gets_an_old_registrations_event() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    // "killer" closes "victim" and registers "newcomer", whose socket is readable at once.
    // Both old sockets were reported by this turn's `poll`; the victim's event, if it has
    // not run yet, must not reach the newcomer (the kernel may even have given the
    // newcomer the victim's descriptor number). The newcomer's turn comes next turn.
    let peers = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let keep_peers = peers.clone();
    let killer: Action = Box::new(move |event_loop, _token, state: &mut State| {
        if event_loop.deregister(state.tokens[0], state) {
            let (newcomer, peer) =
                register_probe(event_loop, "newcomer", Interest::READABLE, nothing());
            keep_peers.borrow_mut().push(peer);
            state.tokens.push(newcomer);
        }
    });
    let (_killer, _peer_k) = register_probe(&mut event_loop, "killer", Interest::READABLE, killer);
    let (victim, _peer_v) =
        register_probe(&mut event_loop, "victim", Interest::READABLE, nothing());
    state.tokens = vec![victim];

    turn(&mut event_loop, &mut state);
    assert!(state.log.contains(&"victim closed".to_string()), "{:?}", state.log);
    assert!(!state.log.contains(&"newcomer readable".to_string()), "{:?}", state.log);
    assert_ne!(state.tokens[1], victim, "tokens are never reused");
    turn(&mut event_loop, &mut state);
    assert!(state.log.contains(&"newcomer readable".to_string()), "{:?}", state.log);
}

#[test]
fn a_panicking_callback_costs_only_its_own_registration() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    let (bad, peer_bad) = register_probe(
        &mut event_loop,
        "bad",
        Interest::READABLE,
        Box::new(|_, _, _| panic!("a bug in one handler (this panic is expected)")),
    );
    let (_good, peer_good) = register_probe(&mut event_loop, "good", Interest::READABLE, nothing());

    turn(&mut event_loop, &mut state);
    // The loop went on (whichever of the two ran first), and closed the panicking one.
    let at = |line: &str| state.log.iter().position(|l| l == line);
    assert!(at("good readable").is_some(), "{:?}", state.log);
    assert_eq!(at("bad closed"), at("bad readable").map(|at| at + 1), "{:?}", state.log);
    assert!(!event_loop.deregister(bad, &mut state), "deregistered already");
    assert!(closed(&peer_bad), "and dropped, which closed its socket");
    assert!(!closed(&peer_good));

    // And the loop keeps working: the good one is still readable (we never read the byte).
    turn(&mut event_loop, &mut state);
    assert_eq!(state.log.last().map(String::as_str), Some("good readable"));
}

#[test]
fn interest_decides_which_callbacks_run() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    // A socket is almost always writable, and this one is readable too.
    let (token, _peer) = register_probe(&mut event_loop, "p", BOTH, nothing());
    turn(&mut event_loop, &mut state);
    assert_eq!(state.log, ["p readable", "p writable"], "readable first");

    state.log.clear();
    let writable = Interest { readable: false, writable: true };
    event_loop.set_interest(token, writable);
    turn(&mut event_loop, &mut state);
    assert_eq!(state.log, ["p writable"]);

    // Waiting for nothing: `poll` must not report the socket at all, so a zero timeout
    // comes back empty.
    state.log.clear();
    event_loop.set_interest(token, Interest::NONE);
    event_loop.turn(Some(Duration::ZERO), &mut state).expect("turn");
    assert!(state.log.is_empty(), "{:?}", state.log);
}

#[test]
fn interest_changed_earlier_in_the_turn_is_respected() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    // Whichever runs first stops the other from reading, before the other's readable
    // event, reported by the same `poll`, is delivered.
    let mute_other = || -> Action {
        Box::new(|event_loop, token, state: &mut State| {
            let other = state.tokens.iter().copied().find(|&t| t != token);
            event_loop.set_interest(other.expect("two tokens"), Interest::NONE);
        })
    };
    let (first, _peer_1) = register_probe(&mut event_loop, "a", Interest::READABLE, mute_other());
    let (second, _peer_2) = register_probe(&mut event_loop, "b", Interest::READABLE, mute_other());
    state.tokens = vec![first, second];

    turn(&mut event_loop, &mut state);
    assert_eq!(state.log.len(), 1, "{:?}", state.log);
}

#[test]
fn a_handler_that_deregisters_itself_is_closed_after_its_callback() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    let close_self: Action = Box::new(|event_loop, token, state| {
        assert!(event_loop.deregister(token, state));
        assert!(!event_loop.deregister(token, state), "a second time does nothing");
        state.log.push("returning".into());
    });
    let (token, peer) = register_probe(&mut event_loop, "p", BOTH, close_self);

    turn(&mut event_loop, &mut state);
    // Closed once its callback returned; its writable event of the same turn was not
    // delivered: it was gone by then.
    assert_eq!(state.log, ["p readable", "returning", "p closed"]);
    assert!(!event_loop.deregister(token, &mut state));
    assert!(closed(&peer));
}

#[test]
fn a_due_timer_ends_the_wait_and_the_loop_does_not_spin_meanwhile() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    let started = std::time::Instant::now();
    event_loop
        .add_timer(Duration::from_millis(50), |_, state: &mut State| state.log.push("due".into()));
    // Nothing is registered, so only the timer can end the wait. Each turn may wait at
    // most 5 s, and we give up after 10 turns: a broken loop fails, never hangs.
    while state.log.is_empty() && event_loop.turns < 10 {
        event_loop.turn(Some(Duration::from_secs(5)), &mut state).expect("turn");
    }
    let waited = started.elapsed();
    assert_eq!(state.log, ["due"]);
    assert!(waited >= Duration::from_millis(50), "fired early: {waited:?}");
    assert!(waited < Duration::from_secs(2), "fired late: {waited:?}");
    // One turn that sleeps until the deadline: never the thousands of a loop that polls
    // with a zero timeout because it rounded the wait down.
    assert!(event_loop.turns <= 2, "{} turns", event_loop.turns);
    assert_eq!(event_loop.timers_pending(), 0);
}

#[test]
fn a_timer_reaches_its_handler_and_is_skipped_once_the_handler_is_gone() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    let (token, _peer) = register_probe(&mut event_loop, "p", Interest::NONE, nothing());
    let ping = move |event_loop: &mut EventLoop<State>, state: &mut State| {
        event_loop.with_handler(token, state, |probe: &mut Probe, _, _, state| {
            state.log.push(format!("{} pinged", probe.name))
        })
    };
    event_loop.add_timer(Duration::ZERO, ping);
    turn(&mut event_loop, &mut state);
    assert_eq!(state.log, ["p pinged"]);

    // Cancelled: never runs. Its handler gone before it fires: runs, but finds nobody.
    let cancelled = event_loop.add_timer(Duration::ZERO, ping);
    assert!(event_loop.cancel_timer(cancelled));
    event_loop.add_timer(Duration::ZERO, ping);
    assert!(event_loop.deregister(token, &mut state));
    turn(&mut event_loop, &mut state);
    assert_eq!(state.log, ["p pinged", "p closed"]);
    assert_eq!(event_loop.timers_pending(), 0);
}

#[test]
fn a_panicking_timer_callback_costs_nothing_else() {
    let mut event_loop = new_loop();
    let mut state = State::default();
    event_loop
        .add_timer(Duration::ZERO, |_, _| panic!("a bug in a timer (this panic is expected)"));
    event_loop.add_timer(Duration::ZERO, |_, state: &mut State| state.log.push("next".into()));
    turn(&mut event_loop, &mut state);
    assert_eq!(state.log, ["next"]);
}

#[test]
fn interest_changed_by_a_handler_in_its_own_callback_reaches_the_kernel() {
    // While its callback runs, the handler (and its socket) is out of the loop, so the new
    // interest can only be told to epoll once it is back. If it never were, epoll would go
    // on reporting the socket readable, and this would see a second callback.
    let mut event_loop = new_loop();
    let mut state = State::default();
    let mute_self: Action =
        Box::new(|event_loop, token, _| event_loop.set_interest(token, Interest::NONE));
    let (_token, _peer) = register_probe(&mut event_loop, "p", Interest::READABLE, mute_self);
    turn(&mut event_loop, &mut state);
    event_loop.turn(Some(Duration::from_millis(50)), &mut state).expect("turn");
    assert_eq!(state.log, ["p readable"]);
}
