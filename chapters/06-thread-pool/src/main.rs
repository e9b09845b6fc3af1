//! Chapter 6: a thread pool, so that a slow disk holds up only the requests that read it.
//!
//! As in chapter 4, an [`EventLoop`] (in `event_loop.rs`) calls our callbacks when their
//! descriptor is ready or their timer is due: the listener (accept clients), each
//! [`Connection`] (requests, keep-alive, pipelining, timeouts), and the signal pipe (shut
//! down gracefully).
//!
//! Since chapter 5 (`promise.rs`): a `Deferred` that settles once, and the `Promise` it
//! hands out, on which the next step is chained with `then`, `and_then` and `catch`. The
//! steps run from the loop's ready queue, once per turn, after the sockets and the timers.
//! The loop also turns a timer into a promise, `delay`. With them, chapter 4's callbacks
//! become chains:
//!
//! - `/sleep` is `delay(ms).then(slept)` (see `run_app`).
//! - `/upstream/`, chapter 4's nested callbacks, is one flat chain, connect, send, read,
//!   raced against a 5 s `delay` for its 504 (`upstream.rs`).
//! - Either way the chain's last step hands the answer to its connection, through the
//!   loop: a promise callback holds no connection, only its token.
//!
//! New here: files no longer block. Chapter 5 still called `files::load` right here in the
//! loop, so a slow disk (`--fs-delay-ms`) held everyone up: `poll` cannot wait for a file
//! (to Linux a regular file is always "ready", and then `read` blocks anyway). Now:
//!
//! - A `ThreadPool` (`thread_pool.rs`) of `--workers` threads (default 4, as libuv's) runs
//!   the blocking calls, fed through a queue. A finished job comes back through a
//!   completion queue, and wakes the loop through a `Waker` (`waker.rs`): a descriptor
//!   registered like any socket. The job's promise is settled on the loop thread.
//! - On top of it, `fs.rs` is a non-blocking filesystem: its `open` and `read` return
//!   promises, so `/files/` is one more chain, `open.and_then(read).then(files::response)`.
//! - Limits: at most `--queue-limit` jobs wait for a worker; past that a file request gets
//!   503 at once. A job that panics costs its request a 500, and its worker nothing.
//!
//! The loop itself stays single-threaded, and `event_loop.rs` has not changed: the workers
//! touch none of its state, and the pool plugs in as one more registration.

mod connection;
mod event_loop;
mod fs;
mod poll_backend;
mod promise;
mod signals;
mod thread_pool;
mod timers;
mod upstream;
mod waker;

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::process::exit;
use std::time::{Duration, Instant};

use nix::errno::Errno;

use shared::app::{self, Action, Context, Stats};
use shared::args::{Config, Extra};
use shared::http::{self, date, Response};
use shared::{files, listener, trace};

use connection::Connection;
use event_loop::{EventLoop, Handler, Interest, SharedState, Token};
use fs::{FileError, Filesystem, Opening};
use promise::{Abandoned, Promise};
use signals::Signals;
use timers::TimerId;
use upstream::Fetch;

/// How long a graceful shutdown waits for the responses in flight.
const GRACE_PERIOD: Duration = Duration::from_secs(5);

// ANCHOR: server
/// What the callbacks share. The loop lends it to each of them as `&mut Server`.
struct Server {
    config: Config,
    /// New in chapter 6: file work, done on the thread pool (see `fs.rs`).
    filesystem: Filesystem,
    /// The listener's registration, until shutdown closes it.
    listener: Option<Token>,
    /// Out of file descriptors: the listener waits for nothing until a connection closes
    /// (or, with none open, until a timer says to try again).
    accept_paused: bool,
    /// Connections waiting for their next request, with nothing half-done: a graceful
    /// shutdown closes these at once. A token left here by a connection the loop closed
    /// after a panic is harmless: its generation is stale, so deregistering it does nothing.
    idle: HashSet<Token>,
    requests_served: u64,
    shutting_down: bool,
    /// The `Date` header's value, formatted once a second by a timer rather than for every
    /// response (see `Timer::RefreshDate`).
    date: String,
    /// A `Timer::TrimIdleConnections` is queued: never more than one at a time.
    trim_queued: bool,
}
// ANCHOR_END: server

