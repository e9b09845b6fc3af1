//! Sketch of chapter 3: an event loop. Chapter 2's loop becomes an `EventLoop` that knows
//! no HTTP: a `Handler` (an object that owns a socket) is registered with an `Interest`
//! under a `Token`, and the loop calls it back when its socket is ready. The handlers: the
//! listener, the signal pipe (SIGTERM: a graceful stop), and each `Connection`, which now
//! answers request after request (keep-alive), pipelined ones in order.
//!
//! Left out (`chapters/03-event-loop/src/` has them): a lingering close, running out of
//! descriptors, a bound on how long a graceful stop waits, a callback that panics.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::{thread, time::Duration};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::http::{self, date, response::write_response, response::Framing, Parse, Response};
use shared::{args::Config, buffer::Buffer, signals::Signals};
use shared::{files, listener, trace, upstream};

fn main() {
    let config = Config::from_args("ch03-sketch", &[]);
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
        None // only a connection ever waits to write
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
    stopping: bool,
    config: Config,
    stats: Stats,
}

impl EventLoop {
    fn new(config: Config) -> EventLoop {
        let (handlers, stats) = (BTreeMap::new(), Stats::default());
        EventLoop { handlers, next_token: 0, stopping: false, config, stats }
    }

    fn register(&mut self, handler: impl Handler + 'static, interest: Interest) {
        self.next_token += 1;
        self.handlers.insert(Token(self.next_token), (interest, Box::new(handler)));
    }

    /// One turn: wait until some registered socket is ready, then call back each that is.
    fn turn(&mut self) {
        let watched = self.handlers.iter().map(|(t, (i, h))| (*t, PollFd::new(h.as_fd(), *i)));
        let (tokens, mut fds): (Vec<Token>, Vec<PollFd>) = watched.unzip();
        trace!("poll: waiting on {} fds", fds.len());
        let _ = poll(&mut fds, PollTimeout::NONE); // an error (a signal): nothing is ready
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
            event_loop.register(Connection::new(stream), Interest::POLLIN);
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

/// Past this much unanswered, we stop reading a client: it pushes back. (More than the
/// longest request the parser takes.)
const MAX_RECEIVED: usize = 2 << 20;

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    /// The client shut its side (end of file): read no more, answer what came.
    peer_closed: bool,
    /// Our last answer said `Connection: close`: answer no more, close once it is sent.
    last: bool,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out) = (Buffer::new(), Buffer::new());
        Connection { stream, received, out, peer_closed: false, last: false }
    }

    /// Answers the next whole request received, if there is one.
    fn answer_next(&mut self, event_loop: &mut EventLoop) -> bool {
        let (response, framing) = match http::parse(&self.received) {
            Parse::Complete { request, consumed } => {
                let (config, stats) = (&event_loop.config, &event_loop.stats);
                let answer = (run_app(&request, config, stats), Framing::for_request(&request));
                self.received.consume(consumed); // answered: forget it
                answer
            }
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE),
            Parse::Incomplete => return false, // wait for the rest
        };
        self.respond(response, framing, event_loop);
        true
    }

    fn respond(&mut self, response: Response, mut framing: Framing, event_loop: &mut EventLoop) {
        // Keep the connection if the client asks, the answer allows, and we go on.
        framing.keep_alive &= !response.close && !event_loop.stopping;
        self.last = !framing.keep_alive;
        let chapter = event_loop.config.chapter;
        write_response(&mut self.out, &response, &framing, chapter, &date::now());
        event_loop.stats.requests_served += 1;
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
            Ok(count) => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return self.close(event_loop), // a reset: the client is gone
        }
        self.on_writable(event_loop, token)
    }

    /// Sends what the kernel takes; whenever all is sent, answers the next whole request
    /// (pipelined ones in order), until the socket is full or nothing is left to answer.
    fn on_writable(&mut self, event_loop: &mut EventLoop, _: Token) -> Next {
        loop {
            if self.out.is_empty() && (self.last || !self.answer_next(event_loop)) {
                break; // all sent, and nothing to answer now
            }
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break, // full
                Err(_) => return self.close(event_loop),                          // the client left
            }
        }
        if self.out.is_empty() && (self.last || self.peer_closed) {
            return self.close(event_loop); // nothing more to read, answer or send
        }
        let mut interest = Interest::empty();
        let reading = !self.peer_closed && !self.last && self.received.len() < MAX_RECEIVED;
        interest.set(Interest::POLLIN, reading);
        interest.set(Interest::POLLOUT, !self.out.is_empty());
        Some(interest)
    }

    fn is_idle(&self) -> bool {
        self.received.is_empty() && self.out.is_empty()
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

/// Asks the application what to do, and does it, waiting: still as in chapter 1, while
/// we sleep or read a slow disk here, no other client is served.
fn run_app(request: &http::Request, config: &Config, stats: &Stats) -> Response {
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
    match app::handle(request, &context) {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            thread::sleep(Duration::from_millis(ms));
            app::slept(ms)
        }
        Action::ReadFile { path } => {
            files::response(&path, files::load(&config.root, &path, config.fs_delay))
        }
        Action::Upstream { address, path_and_query } => {
            upstream::fetch_blocking(address, &path_and_query)
        }
    }
}
