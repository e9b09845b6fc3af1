//! Chapter 4: the event loop learns to wait for time, as well as for sockets.
//!
//! As in chapter 3, an [`EventLoop`] calls back its handlers. New here, it keeps timers
//! (`timers.rs`), so what had to block no longer does: `/sleep` is a timer; `/upstream/`
//! is a non-blocking client in the same loop (`upstream.rs`), with a timer for its 504; a
//! client that dawdles times out (`Connection::deadline`); and the `Date` header is
//! formatted once a second, by a timer, rather than for every response.
//!
//! What still blocks: files, read in the loop (`blocking::perform`). Chapter 6 fixes that.

mod connection;
mod event_loop;
mod poll_backend;
mod timers;
mod upstream;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use shared::app::{self, Action, Context, Stats};
use shared::args::{Config, Extra};
use shared::http::{date, Request, Response};
use shared::signals::Signals;
use shared::{blocking, listener, log, trace};

use connection::Connection;
use event_loop::{EventLoop, Handler};
use poll_backend::{Interest, Token};
use timers::TimerId;

/// How long a graceful shutdown waits for the connections still busy.
const GRACE_PERIOD: Duration = Duration::from_secs(5);

// ANCHOR: server
/// What the handlers share. The loop lends it to each callback as `&mut Server`.
struct Server {
    config: Config,
    /// The listener's registration, until shutdown closes it.
    listener: Option<Token>,
    connections_open: u64,
    requests_served: u64,
    /// Set by SIGTERM: when a graceful shutdown stops waiting for the connections left.
    shutdown_deadline: Option<Instant>,
    /// The `Date` header's value, formatted once a second by a timer (`refresh_date`).
    date: String,
}
// ANCHOR_END: server

/// This server's event loop: every callback it runs gets the `Server`.
type ServerLoop = EventLoop<Server>;

fn main() {
    let config = Config::from_args("ch04-scheduler", &[Extra::Timeouts]);
    if config.trace {
        trace::enable();
    }
    // Before the listening line: whoever reads that line may send SIGTERM at once, and
    // must find our handler in place, not the default one that kills the process.
    let signals = Signals::install();
    // Non-blocking: `accept` answers `WouldBlock` instead of waiting when nobody is there.
    let listener = listener::listen(&config, true);
    let mut server = Server {
        config,
        listener: None,
        connections_open: 0,
        requests_served: 0,
        shutdown_deadline: None,
        date: date::now(),
    };

    // ANCHOR: wiring
    let mut event_loop = EventLoop::new();
    event_loop.register(signals, Interest::READABLE);
    server.listener = Some(event_loop.register(listener, Interest::READABLE));
    event_loop.add_timer(Duration::from_secs(1), refresh_date);
    // The loop: turn until a graceful shutdown is over (see `Signals::on_readable`).
    loop {
        let timeout = match server.shutdown_deadline {
            None => None,                                     // serving: wait as long as it takes
            Some(_) if server.connections_open == 0 => break, // shut down: nothing left to do
            Some(deadline) if deadline <= Instant::now() => break, // out of patience with the rest
            Some(deadline) => Some(deadline.saturating_duration_since(Instant::now())),
        };
        if let Err(error) = event_loop.turn(timeout, &mut server) {
            log!("poll failed: {error}");
            std::process::exit(1);
        }
    }
    log!("shut down with {} connections open; bye", server.connections_open);
    // ANCHOR_END: wiring
}

impl Server {
    fn stats(&self, event_loop: &ServerLoop) -> Stats {
        Stats {
            connections_open: self.connections_open,
            requests_served: self.requests_served,
            loop_turns: event_loop.turns,
            timers_pending: event_loop.timers_pending() as u64,
            ..Stats::default() // no jobs: chapter 6
        }
    }

    /// A connection has closed, for whatever reason (see `Connection::on_close`).
    fn connection_closed(&mut self, event_loop: &mut ServerLoop) {
        self.connections_open -= 1;
        // A descriptor is free: if accepting had paused for lack of them, resume.
        if let Some(listener) = self.listener {
            event_loop.set_interest(listener, Interest::READABLE);
        }
    }
}