// ANCHOR: timer
/// What each of our timers is for: the value the loop hands back when one fires. Most are
/// set for one connection and go to its `Connection::on_timer`; the first three are the
/// server's own and go to `Server::on_timer` below. New in chapter 5, promise callbacks
/// post two of them as messages (see `event_loop::Outbox`): `Answer` and `Wait`. `--trace`
/// names each as it fires: `timer #12 fired: Deadline for token 3.1`.
#[derive(Clone, Debug)]
enum Timer {
    /// The server's, every second: format the `Date` header anew.
    RefreshDate,
    /// The server's: out of descriptors a while ago, with no connection of ours to close
    /// and free one. Try accepting again.
    ResumeAccepting,
    /// The server's idle callback: the loop has nothing better to do, so the idle
    /// connections may give back the buffers they keep for their next request.
    TrimIdleConnections,
    /// A connection's, due at once after `accept`: its first callback, in which it sets its
    /// own deadline timer (see `accept_all`).
    Accepted,
    /// A connection's: it has run out of time, idle or in the middle of a request head.
    Deadline,
    /// A connection's: the answer its request waited for (a 502 or 504 included), posted by
    /// the last step of the request's promise chain (see `run_app`).
    Answer(Answer),
    /// An upstream socket's: a step of the fetch waits for the socket to be ready for this.
    Wait(Interest),
    /// A connection's idle callback: give back your buffers (see `TrimIdleConnections`).
    TrimBuffers,
}
// ANCHOR_END: timer

/// An answer on its way to a connection inside a `Timer`. `--trace` prints it short: the
/// status and the size, not the whole body.
#[derive(Clone)]
pub struct Answer(pub Response);

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (status, size) = (self.0.status, self.0.body.as_bytes().len());
        write!(f, "status {status}, {size} bytes")
    }
}

/// A promise whose Deferred was dropped unsettled becomes this answer. Only a chain that
/// was stopped ends so (its client had left, or it lost a race), and nobody then reads
/// the answer; should one ever reach a client, it is an honest "we lost track of it".
impl From<Abandoned> for Response {
    fn from(abandoned: Abandoned) -> Response {
        Response::error(500, &abandoned.to_string())
    }
}

// ANCHOR: file_errors
/// New in chapter 6: what a file request answers when its promise rejects.
impl From<FileError> for Response {
    fn from(error: FileError) -> Response {
        match error {
            // ANCHOR: busy
            // Every worker is busy and `--queue-limit` jobs already wait for one. Queueing
            // more would only make all of them wait longer, and cost memory without limit:
            // say "not now" at once instead, and let the client try again later.
            FileError::Refused(_) => {
                Response::error(503, "too many file requests are waiting for the disk")
            }
            // ANCHOR_END: busy
            // ANCHOR: panicked
            // The job panicked on its worker (the panic's message is on stderr). The worker
            // caught it and lives on; this request alone gets a 500.
            FileError::Panicked(panicked) => {
                trace!("fs: {panicked}");
                Response::error(500, "reading the file failed")
            }
            // ANCHOR_END: panicked
            // No such file, not a file, unreadable: the answers the blocking chapters give.
            FileError::Io(error) => files::error_response(&error),
        }
    }
}
// ANCHOR_END: file_errors

