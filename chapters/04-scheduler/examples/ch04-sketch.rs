//! Sketch of chapter 4: timers. The loop waits for time as well as for sockets: a handler
//! asks to be called back (`on_timer`) at an instant, and `poll` waits no longer than until
//! the first such instant. So `/sleep` no longer blocks: its answer waits for a timer while
//! the loop serves everyone else and watches the sleeper (one that leaves mid-wait is gone
//! at once). And timers end a client's time: the header, keep-alive and send timeouts.
//!
//! Left out (`chapters/04-scheduler/src/` has them): `/upstream/` without blocking
//! (`upstream.rs`), a lingering close, running out of descriptors, a bound on how long a
//! graceful stop waits, a callback that panics.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::http::{self, date, response::write_response, response::Framing, Parse, Response};
use shared::{args::Config, args::Extra, buffer::Buffer, signals::Signals};
use shared::{files, listener, trace, upstream};

fn main() {
    let config = Config::from_args("ch04-sketch", &[Extra::Timeouts]);
    if config.trace {
        trace::enable();
    }
    let signals = Signals::install(); // before the first line: SIGTERM may follow it at once
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut event_loop = EventLoop::new(config);
    event_loop.register(signals, Interest::POLLIN);
    event_loop.register(listener, Interest::POLLIN);
    while !event_loop.handlers.is_empty() {
        event_loop.turn(); // until a graceful stop is over; then exit, status 0
    }
}

/// Names one registration. Never reused: an old token names nothing.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Token(u64);

/// What a registration waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// What a callback says it waits for next, or `None` once it is done.
type Next = Option<Interest>;

/// What the loop calls back. It owns its socket (lent to `poll`), and says what it waits
/// for next, or `None` once it is done: the loop then drops it, which closes the socket.
trait Handler: AsFd {
    fn on_readable(&mut self, event_loop: &mut EventLoop, token: Token) -> Next;
    fn on_writable(&mut self, _: &mut EventLoop, _: Token) -> Next {
        None // only a connection ever waits to write,
    }
    fn on_timer(&mut self, _: &mut EventLoop, _: Token) -> Next {
        None // or sets a timer (see `EventLoop::timers`)
    }
    /// Nothing in flight: a graceful stop need not wait for it.
    fn is_idle(&self) -> bool {
        true
    }
}

/// The loop, and what its handlers share.
struct EventLoop {
    /// In token order. `dyn Handler`: a listener, a signal pipe, connections, as one trait.
    handlers: BTreeMap<Token, (Interest, Box<dyn Handler>)>,
    next_token: u64,
    /// Whom to call back when (`on_timer`), soonest first. A handler looks whether its time
    /// has really come, so a timer never needs cancelling: it may fire for nothing.
    timers: BTreeSet<(Instant, Token)>,
    stopping: bool,
    config: Config,
    stats: Stats,
}

impl EventLoop {
    fn new(config: Config) -> EventLoop {
        let (handlers, timers, stats) = (BTreeMap::new(), BTreeSet::new(), Stats::default());
        EventLoop { handlers, next_token: 0, timers, stopping: false, config, stats }
    }

    fn register(&mut self, handler: impl Handler + 'static, interest: Interest) {
        self.next_token += 1;
        self.handlers.insert(Token(self.next_token), (interest, Box::new(handler)));
    }

    /// One turn: wait until some registered socket is ready or the first timer is due, then
    /// call back each that is.
    fn turn(&mut self) {
        let watched = self.handlers.iter().map(|(t, (i, h))| (*t, PollFd::new(h.as_fd(), *i)));
        let (tokens, mut fds): (Vec<Token>, Vec<PollFd>) = watched.unzip();
        // No longer than until the first timer, in whole milliseconds rounded up: rounded
        // down, the loop would wake just before it is due, find nothing to do, and spin.
        let first = self.timers.first().map(|(at, _)| at.saturating_duration_since(Instant::now()));
        let ms = first.map(|wait| wait.as_nanos().div_ceil(1_000_000));
        let timeout = ms.map_or(PollTimeout::NONE, |ms| ms.try_into().unwrap_or(PollTimeout::MAX));
        trace!("poll: waiting on {} fds, timeout {ms:?} ms", fds.len());
        let _ = poll(&mut fds, timeout); // an error (a signal): nothing is ready
        let events = fds.iter().map(|fd| fd.revents().unwrap_or(Interest::empty()));
        let ready: Vec<(Token, Interest)> = tokens.into_iter().zip(events).collect();
        drop(fds); // it borrows the sockets
        self.stats.loop_turns += 1;
        for (token, events) in ready.into_iter().filter(|(_, events)| !events.is_empty()) {
            self.call(token, |handler, event_loop| match events {
                Interest::POLLOUT => handler.on_writable(event_loop, token),
                _ => handler.on_readable(event_loop, token), // or an error: a read meets it
            });
        }
        // Then the timers that are due, soonest first. One set meanwhile is due after `now`.
        let now = Instant::now();
        while let Some((at, token)) = self.timers.pop_first() {
            if at > now {
                self.timers.insert((at, token)); // not due yet: it stays first
                break;
            }
            self.call(token, |handler, event_loop| handler.on_timer(event_loop, token));
        }
    }

