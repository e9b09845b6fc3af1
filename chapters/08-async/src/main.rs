//! Chapter 8: coroutines, as `async`/`await` on an executor and a reactor of our own.
//!
//! Chapters 3 to 7 wrote every client as a state machine of callbacks, then of promises.
//! Here each client is a plain `async fn` (`connection.rs`) that reads, answers and loops,
//! written as if it blocked; the compiler turns it into the state machine. Under it, with
//! nothing but `std`: an executor that runs tasks (`executor.rs`), a reactor that wakes
//! them when their sockets are ready (`reactor.rs`, chapter 7's epoll turned around),
//! sockets whose calls are futures (`net.rs`), timers (`time.rs`), tools for tasks to
//! wait on each other (`sync.rs`), and chapter 6's thread pool for files (`fs.rs`).

mod connection;
mod executor;
mod fs;
mod net;
mod race;
mod reactor;
mod sync;
mod thread_pool;
mod time;
mod timers;
mod upstream;

use std::cell::{Cell, RefCell};
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use shared::app::{Context, Stats};
use shared::args::{Config, Extra};
use shared::http::date;
use shared::signals::Signals;
use shared::{listener, log, trace};

use executor::{spawn, Executor};
use fs::Files;
use net::Async;
use race::{race, Winner};
use sync::{Flag, Semaphore};

/// How long a graceful shutdown waits for the connections still busy.
const GRACE_PERIOD: Duration = Duration::from_secs(5);

// ANCHOR: server
/// What the tasks share. Single-threaded: an `Rc`, and `Cell`s for what changes.
pub struct Server {
    config: Config,
    /// Set by SIGTERM: every idle connection waits on it along with its read.
    shutdown: Flag,
    connections_open: Cell<u64>,
    requests_served: Cell<u64>,
    /// The `Date` header's value, formatted once a second (`refresh_date`).
    date: RefCell<String>,
    files: Files,
    /// At most `--upstream-limit` fetches at once.
    upstream_slots: Semaphore,
}
// ANCHOR_END: server

fn main() {
    let extras = [Extra::Timeouts, Extra::Workers, Extra::UpstreamLimit];
    let config = Config::from_args("ch08-async", &extras);
    if config.trace {
        trace::enable();
    }
    let signals = Signals::install();
    let listener = listener::listen(&config, true);
    let files = Files::new(&config.root, config.workers, config.fs_delay);
    let files = files.unwrap_or_else(|error| fail("start the thread pool", error));
    let server = Rc::new(Server {
        shutdown: Flag::default(),
        connections_open: Cell::new(0),
        requests_served: Cell::new(0),
        date: RefCell::new(date::now()),
        files,
        upstream_slots: Semaphore::new(config.upstream_limit),
        config,
    });

    // ANCHOR: tasks
    spawn(accept(watch(listener), server.clone()));
    spawn(shut_down_on_signal(watch(signals), server.clone()));
    spawn(refresh_date(server.clone()));
    // ANCHOR_END: tasks

    // ANCHOR: loop
    // The loop: turn until a graceful shutdown is over, as in chapters 3 to 7.
    let mut executor = Executor::new().unwrap_or_else(|error| fail("start the executor", error));
    let mut shutdown_deadline = None;
    loop {
        if server.shutdown.is_set() {
            let deadline = *shutdown_deadline.get_or_insert_with(|| Instant::now() + GRACE_PERIOD);
            if server.connections_open.get() == 0 || Instant::now() >= deadline {
                break;
            }
        }
        let timeout = shutdown_deadline
            .map(|deadline: Instant| deadline.saturating_duration_since(Instant::now()));
        if let Err(error) = executor.turn(timeout) {
            fail("wait", error);
        }
    }
    log!("shut down with {} connections open; bye", server.connections_open.get());
    // ANCHOR_END: loop
}

impl Server {
    /// What the application needs to know, `/stats` included.
    fn context(&self) -> Context<'_> {
        let (jobs_queued, jobs_running) = self.files.pool.load();
        let stats = Stats {
            connections_open: self.connections_open.get(),
            requests_served: self.requests_served.get(),
            loop_turns: executor::turns(),
            timers_pending: time::pending() as u64,
            jobs_queued: jobs_queued as u64,
            jobs_running: jobs_running as u64,
            backend: shared::args::Backend::NATIVE.name(),
        };
        Context { chapter: self.config.chapter, upstream: self.config.upstream, stats }
    }
}

// ANCHOR: accept
/// The listener's task: accepts clients, a task for each, until the server shuts down.
async fn accept(listener: Async<TcpListener>, server: Rc<Server>) {
    loop {
        let accept = listener.read_with(TcpListener::accept);
        // The shutdown first, so that once it has begun not one more client is taken in.
        let accepted = match race(server.shutdown.wait(), accept).await {
            Winner::Second(accepted) => accepted,
            Winner::First(()) => break, // shutting down
        };
        let accepted = accepted.and_then(|(stream, peer)| {
            stream.set_nonblocking(true)?;
            Ok((Async::new(stream)?, peer))
        });
        match accepted {
            Ok((stream, peer)) => {
                trace!("accept: client {peer} (fd {})", stream.get_ref().as_raw_fd());
                spawn(connection::serve(stream, server.clone()));
            }
            Err(error) if listener::is_out_of_descriptors(&error) => {
                // The listener stays ready while clients wait: try again in a while, rather
                // than at once, which would spin at 100% CPU doing nothing.
                log!("accept: {error}; pausing accepts");
                time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => trace!("accept: {error}"), // it reset first, or the reactor refused it
        }
    }
    // Dropped here: the listener closes, and new connects fail at once.
}
// ANCHOR_END: accept

// ANCHOR: shutdown
/// Waits for SIGINT or SIGTERM, then starts a graceful shutdown: the listener's task ends,
/// idle connections end, and busy ones send their last answer with `Connection: close`.
async fn shut_down_on_signal(signals: Async<Signals>, server: Rc<Server>) {
    let signal =
        signals.read_with(|signals| signals.take().ok_or(io::ErrorKind::WouldBlock.into()));
    if let Ok(signal) = signal.await {
        log!("{signal}: shutting down: no new connections, finishing the ones in flight");
        server.shutdown.set();
    }
}
// ANCHOR_END: shutdown

/// Formats the `Date` header anew, once a second, for the server's life.
async fn refresh_date(server: Rc<Server>) {
    loop {
        time::sleep(Duration::from_secs(1)).await;
        *server.date.borrow_mut() = date::now();
    }
}

/// Registers a descriptor of the server's own with the reactor, or fails.
fn watch<T: AsFd>(descriptor: T) -> Async<T> {
    Async::new(descriptor).unwrap_or_else(|error| fail("register with the reactor", error))
}

/// Setup failed: a one-line error and exit status 1, as for a port in use.
fn fail(what: &str, error: io::Error) -> ! {
    log!("ch08-async: cannot {what}: {error}");
    std::process::exit(1);
}