fn main() {
    let config = Config::from_args("ch06-thread-pool", &[Extra::Timeouts, Extra::Workers]);
    if config.trace {
        trace::enable();
    }
    // Before the listening line: whoever reads that line may send SIGTERM at once, and
    // must find our handler in place, not the default one that kills the process.
    let signals = Signals::install().unwrap_or_else(|error| fail("signal handlers", error));
    // Non-blocking: `accept` answers `WouldBlock` instead of waiting when nobody is there.
    let listener = listener::listen(&config, true);

    let mut event_loop = EventLoop::new();
    // ANCHOR: start_the_pool
    // New in chapter 6: the workers. From now on a signal may be delivered to one of them
    // rather than to the loop's thread; the self-pipe does not mind which thread writes
    // its byte, and the loop wakes for the byte all the same.
    let filesystem = Filesystem::new(config.workers, config.queue_limit, event_loop.ready())
        .unwrap_or_else(|error| fail("start the thread pool", error));
    // ANCHOR_END: start_the_pool
    let mut server = Server {
        config,
        filesystem,
        listener: None,
        accept_paused: false,
        idle: HashSet::new(),
        requests_served: 0,
        shutting_down: false,
        date: date::now(),
        trim_queued: false,
    };
    // ANCHOR: wiring
    // ANCHOR: date_timer
    // Formatting the date for every response is wasted work: it changes once a second. So
    // does our copy, by a periodic timer, as nginx and hyper do. (The date is wall-clock
    // time, as the header must be; *when* to refresh it is measured on the monotonic
    // clock, like every timer. It is the one timer always pending: the baseline of
    // `timers_pending` in `/stats`.)
    event_loop.add_periodic_timer(Duration::from_secs(1), Timer::RefreshDate);
    // ANCHOR_END: date_timer
    let fd = signals.as_raw_fd();
    event_loop
        .register(fd, Interest::READABLE, signals)
        .unwrap_or_else(|error| fail("register the signal pipe", error));
    let fd = listener.as_raw_fd();
    let token = event_loop
        .register(fd, Interest::READABLE, Listener { listener })
        .unwrap_or_else(|error| fail("register the listener", error));
    server.listener = Some(token);
    // ANCHOR: waker_registration
    // New in chapter 6: the thread pool's waker, registered like any socket. It is
    // readable once jobs have finished, and its handler settles their promises (see
    // `Filesystem::settle_finished`), all that have finished, however many share one
    // wake-up. None is lost to a job that finishes mid-drain (see
    // `ThreadPool::drain_completions`).
    let fd = server.filesystem.waker_fd();
    event_loop
        .register(fd, Interest::READABLE, server.filesystem.completions())
        .unwrap_or_else(|error| fail("register the thread pool's waker", error));
    // ANCHOR_END: waker_registration

    // ANCHOR: run_and_stop
    // Runs until the signal callback calls `stop`...
    if let Err(error) = event_loop.run(&mut server) {
        fail("poll", error);
    }
    // ...then lets the connections still open finish (the waker stays registered, so
    // file requests in flight get their answers)...
    drain(&mut event_loop, &mut server);
    // ...then stops the thread pool: jobs not started yet are dropped, running ones
    // finish, and the workers are joined (see `ThreadPool::shutdown`).
    server.filesystem.shutdown();
    // ANCHOR_END: run_and_stop
    // ANCHOR_END: wiring
}

// ANCHOR: stats
impl Server {
    /// The numbers `/stats` shows. The open connections are the registrations whose
    /// handler is a `Connection`: not the signal pipe, not the listener, and not (new in
    /// chapter 4) the sockets we open to the upstream, nor (new in chapter 6) the thread
    /// pool's waker.
    /// Asking the loop, rather than keeping a count of our own, stays right even when the
    /// loop closes a connection on its own, after a panic.
    fn stats(&self, event_loop: &EventLoop<Server>) -> Stats {
        Stats {
            connections_open: event_loop.count::<Connection>() as u64,
            requests_served: self.requests_served,
            loop_turns: event_loop.turns(),
            timers_pending: event_loop.timers_pending() as u64,
            // New in chapter 6: waiting for a worker, and on one.
            jobs_queued: self.filesystem.queued() as u64,
            jobs_running: self.filesystem.running() as u64,
        }
    }

    /// A connection has closed (and with it, a descriptor is free again).
    fn connection_closed(&mut self, event_loop: &mut EventLoop<Server>, token: Token) {
        self.idle.remove(&token);
        self.resume_accepting(event_loop);
    }

    fn resume_accepting(&mut self, event_loop: &mut EventLoop<Server>) {
        if self.accept_paused {
            if let Some(listener) = self.listener {
                trace!("accept: resuming");
                let _ = event_loop.set_interest(listener, Interest::READABLE);
            }
            self.accept_paused = false;
        }
    }
}
// ANCHOR_END: stats

// ANCHOR: server_timers
/// The server's own timers and idle callback. (The connections' go to `Connection::on_timer`.)
impl SharedState for Server {
    type Timer = Timer;

