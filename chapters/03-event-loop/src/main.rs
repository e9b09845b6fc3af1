//! Chapter 3: an event loop, and a server that uses it.
//!
//! Chapter 2's loop becomes an [`EventLoop`] (`event_loop.rs`), as Redis has `ae.c`: we
//! *register* a handler, an object that owns a socket, and the loop calls it back when the
//! socket is ready. Three kinds of handler: the listener, each [`Connection`] (now with
//! keep-alive and pipelining), and the signal pipe, for a graceful stop on SIGINT or SIGTERM.
//!
//! What is still blocking: the application's effects. `/sleep`, a slow disk and the
//! upstream still stop the whole loop, exactly as in chapter 1. Chapter 4 fixes that.

mod connection;
mod event_loop;
mod poll_backend;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use shared::app::Stats;
use shared::args::Config;
use shared::signals::Signals;
use shared::{listener, log, trace};

use connection::Connection;
use event_loop::{EventLoop, Handler};
use poll_backend::{Interest, Token};

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
}
// ANCHOR_END: server

/// This server's event loop: every callback it runs gets the `Server`.
type ServerLoop = EventLoop<Server>;

fn main() {
    let config = Config::from_args("ch03-event-loop", &[]);
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
    };

    // ANCHOR: wiring
    let mut event_loop = EventLoop::new();
    event_loop.register(signals, Interest::READABLE);
    server.listener = Some(event_loop.register(listener, Interest::READABLE));
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
            ..Stats::default() // no timers, no jobs: chapters 4 and 6
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
        });
        if !accepting {
            // Out of descriptors: stop watching until a connection closes (`connection_closed`).
            event_loop.set_interest(token, Interest::NONE);
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
