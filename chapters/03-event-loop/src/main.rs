//! Chapter 3: an event loop, and a server that uses it.
//!
//! Chapter 2 had one function that did everything: built the list for `poll`, waited, and
//! walked the answers back to the right connection. Here that machinery becomes an
//! [`EventLoop`] (in `event_loop.rs`), the way Redis has `ae.c` and Rust has mio: we
//! *register* a descriptor with what we wait for on it and an object to call back, and
//! the loop calls `on_readable` or `on_writable` when the time comes. The server is now
//! just three kinds of callback: the listener (accept clients), each [`Connection`]
//! (read requests, write responses), and the signal pipe (shut down gracefully).
//!
//! With the loop doing the bookkeeping, a connection can serve many requests: keep-alive
//! and pipelining (in `connection.rs`). And SIGINT or SIGTERM, delivered as an ordinary
//! event (`signals.rs`), stops the server gracefully: no new clients, the responses in
//! flight finish, then exit.
//!
//! What is still blocking: the application's effects. `/sleep`, a slow disk and the
//! upstream still stop the whole loop, exactly as in chapter 1. Chapter 4 fixes that.

mod connection;
mod event_loop;
mod poll_backend;
mod signals;

use std::collections::HashSet;
use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::process::exit;
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;

use shared::app::{self, Action, Context, Stats};
use shared::args::Config;
use shared::http::{self, Response};
use shared::{files, listener, trace, upstream};

use connection::Connection;
use event_loop::{EventLoop, Handler, Interest, Token};
use signals::Signals;

/// How long a graceful shutdown waits for the responses in flight.
const GRACE_PERIOD: Duration = Duration::from_secs(5);

// ANCHOR: server
/// What the callbacks share. The loop lends it to each of them as `&mut Server`.
struct Server {
    config: Config,
    /// The listener's registration, until shutdown closes it.
    listener: Option<Token>,
    /// Out of file descriptors: the listener waits for nothing until a connection closes.
    accept_paused: bool,
    /// Connections waiting for their next request, with nothing half-done: a graceful
    /// shutdown closes these at once. A token left here by a connection the loop closed
    /// after a panic is harmless: its generation is stale, so deregistering it does nothing.
    idle: HashSet<Token>,
    requests_served: u64,
    shutting_down: bool,
}
// ANCHOR_END: server

fn main() {
    let config = Config::from_args("ch03-event-loop", &[]);
    if config.trace {
        trace::enable();
    }
    // Before the listening line: whoever reads that line may send SIGTERM at once, and
    // must find our handler in place, not the default one that kills the process.
    let signals = Signals::install().unwrap_or_else(|error| fail("signal handlers", error));
    // Non-blocking: `accept` answers `WouldBlock` instead of waiting when nobody is there.
    let listener = listener::listen(&config, true);

    let mut event_loop = EventLoop::new();
    let mut server = Server {
        config,
        listener: None,
        accept_paused: false,
        idle: HashSet::new(),
        requests_served: 0,
        shutting_down: false,
    };
    // ANCHOR: wiring
    let fd = signals.as_raw_fd();
    event_loop
        .register(fd, Interest::READABLE, signals)
        .unwrap_or_else(|error| fail("register the signal pipe", error));
    let fd = listener.as_raw_fd();
    let token = event_loop
        .register(fd, Interest::READABLE, Listener { listener })
        .unwrap_or_else(|error| fail("register the listener", error));
    server.listener = Some(token);

    // Runs until the signal callback calls `stop`...
    if let Err(error) = event_loop.run(&mut server) {
        fail("poll", error);
    }
    // ...then lets the connections still open finish.
    drain(&mut event_loop, &mut server);
    // ANCHOR_END: wiring
}

// ANCHOR: stats
impl Server {
    /// The numbers `/stats` shows. The open connections are the registrations whose
    /// handler is a `Connection`: not the signal pipe, not the listener.
    /// Asking the loop, rather than keeping a count of our own, stays right even when the
    /// loop closes a connection on its own, after a panic.
    fn stats(&self, event_loop: &EventLoop<Server>) -> Stats {
        Stats {
            connections_open: event_loop.count::<Connection>() as u64,
            requests_served: self.requests_served,
            loop_turns: event_loop.turns(),
            ..Stats::default() // no timers, no jobs: chapters 4 and 6
        }
    }

    /// A connection has closed (and with it, a descriptor is free again).
    fn connection_closed(&mut self, event_loop: &mut EventLoop<Server>, token: Token) {
        self.idle.remove(&token);
        if self.accept_paused {
            if let Some(listener) = self.listener {
                trace!("accept: a descriptor is free again, resuming");
                let _ = event_loop.set_interest(listener, Interest::READABLE);
            }
            self.accept_paused = false;
        }
    }
}
// ANCHOR_END: stats

// ANCHOR: accept
/// The listening socket, as a handler: readable means clients are waiting to be accepted.
struct Listener {
    listener: TcpListener,
}