    fn on_timer(&mut self, event_loop: &mut EventLoop<Server>, timer: Timer) {
        match timer {
            Timer::RefreshDate => {
                self.date = date::now();
                // Once a second is also often enough to let idle connections give memory
                // back. Nothing needs it soon, so it waits until the loop has nothing to
                // do: under load that is never, and the buffers are reused instead.
                if !self.trim_queued {
                    self.trim_queued = true;
                    event_loop.add_idle(Timer::TrimIdleConnections);
                }
            }
            Timer::ResumeAccepting => self.resume_accepting(event_loop),
            Timer::TrimIdleConnections => {
                self.trim_queued = false;
                // The loop owns the connections and lends one only to its own callbacks,
                // so we ask it for one more each: an idle callback per idle connection.
                // (Why not have each connection queue its own, as it goes idle? A queued
                // idle callback waits for an idle turn, which under load may never come;
                // one per connection would pile up as connections come and go. One for
                // the server at a time cannot.)
                for &token in &self.idle {
                    event_loop.add_idle_for(token, Timer::TrimBuffers);
                }
            }
            Timer::Accepted
            | Timer::Deadline
            | Timer::Answer(_)
            | Timer::Wait(_)
            | Timer::TrimBuffers => {} // a connection's or a socket's: never sent here
        }
    }
}
// ANCHOR_END: server_timers

// ANCHOR: accept
/// The listening socket, as a handler: readable means clients are waiting to be accepted.
struct Listener {
    listener: TcpListener,
}

impl Handler<Server> for Listener {
    fn on_readable(
        &mut self, event_loop: &mut EventLoop<Server>, token: Token, server: &mut Server,
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
                    Ok(token) => {
                        trace!("accept: client {peer} (fd {fd}, token {token})");
                        // Its header timeout runs from now, even if it never sends a byte.
                        // A connection sets its own timers, but only from its callbacks,
                        // and it has had none yet: here is one, a timer due at once.
                        event_loop.add_timer_for(token, Duration::ZERO, Timer::Accepted);
                    }
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
                    // Try again in 100 ms: a timer, where chapter 3 had to block.
                    event_loop.add_timer(Duration::from_millis(100), Timer::ResumeAccepting);
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
        &mut self, event_loop: &mut EventLoop<Server>, _token: Token, server: &mut Server,
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
        // 2. Close the idle keep-alive connections: nothing is in flight on them. (Their
        //    deadline timers are left to fire into nothing: the loop skips a timer whose
        //    registration has ended, and we are on our way out.)
        for token in server.idle.drain() {
            event_loop.deregister(token);
        }
        // 3. The busy ones answer their current request with `Connection: close`, and
        //    close when it is sent (see `try_respond` and `after_event`).
        event_loop.stop();
    }
}

/// The second half: turn the loop until every connection has closed, or the grace
/// period is over. Then `main` returns and the process exits with status 0. Each turn
/// runs the timers too, so a `/sleep` that ends within the grace period is answered; the
/// `Date` timer, which never ends, does not keep us here.
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
/// What `run_app` made of a request.
enum Reply {
    /// The answer, ready now.
    Now(Response),
    /// The answer will come later, when its promise settles. The connection waits.
    Later(Effect),
}

/// What a request is waiting for. Each holds what it takes to stop it early.
enum Effect {
    /// `/sleep`: the timer behind its `delay`.
    Sleep(TimerId),
    /// `/upstream/`: a fetch in flight, with its own 504 timer (see `upstream.rs`).
    Upstream(Fetch),
    /// `/files/`: new in chapter 6, the file's first job on the thread pool (see `fs.rs`).
    ReadFile(Opening),
}

impl Effect {
    /// Stops whatever is left of it: the client is gone, or the answer is in and the loser
    /// of a race is still running. Stopping what has already finished does nothing.
    fn cancel(&self, event_loop: &mut EventLoop<Server>) {
        match self {
            Effect::Sleep(timer) => {
                event_loop.cancel_timer(*timer);
            }
            Effect::Upstream(fetch) => fetch.abandon(event_loop),
            Effect::ReadFile(opening) => opening.abandon(),
        }
    }