// ANCHOR: accept
/// The listening socket, as a handler: readable means clients are waiting to be accepted.
impl Handler<Server> for TcpListener {
    fn on_readable(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        let accepting = listener::accept_all(self, |stream, peer| {
            // Readable: the client speaks first.
            let client = event_loop.register(Connection::new(stream), Interest::READABLE);
            trace!("accept: client {peer} (token {})", client.0);
            server.connections_open += 1;
            // Its header timeout runs from now, even if it never sends a byte.
            event_loop.with_handler(client, server, Connection::after_event);
        });
        if !accepting {
            // Out of descriptors: stop watching until a connection closes, or for 100 ms
            // (others may hold the descriptors).
            event_loop.set_interest(token, Interest::NONE);
            event_loop.add_timer(Duration::from_millis(100), move |event_loop, _| {
                event_loop.set_interest(token, Interest::READABLE) // if it is still open
            });
        }
    }
}
// ANCHOR_END: accept

// ANCHOR: shutdown
/// SIGINT or SIGTERM arrived (a byte in the signal pipe): shut down gracefully. This is an
/// ordinary callback, not a signal handler, so it may touch anything.
impl Handler<Server> for Signals {
    fn on_readable(&mut self, event_loop: &mut ServerLoop, _: Token, server: &mut Server) {
        let Some(signal) = self.take() else { return };
        if server.shutdown_deadline.is_some() {
            return; // a second signal: the shutdown is already under way
        }
        log!("{signal}: shutting down: no new connections, finishing the ones in flight");
        server.shutdown_deadline = Some(Instant::now() + GRACE_PERIOD);
        // 1. Stop accepting: closing the listener makes new connects fail at once.
        if let Some(listener) = server.listener.take() {
            event_loop.deregister(listener, server);
        }
        // 2. Close the idle connections: nothing is in flight on them. The busy ones send
        //    their last answer with `Connection: close`, then close (`after_event`).
        event_loop.close_idle(server);
    }
}
// ANCHOR_END: shutdown

// ANCHOR: refresh_date
/// Formats the `Date` header anew, once a second (nginx caches it too). A timer that sets
/// the next one is a periodic timer; each beat comes a little late, which a date does not mind.
fn refresh_date(event_loop: &mut ServerLoop, server: &mut Server) {
    server.date = date::now();
    event_loop.add_timer(Duration::from_secs(1), refresh_date);
}
// ANCHOR_END: refresh_date

// ANCHOR: run_app
/// What the application answered: a response now, or work whose answer comes later.
enum Reply {
    Now(Response),
    Later(Effect),
}

/// A request's work in flight, kept by its connection to stop it should the client leave.
enum Effect {
    Sleep(TimerId),
    Upstream { socket: Token, timeout: TimerId }, // the upstream's socket, and its 504 timer
}

impl Effect {
    fn cancel(&self, event_loop: &mut ServerLoop, server: &mut Server) {
        match self {
            Effect::Sleep(timer) => drop(event_loop.cancel_timer(*timer)),
            Effect::Upstream { socket, timeout } => {
                event_loop.cancel_timer(*timeout);
                event_loop.deregister(*socket, server);
            }
        }
    }
}

/// Asks the application what to do, and starts doing it. New in chapter 4: `/sleep` and
/// the upstream answer the connection `token` later. Files still block (chapter 6).
fn run_app(request: &Request, event_loop: &mut ServerLoop, token: Token, server: &Server) -> Reply {
    let config = &server.config;
    let stats = server.stats(event_loop);
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats };
    match app::handle(request, &context) {
        Action::Respond(response) => Reply::Now(response),
        Action::Sleep { ms } => {
            let timer =
                event_loop.add_timer(Duration::from_millis(ms), move |event_loop, server| {
                    Connection::answer(event_loop, token, server, app::slept(ms))
                });
            Reply::Later(Effect::Sleep(timer))
        }
        action @ Action::ReadFile { .. } => Reply::Now(blocking::perform(action, config)),
        Action::Upstream { address, path_and_query } => {
            let fetched = move |response, event_loop: &mut _, server: &mut _| {
                Connection::answer(event_loop, token, server, response)
            };
            match upstream::fetch(event_loop, address, &path_and_query, fetched) {
                Ok((socket, timeout)) => Reply::Later(Effect::Upstream { socket, timeout }),
                Err(response) => Reply::Now(response),
            }
        }
    }
}

// ANCHOR_END: run_app
