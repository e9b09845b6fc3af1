//! Chapter 7: epoll, so that ten thousand idle clients cost nothing.
//!
//! Chapter 6's server, unchanged but for how its loop waits. `poll(2)` is handed every
//! open socket on every turn, so each turn costs time in proportion to all of them, busy
//! or idle. epoll (`epoll_backend.rs`) keeps that list in the kernel and hands back only
//! the ready ones; on macOS and the BSDs, kqueue does the same (`kqueue_backend.rs`). Each
//! sits behind the same small interface as poll (`Poller` in `poller.rs`), chosen at
//! startup with `--backend epoll|poll` (`kqueue|poll` there), so the same server can be run
//! both ways and compared; `--trace` and `/stats` say which one runs.

mod connection;
#[cfg(target_os = "linux")]
mod epoll_backend;
mod event_loop;
mod fs;
#[cfg(not(target_os = "linux"))]
mod kqueue_backend;
mod poll_backend;
mod poller;
mod promise;
mod thread_pool;
mod timers;
mod upstream;

use std::io;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shared::app::{self, Action, Context, Stats};
use shared::args::{Config, Extra};
use shared::http::{date, Request, Response};
use shared::self_pipe::SelfPipe;
use shared::signals::Signals;
use shared::{files, listener, log, trace};

use connection::Connection;
use event_loop::{EventLoop, Handler};
use fs::Files;
use poller::{Interest, Token};
use promise::Promise;
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
    /// New in chapter 6: the thread pool that reads files, and the promises waiting on it.
    files: Files<Server>,
}
// ANCHOR_END: server

/// This server's event loop: every callback it runs gets the `Server`.
type ServerLoop = EventLoop<Server>;

fn main() {
    let config =
        Config::from_args("ch07-epoll", &[Extra::Timeouts, Extra::Workers, Extra::Backend]);
    if config.trace {
        trace::enable();
    }
    // Before the listening line: whoever reads that line may send SIGTERM at once, and
    // must find our handler in place, not the default one that kills the process.
    let signals = Signals::install();
    // Non-blocking: `accept` answers `WouldBlock` instead of waiting when nobody is there.
    let listener = listener::listen(&config, true);
    let files = Files::new(config.workers, config.fs_delay);
    let files = files.unwrap_or_else(|error| fail("start the thread pool", error));
    let mut server = Server {
        config,
        listener: None,
        connections_open: 0,
        requests_served: 0,
        shutdown_deadline: None,
        date: date::now(),
        files,
    };

    // ANCHOR: wiring
    let event_loop = EventLoop::new(server.config.backend);
    let mut event_loop = event_loop.unwrap_or_else(|error| fail("start the event loop", error));
    let or_fail =
        |registered: io::Result<Token>| registered.unwrap_or_else(|e| fail("register", e));
    or_fail(event_loop.register(signals, Interest::READABLE));
    server.listener = Some(or_fail(event_loop.register(listener, Interest::READABLE)));
    event_loop.add_timer(Duration::from_secs(1), refresh_date);
    or_fail(event_loop.register(server.files.pool.doorbell.clone(), Interest::READABLE));
    // The loop: turn until a graceful shutdown is over (see `Signals::on_readable`).
    loop {
        let timeout = match server.shutdown_deadline {
            None => None,                                     // serving: wait as long as it takes
            Some(_) if server.connections_open == 0 => break, // shut down: nothing left to do
            Some(deadline) if deadline <= Instant::now() => break, // out of patience with the rest
            Some(deadline) => Some(deadline.saturating_duration_since(Instant::now())),
        };
        if let Err(error) = event_loop.turn(timeout, &mut server) {
            fail("wait", error);
        }
    }
    log!("shut down with {} connections open; bye", server.connections_open);
    // ANCHOR_END: wiring
}