    // ANCHOR: ends_on_half_close
    /// Whether a client that shuts its sending side (a half-close) while this waits is
    /// taken to have left, and the effect cancelled, as `Connection::after_event` does for
    /// every effect of chapter 5.
    ///
    /// New in chapter 6, a file is the exception. Chapter 5 read it at once, so a client
    /// that half-closed right after asking got its file; it still does, now that the file
    /// comes from the pool. Its wait is one job or two, not an upstream's seconds, and
    /// nginx, too, serves a static file without asking whether the client is still there.
    /// If it has left, the answer's write fails and the connection closes then.
    fn ends_on_half_close(&self) -> bool {
        !matches!(self, Effect::ReadFile(_))
    }
    // ANCHOR_END: ends_on_half_close
}

/// Asks the application what to do, and does it. As in chapter 4, `/sleep` and
/// `/upstream/` do not block. New in chapter 5, they start their work as a promise chain,
/// a delay or a fetch, and return at once with `Reply::Later`; when the chain's answer is
/// in, the loop calls the connection back, and meanwhile it serves everyone else. New in
/// chapter 6, files do not block either: their blocking calls go to the thread pool.
fn run_app(
    request: &http::Request, config: &Config, filesystem: &Filesystem, stats: &Stats,
    event_loop: &mut EventLoop<Server>, token: Token,
) -> Reply {
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
    match app::handle(request, &context) {
        Action::Respond(response) => Reply::Now(response),
        // ANCHOR: sleep
        Action::Sleep { ms } => {
            // Not `thread::sleep`, which stopped the whole server: a promise that the loop
            // resolves when the time is up, and then one step, the answer.
            let (timer, slept) = event_loop.delay(Duration::from_millis(ms));
            let answer = slept.then(move |()| app::slept(ms));
            answer_later(Effect::Sleep(timer), answer, event_loop, token)
        }
        // ANCHOR_END: sleep
        // ANCHOR: read_file
        // New in chapter 6: not `files::load`, which blocked the whole server for as long
        // as the disk took. Two jobs for the thread pool instead, each a promise: open,
        // then read. Meanwhile the loop serves everyone else, and this request waits in
        // line like a `/sleep`. A failure at either step (404, 500, or 503 when the pool
        // is full) skips the rest and becomes the answer (see `From<FileError>`).
        Action::ReadFile { path } => {
            let delay = config.fs_delay;
            let (opening, opened) = filesystem.open(&config.root, &path, delay);
            let filesystem = filesystem.clone(); // for the step below, which runs later
            let answer = opened
                .and_then(move |(file, length)| filesystem.read(file, length, delay))
                .then(move |contents| files::response(&path, Ok(contents)));
            answer_later(Effect::ReadFile(opening), answer, event_loop, token)
        }
        // ANCHOR_END: read_file
        Action::Upstream { address, path_and_query } => {
            match upstream::fetch(event_loop, address, &path_and_query) {
                Ok((fetch, answer)) => {
                    answer_later(Effect::Upstream(fetch), answer, event_loop, token)
                }
                // It failed before it began (no socket, or refused on the spot): answer now.
                Err(response) => Reply::Now(response),
            }
        }
    }
}

// ANCHOR: answer_later
/// The last step of every chain: once `answer` settles, hand the response to the
/// connection `token`, which waits meanwhile.
///
/// The step runs from the ready queue, with nothing borrowed, so it cannot call the
/// connection: the loop owns the connections and lends one out only to its own callbacks.
/// So the step keeps the connection's token and the loop's outbox, and posts the answer
/// there; at the end of the turn the loop hands it to `Connection::on_timer`. (Sharing the
/// connection through an `Rc` instead would invite a cycle: a connection that keeps its
/// chain alive, whose last step keeps the connection alive, and neither ever freed.) If
/// the client has left by then, its token names nothing any more: the loop skips it.
fn answer_later(
    effect: Effect, answer: Promise<Response, Response>, event_loop: &EventLoop<Server>,
    token: Token,
) -> Reply {
    let outbox = event_loop.outbox();
    answer.on_settled(move |outcome| {
        // A rejection is an answer too (see `From<Abandoned> for Response`).
        let response = outcome.unwrap_or_else(|error| error);
        outbox.post(token, Timer::Answer(Answer(response)));
    });
    Reply::Later(effect)
}
// ANCHOR_END: answer_later
// ANCHOR_END: run_app