    /// Calls back `token`'s handler, out of the loop while it runs so that it may change the
    /// loop (the listener registers clients); kept after, unless it says it is done.
    fn call(&mut self, token: Token, callback: impl FnOnce(&mut dyn Handler, &mut Self) -> Next) {
        let Some((_, mut handler)) = self.handlers.remove(&token) else { return }; // closed
        if let Some(interest) = callback(handler.as_mut(), self) {
            self.handlers.insert(token, (interest, handler));
        }
    }
}

/// The listener: readable means clients are waiting to be accepted.
impl Handler for TcpListener {
    fn on_readable(&mut self, event_loop: &mut EventLoop, _: Token) -> Next {
        listener::accept_all(self, |stream, _| {
            // Writable at once: its first callback sets its first timer (it may never send).
            event_loop.register(Connection::new(stream), Interest::POLLIN | Interest::POLLOUT);
            event_loop.stats.connections_open += 1;
        });
        Some(Interest::POLLIN)
    }
}

/// SIGINT or SIGTERM came (a byte in the signal pipe): stop gracefully. An ordinary
/// callback, not the signal handler, so it may do anything.
impl Handler for Signals {
    fn on_readable(&mut self, event_loop: &mut EventLoop, _: Token) -> Next {
        event_loop.stopping = true;
        // Close what has nothing in flight, the listener too (new clients are refused),
        // and this pipe; the loop ends when the busy connections have finished.
        event_loop.handlers.retain(|_, (_, handler)| !handler.is_idle());
        None
    }
}

/// A client that sends faster than we answer fills this much of our memory, no more.
const MAX_RECEIVED: usize = 2 << 20; // more than the longest request the parser takes

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    /// The client shut its side (end of file): read no more, answer what came.
    peer_closed: bool,
    /// Our last answer said `Connection: close`: answer no more, close once it is sent.
    last: bool,
    /// `received` may hold a whole request that is not answered yet.
    pending: bool,
    /// An answer waiting for a timer (a `/sleep`): when it is due, and its framing.
    waiting: Option<(Instant, Response, Framing)>,
    /// The client's time counts from here (connect, a head begun, an answer given or
    /// taken); it has had an answer (idle, it is kept alive); the timer asked for it.
    since: Instant,
    kept_alive: bool,
    armed: Option<Instant>,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out, since) = (Buffer::new(), Buffer::new(), Instant::now());
        let (peer_closed, last, pending, kept_alive) = (false, false, false, false);
        let (waiting, armed) = (None, None);
        Connection {
            stream,
            received,
            out,
            peer_closed,
            last,
            pending,
            waiting,
            since,
            kept_alive,
            armed,
        }
    }

    /// Answers the next whole request received, if there is one.
    fn answer_next(&mut self, event_loop: &mut EventLoop) {
        let (response, framing) = match http::parse(&self.received) {
            Parse::Complete { request, consumed } => {
                let (config, stats) = (&event_loop.config, &event_loop.stats);
                let ((response, wait), framing) =
                    (run_app(&request, config, stats), Framing::for_request(&request));
                self.received.consume(consumed); // answered, or under way: forget it
                if !wait.is_zero() {
                    self.waiting = Some((Instant::now() + wait, response, framing));
                    return; // its answer waits for a timer, and those behind it with it
                }
                (response, framing)
            }
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE),
            Parse::Incomplete => return self.pending = false, // wait for the rest
        };
        self.respond(response, framing, event_loop);
    }

    fn respond(&mut self, response: Response, mut framing: Framing, event_loop: &mut EventLoop) {
        // Keep the connection if the client asks, the answer allows, and we go on.
        framing.keep_alive &= !response.close && !event_loop.stopping;
        self.last = !framing.keep_alive;
        let chapter = event_loop.config.chapter;
        write_response(&mut self.out, &response, &framing, chapter, &date::now());
        event_loop.stats.requests_served += 1;
        (self.since, self.kept_alive) = (Instant::now(), true); // it has an answer to take
    }

    /// When it wants its timer: when its answer is due, or when the client's time is up.
    /// (None of the client's time passes while its request waits: that time is ours.)
    fn wake_at(&self, config: &Config) -> Instant {
        let timeout = match &self.waiting {
            Some((at, ..)) => return *at,
            None if !self.out.is_empty() => config.send_timeout, // it must take our answer
            None if self.received.is_empty() && self.kept_alive => config.keep_alive_timeout,
            None => config.header_timeout, // new, or a head begun: it must come in time
        };
        self.since + timeout
    }

    fn close(&mut self, event_loop: &mut EventLoop) -> Next {
        event_loop.stats.connections_open -= 1;
        None // done: the loop drops it, which closes the socket
    }
}

