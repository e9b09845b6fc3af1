//! Chapter 9: one event loop per core, the way nginx runs its workers.
//!
//! Every chapter so far used one core. Here chapter 8's server runs `--threads N` times
//! (default: one per core), each on a thread of its own with its own executor, reactor
//! and timers (they are thread-locals already), and its own listening socket on the same
//! port: with `SO_REUSEPORT` the kernel spreads new connections across them (on macOS,
//! which cannot, the loops share one listener: see [`another`]). Nothing is
//! shared but what is said out loud in [`Loops`]: each loop's counters (atomics, summed by
//! `/stats`), the doorbells that carry a shutdown to every loop, and what the whole server
//! has one of: the thread pool for files (its workers wake the task that asked, on
//! whichever loop it runs) and the limit on fetches from the upstream.

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

use std::cell::RefCell;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use shared::app::{Context, Stats};
use shared::args::{Config, Extra};
use shared::http::{date, Response};
use shared::self_pipe::SelfPipe;
use shared::signals::Signals;
use shared::{listener, log, trace};

use executor::{spawn, Executor};
use fs::Files;
use net::Async;
use race::{race, Winner};
use sync::{Flag, Semaphore};

/// How long a graceful shutdown waits for the connections still busy.
const GRACE_PERIOD: Duration = Duration::from_secs(5);

// ANCHOR: loops
/// What the loops share, and nothing more.
pub struct Loops {
    /// One per loop: each loop writes only its own; `/stats` reads them all.
    counters: Vec<Counters>,
    /// One per loop: ringing it tells the loop to shut down (see `shut_down_on_wake`).
    doorbells: Vec<Arc<SelfPipe>>,
    /// Every loop's listener (a second handle): the signal stops them all first.
    listening: Vec<TcpListener>,
    /// Passed once every loop has its sockets and threads: then we say where to connect.
    set_up: Barrier,
    port: u16,
    /// The whole server's: one pool, and one limit on fetches (`--upstream-limit`).
    files: Arc<Files>,
    upstream_slots: Semaphore,
}

/// Aligned so that each loop's counters have cache lines of their own (128 bytes: some
/// CPUs fetch lines in pairs): a loop writing its own never slows another loop's.
#[derive(Default)]
#[repr(align(128))]
pub struct Counters {
    connections_open: AtomicU64,
    requests_served: AtomicU64,
    loop_turns: AtomicU64,
    timers_pending: AtomicU64,
}
// ANCHOR_END: loops

/// What the tasks of one loop share: chapter 8's `Server`, plus which loop it is.
pub struct Server {
    config: Config,
    /// Set when the server shuts down: every idle connection waits on it along with its read.
    shutdown: Flag,
    /// The `Date` header's value, formatted once a second (`refresh_date`).
    date: RefCell<String>,
    /// The whole server's, from `Loops`.
    files: Arc<Files>,
    upstream_slots: Semaphore,
    loops: Arc<Loops>,
    /// This loop's number, and so its place in `loops`.
    index: usize,
}