impl Handler<Server> for Listener {
    fn on_readable(
        &mut self,
        event_loop: &mut EventLoop<Server>,
        token: Token,
        server: &mut Server,
    ) {
        if !accept_all(&self.listener, event_loop, server) {
            server.accept_paused = true;
            let _ = event_loop.set_interest(token, Interest::NONE);
        }
    }
}

/// Accepts every client that is waiting, until `accept` says `WouldBlock`, and registers
/// each with the loop. Returns whether to keep polling the listener.
fn accept_all(listener: &TcpListener, event_loop: &mut EventLoop<Server>, server: &Server) -> bool {
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                if let Err(error) = stream.set_nonblocking(true) {
                    trace!("accept: {peer}: {error}");
                    continue;
                }
                let fd = stream.as_raw_fd();
                // Readable: the client speaks first. If registering fails, the connection
                // is dropped with the error, which closes it.
                match event_loop.register(fd, Interest::READABLE, Connection::new(stream)) {
                    Ok(token) => trace!("accept: client {peer} (fd {fd}, token {token})"),
                    Err(error) => trace!("accept: {peer}: cannot register: {error}"),
                }
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return true,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) if is_out_of_descriptors(&error) => {
                // The listener stays "ready" while clients wait, so polling it again at
                // once would spin at 100% CPU doing nothing. Stop watching it instead,
                // until one of our connections closes (see `Server::connection_closed`).
                eprintln!("accept: {error}; pausing accepts");
                if server.stats(event_loop).connections_open == 0 {
                    // None of ours to close, so no close of ours would ever resume us.
                    // Try again in 100 ms; blocking stops nobody, since nobody is here.
                    thread::sleep(Duration::from_millis(100));
                    return true;
                }
                return false;
            }
            Err(error) => {
                // A client that connected and reset before we accepted it, and the like.
                trace!("accept: {error}");
                return true;
            }
        }
    }
}
// ANCHOR_END: accept

// ANCHOR: shutdown
/// SIGINT or SIGTERM arrived (as a byte in the signal pipe, see `signals.rs`): the first
/// half of a graceful shutdown. We are in an ordinary callback here, so we may touch
/// anything.
impl Handler<Server> for Signals {
    fn on_readable(
        &mut self,
        event_loop: &mut EventLoop<Server>,
        _token: Token,
        server: &mut Server,
    ) {
        let Some(signal) = self.drain() else {
            return;
        };
        if server.shutting_down {
            return; // a second signal: the shutdown is already under way
        }
        eprintln!("{signal}: shutting down: no new connections, finishing the ones in flight");
        server.shutting_down = true;
        // 1. Stop accepting. Closing the listener makes new connects fail at once instead
        //    of waiting in a queue nobody reads. (If the listener is also ready in this
        //    very turn, the loop will not deliver that event: it is gone.)
        if let Some(listener) = server.listener.take() {
            event_loop.deregister(listener);
        }
        // 2. Close the idle keep-alive connections: nothing is in flight on them.
        for token in server.idle.drain() {
            event_loop.deregister(token);
        }
        // 3. The busy ones answer their current request with `Connection: close`, and
        //    close when it is sent (see `try_respond` and `after_event`).
        event_loop.stop();
    }
}

/// The second half: turn the loop until every connection has closed, or the grace
/// period is over. Then `main` returns and the process exits with status 0.
fn drain(event_loop: &mut EventLoop<Server>, server: &mut Server) {
    let deadline = Instant::now() + GRACE_PERIOD;
    loop {
        let open = server.stats(event_loop).connections_open;
        if open == 0 {
            eprintln!("all connections closed; bye");
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            eprintln!("{open} connections still open after {GRACE_PERIOD:?}; closing them");
            return;
        }
        if let Err(error) = event_loop.turn(Some(deadline - now), server) {
            eprintln!("poll failed: {error}");
            return;
        }
    }
}
// ANCHOR_END: shutdown

/// Setup failed: a one-line error and exit status 1, as for a port in use.
fn fail(what: &str, error: io::Error) -> ! {
    eprintln!("{}: {what}: {error}", env!("CARGO_PKG_NAME"));
    exit(1);
}

/// `EMFILE` (this process is out of descriptors) or `ENFILE` (the whole system is).
fn is_out_of_descriptors(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(code) if code == Errno::EMFILE as i32 || code == Errno::ENFILE as i32)
}

// ANCHOR: run_app
/// Asks the application what to do, and does it, blocking. Still as in chapter 1: while
/// we sleep or read a slow disk here, no other client is served. Chapter 4 fixes that.
fn run_app(request: &http::Request, config: &Config, stats: &Stats) -> Response {
    let context = Context {
        chapter: config.chapter,
        upstream: config.upstream,
        stats: *stats,
    };
    match app::handle(request, &context) {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            thread::sleep(Duration::from_millis(ms));
            app::slept(ms)
        }
        Action::ReadFile { path } => {
            files::response(&path, files::load(&config.root, &path, config.fs_delay))
        }
        Action::Upstream {
            address,
            path_and_query,
        } => upstream::fetch_blocking(address, &path_and_query),
    }
}
// ANCHOR_END: run_app