impl Handler for Connection {
    /// Bytes came, or end of file, or an error. One read: if more is waiting, `poll` says
    /// so again next turn.
    fn on_readable(&mut self, event_loop: &mut EventLoop, token: Token) -> Next {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => self.peer_closed = true,
            Ok(count) => {
                if self.received.is_empty() {
                    self.since = Instant::now(); // a head begins: its time counts from here
                }
                self.received.extend_from_slice(&chunk[..count]);
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return self.close(event_loop), // a reset: the client is gone, waits too
        }
        self.pending = true;
        self.on_writable(event_loop, token)
    }

    /// Once the last answer is sent, answers the next whole request (one a turn, so that
    /// pipelined requests go in order and other clients get their turns), then sends what
    /// the kernel takes now; `poll` says when it takes more.
    fn on_writable(&mut self, event_loop: &mut EventLoop, token: Token) -> Next {
        let waiting = self.waiting.is_some();
        if self.out.is_empty() && self.pending && !self.last && !waiting {
            self.answer_next(event_loop);
        }
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => (self.out.consume(count), self.since = Instant::now()).1,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => return self.close(event_loop), // the client left
            }
        }
        if self.out.is_empty() && !waiting && (self.last || self.peer_closed && !self.pending) {
            return self.close(event_loop); // nothing more to read, answer or send
        }
        let mut interest = Interest::empty();
        let reading = !self.peer_closed && !self.last && self.received.len() < MAX_RECEIVED;
        interest.set(Interest::POLLIN, reading);
        // Writable again next turn with output left, or if another request may be in.
        interest
            .set(Interest::POLLOUT, !self.out.is_empty() || self.pending && !self.last && !waiting);
        // A timer for when it wants one, unless one comes sooner already.
        let at = self.wake_at(&event_loop.config);
        if self.armed.is_none_or(|armed| at < armed) {
            event_loop.timers.insert((at, token));
            self.armed = Some(at);
        }
        Some(interest) // empty while it waits with its buffer full: `poll` still sees a reset
    }

    /// Its timer: its answer is due, or the client's time is up.
    fn on_timer(&mut self, event_loop: &mut EventLoop, token: Token) -> Next {
        self.armed = None;
        if self.wake_at(&event_loop.config) > Instant::now() {
            // Early: the time moved on since the timer was set; `on_writable` sets another.
        } else if let Some((_, response, framing)) = self.waiting.take() {
            self.respond(response, framing, event_loop); // the wait is over
        } else if self.out.is_empty() && !self.received.is_empty() {
            let too_slow = Response { close: true, ..Response::error(408, "too slow") };
            self.respond(too_slow, Framing::CLOSE, event_loop); // a head begun, never ended
        } else {
            return self.close(event_loop); // idle too long, or it takes none of our answer
        }
        self.on_writable(event_loop, token)
    }

    fn is_idle(&self) -> bool {
        self.received.is_empty() && self.out.is_empty() && self.waiting.is_none()
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

/// Asks the application what to do: the answer, and how long it waits before it is sent.
/// New: `/sleep` waits for a timer, not here. A slow disk or upstream still blocks.
fn run_app(request: &http::Request, config: &Config, stats: &Stats) -> (Response, Duration) {
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
    let response = match app::handle(request, &context) {
        Action::Respond(response) => response,
        Action::Sleep { ms } => return (app::slept(ms), Duration::from_millis(ms)),
        Action::ReadFile { path } => {
            files::response(&path, files::load(&config.root, &path, config.fs_delay))
        }
        Action::Upstream { address, path_and_query } => {
            upstream::fetch_blocking(address, &path_and_query)
        }
    };
    (response, Duration::ZERO)
}