fn main() {
    let extras = [Extra::Timeouts, Extra::Workers, Extra::UpstreamLimit, Extra::Threads];
    let config = Config::from_args("ch09-multicore", &extras);
    if config.trace {
        trace::enable();
    }
    let signals = Signals::install();
    // ANCHOR: listeners
    // SO_REUSEPORT would let us share a port in use with another server of ours, where every
    // chapter refuses it: a plain bind first says whether it is free.
    if config.port != 0 {
        drop(listener::bind(&config.host, config.port, true).unwrap_or_else(|e| fail("listen", e)));
    }
    // One listener per loop, all on the same port. The first picks it (`--port 0`).
    let first = bind(&config.host, config.port).unwrap_or_else(|error| fail("listen", error));
    let port = first.local_addr().map_or(config.port, |address| address.port());
    let mut listeners = vec![first];
    for _ in 1..config.threads {
        let listener = another(&listeners[0], &config.host, port);
        listeners.push(listener.unwrap_or_else(|error| fail("listen", error)));
    }
    // ANCHOR_END: listeners
    let doorbells = (0..config.threads).map(|_| SelfPipe::new().map(Arc::new));
    let doorbells =
        doorbells.collect::<io::Result<_>>().unwrap_or_else(|error| fail("make doorbells", error));
    let counters = (0..config.threads).map(|_| Counters::default()).collect();
    let set_up = Barrier::new(config.threads);
    let files = Files::new(&config.root, config.workers, config.fs_delay);
    let files = Arc::new(files.unwrap_or_else(|error| fail("start the thread pool", error)));
    let upstream_slots = Semaphore::new(config.upstream_limit);
    let listening = listeners.iter().map(TcpListener::try_clone).collect::<io::Result<_>>();
    let listening = listening.unwrap_or_else(|error| fail("copy the listeners", error));
    let loops = Loops { counters, doorbells, listening, set_up, port, files, upstream_slots };
    let loops = Arc::new(loops);

    // ANCHOR: threads
    // Loop 0 runs on this thread, and watches for signals; the others on threads of their own.
    let mut listeners = listeners.into_iter().enumerate();
    let (_, own) = listeners.next().expect("at least one loop");
    let mut others = Vec::new();
    for (index, listener) in listeners {
        let (config, loops) = (config.clone(), loops.clone());
        let thread = thread::Builder::new().name(format!("loop-{index}"));
        let spawned = thread.spawn(move || run_loop(index, listener, None, config, loops));
        others.push(spawned.unwrap_or_else(|error| fail("start a loop's thread", error)));
    }
    let mut open = run_loop(0, own, Some(signals), config, loops);
    for other in others {
        open += other.join().unwrap_or(0);
    }
    // ANCHOR_END: threads
    log!("shut down with {open} connections open; bye");
}

// ANCHOR: run_loop
/// One loop, from start to shutdown: chapter 8's `main`, for one thread. Returns how many
/// of its connections were still open when it stopped.
fn run_loop(
    index: usize, listener: TcpListener, signals: Option<Signals>, config: Config,
    loops: Arc<Loops>,
) -> u64 {
    let server = Rc::new(Server {
        shutdown: Flag::default(),
        date: RefCell::new(date::now()),
        files: loops.files.clone(),
        upstream_slots: loops.upstream_slots.clone(),
        config,
        loops,
        index,
    });
    spawn(accept(watch(listener), server.clone()));
    if let Some(signals) = signals {
        spawn(broadcast_signal(watch(signals), server.clone()));
    }
    spawn(shut_down_on_wake(watch(server.loops.doorbells[index].clone()), server.clone()));
    spawn(refresh_date(server.clone()));
    // A client that connects once it reads the `listening on` line finds every loop ready.
    if server.loops.set_up.wait().is_leader() {
        listener::announce(&server.config, server.loops.port);
    }

    let mut executor = Executor::new().unwrap_or_else(|error| fail("start the executor", error));
    let mut shutdown_deadline = None;
    loop {
        if server.shutdown.is_set() {
            let deadline = *shutdown_deadline.get_or_insert_with(|| Instant::now() + GRACE_PERIOD);
            let open = server.counters().connections_open.load(Ordering::Relaxed);
            if open == 0 || Instant::now() >= deadline {
                return open; // read now: dropping the executor drops the tasks still open
            }
        }
        let timeout = shutdown_deadline
            .map(|deadline: Instant| deadline.saturating_duration_since(Instant::now()));
        if let Err(error) = executor.turn(timeout) {
            fail("wait", error);
        }
        let counters = server.counters();
        counters.loop_turns.store(executor::turns(), Ordering::Relaxed);
        counters.timers_pending.store(time::pending() as u64, Ordering::Relaxed);
    }
}
// ANCHOR_END: run_loop

// ANCHOR: stats
impl Server {
    /// This loop's counters.
    pub fn counters(&self) -> &Counters {
        &self.loops.counters[self.index]
    }