impl Server {
    fn stats(&self, event_loop: &ServerLoop) -> Stats {
        let (jobs_queued, jobs_running) = self.files.pool.load();
        Stats {
            connections_open: self.connections_open,
            requests_served: self.requests_served,
            loop_turns: event_loop.turns,
            timers_pending: event_loop.timers_pending() as u64,
            jobs_queued: jobs_queued as u64,
            jobs_running: jobs_running as u64,
            backend: self.config.backend.name(),
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
            let client = match event_loop.register(Connection::new(stream), Interest::READABLE) {
                Ok(client) => client,
                Err(error) => {
                    trace!("accept: {peer}: cannot register: {error}"); // dropped, so closed
                    return;
                }
            };
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

// ANCHOR: doorbell
/// The thread pool's doorbell, as a handler: readable when jobs have finished.
impl Handler<Server> for Arc<SelfPipe> {
    fn on_readable(&mut self, _: &mut ServerLoop, _: Token, server: &mut Server) {
        server.files.settle_finished();
    }
}
// ANCHOR_END: doorbell

/// Formats the `Date` header anew, once a second (nginx caches it too). A timer that sets
/// the next one is a periodic timer; each beat comes a little late, which a date does not mind.
fn refresh_date(event_loop: &mut ServerLoop, server: &mut Server) {
    server.date = date::now();
    event_loop.add_timer(Duration::from_secs(1), refresh_date);
}

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
    ReadFile, // new in chapter 6: nothing to stop; the job runs to its end, unheard if need be
}

impl Effect {
    fn cancel(&self, event_loop: &mut ServerLoop, server: &mut Server) {
        match self {
            Effect::Sleep(timer) => drop(event_loop.cancel_timer(*timer)),
            Effect::Upstream { socket, timeout } => {
                event_loop.cancel_timer(*timeout);
                event_loop.deregister(*socket, server);
            }
            Effect::ReadFile => {}
        }
    }
}

/// Asks the application what to do, and starts doing it. `/sleep`, the upstream and (new in
/// chapter 6) files answer later, through a promise.
fn run_app(
    request: &Request, event_loop: &mut ServerLoop, token: Token, server: &mut Server,
) -> Reply {
    let config = &server.config;
    let stats = server.stats(event_loop);
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats };
    match app::handle(request, &context) {
        Action::Respond(response) => Reply::Now(response),
        Action::Sleep { ms } => {
            let (timer, slept) = promise::delay(event_loop, Duration::from_millis(ms));
            answer_later(token, slept.then(move |(), _, _| Ok(app::slept(ms))));
            Reply::Later(Effect::Sleep(timer))
        }
        Action::ReadFile { path } => {
            // The head and the first chunk go out together; the rest follows (`Connection`).
            let first = server.files.open(event_loop, config.root.clone(), path.clone());
            first.on_settled(move |outcome, event_loop, server| {
                let (response, first) = match outcome {
                    Ok(chunk) => (files::streamed_response(&path, chunk.length), Some(chunk)),
                    Err(response) => (response, None),
                };
                Connection::answer(event_loop, token, server, response, first);
            });
            Reply::Later(Effect::ReadFile)
        }
        Action::Upstream { address, path_and_query } => {
            match upstream::fetch(event_loop, address, &path_and_query) {
                Ok((socket, timeout, answer)) => {
                    answer_later(token, answer);
                    Reply::Later(Effect::Upstream { socket, timeout })
                }
                Err(response) => Reply::Now(response),
            }
        }
    }
}

/// The last step of a request's chain: hands its answer (or its error, which is an answer
/// too: a 502, a 504) to the connection `token`, if it is still open.
fn answer_later(token: Token, answer: Promise<Response, Server>) {
    answer.on_settled(move |outcome, event_loop, server| {
        let response = outcome.unwrap_or_else(|error| error);
        Connection::answer(event_loop, token, server, response, None);
    });
}
// ANCHOR_END: run_app

/// Setup failed: a one-line error and exit status 1, as for a port in use.
fn fail(what: &str, error: io::Error) -> ! {
    log!("ch07-epoll: cannot {what}: {error}");
    std::process::exit(1);
}