    /// What the application needs to know. Only `/stats` shows the counters, and adding
    /// them up reads every loop's cache lines, so the other paths skip it.
    fn context(&self, path: &str) -> Context<'_> {
        let upstream = self.config.upstream;
        if path != "/stats" {
            return Context { chapter: self.config.chapter, upstream, stats: Stats::default() };
        }
        let sum = |count: fn(&Counters) -> &AtomicU64| {
            self.loops.counters.iter().map(|counters| count(counters).load(Ordering::Relaxed)).sum()
        };
        let (jobs_queued, jobs_running) = self.files.pool.load();
        let stats = Stats {
            connections_open: sum(|c| &c.connections_open),
            requests_served: sum(|c| &c.requests_served),
            loop_turns: sum(|c| &c.loop_turns),
            timers_pending: sum(|c| &c.timers_pending),
            jobs_queued: jobs_queued as u64,
            jobs_running: jobs_running as u64,
            backend: shared::args::Backend::NATIVE.name(),
        };
        Context { chapter: self.config.chapter, upstream, stats }
    }

    /// `/stats` says what each loop has served, a line each: `thread 0 requests_served 12`.
    /// A 200 only: a `POST /stats` (405) gets none.
    pub fn add_thread_lines(&self, stats: &mut Response) {
        if stats.status != 200 {
            return;
        }
        let shared::http::Body::Owned(body) = &mut stats.body else { return };
        for (index, counters) in self.loops.counters.iter().enumerate() {
            let served = counters.requests_served.load(Ordering::Relaxed);
            body.extend_from_slice(format!("thread {index} requests_served {served}\n").as_bytes());
        }
    }
}
// ANCHOR_END: stats

// ANCHOR: bind
/// A listening socket that shares its port with the other loops': `SO_REUSEPORT`, and the
/// kernel hands each new connection to one of them (by a hash of its addresses).
/// FreeBSD (12 on) calls it `SO_REUSEPORT_LB`; macOS has no such thing (see [`another`]).
fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
    listener::bind_with(host, port, |socket| {
        #[cfg(target_os = "linux")]
        socket.set_reuse_port(true)?;
        #[cfg(target_os = "freebsd")]
        socket.set_reuse_port_lb(true)?;
        socket.set_nonblocking(true)
    })
}

/// The listener of a loop after the first: one of its own on `port` where the kernel
/// balances (see [`bind`]). On macOS, where the last socket bound with `SO_REUSEPORT` takes
/// every connection, the loops share the first listener instead (each a descriptor of it):
/// a new client wakes every loop, and one accepts it. `--threads` still counts loops.
#[cfg(any(target_os = "linux", target_os = "freebsd"))]
fn another(_first: &TcpListener, host: &str, port: u16) -> io::Result<TcpListener> {
    bind(host, port)
}

#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
fn another(first: &TcpListener, _host: &str, _port: u16) -> io::Result<TcpListener> {
    first.try_clone()
}
// ANCHOR_END: bind

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
/// Loop 0's task: waits for SIGINT or SIGTERM, and passes it on to every loop, its own
/// included, through their doorbells. (A signal reaches one thread; every loop must stop.)
async fn broadcast_signal(signals: Async<Signals>, server: Rc<Server>) {
    let signal =
        signals.read_with(|signals| signals.take().ok_or(io::ErrorKind::WouldBlock.into()));
    if let Ok(signal) = signal.await {
        // Every loop's listener first: a loop may take new clients until its doorbell rings.
        server.loops.listening.iter().for_each(listener::stop_accepting);
        log!("{signal}: shutting down: no new connections, finishing the ones in flight");
        server.loops.doorbells.iter().for_each(|doorbell| doorbell.wake());
    }
}

/// Every loop's task: once its doorbell rings (it carries nothing else), starts the loop's
/// graceful shutdown: its listener's task ends, idle connections end, busy ones send their
/// last answer with `Connection: close`.
async fn shut_down_on_wake(doorbell: Async<Arc<SelfPipe>>, server: Rc<Server>) {
    let rung = doorbell.read_with(|pipe| pipe.drain().ok_or(io::ErrorKind::WouldBlock.into()));
    if rung.await.is_ok() {
        server.shutdown.set();
    }
}
// ANCHOR_END: shutdown

/// Formats the `Date` header anew, once a second, for the loop's life.
async fn refresh_date(server: Rc<Server>) {
    loop {
        time::sleep(Duration::from_secs(1)).await;
        *server.date.borrow_mut() = date::now();
    }
}

/// Registers a descriptor of the loop's own with its reactor, or fails.
fn watch<T: AsFd>(descriptor: T) -> Async<T> {
    Async::new(descriptor).unwrap_or_else(|error| fail("register with the reactor", error))
}

/// Setup failed: a one-line error and exit status 1, as for a port in use.
fn fail(what: &str, error: io::Error) -> ! {
    log!("ch09-multicore: cannot {what}: {error}");
    std::process::exit(1);
}
