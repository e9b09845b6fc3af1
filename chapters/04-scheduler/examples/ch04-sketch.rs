//! Sketch of chapter 4: timers. A connection may ask to be called back at an instant, and
//! `poll` waits no longer than until the soonest: the loop waits for time as well as for
//! sockets. So `/sleep` no longer blocks (its answer is held for a timer while the others
//! are served), and a client's time can run out: the header timeout (408, or a close).
//!
//! Left out (`chapters/04-scheduler/src/` has them): timers kept in order (`timers.rs`;
//! here the loop looks at every connection's), the keep-alive and send timeouts,
//! `/upstream/` without blocking; and sketch 3's `Handler`s, keep-alive and graceful stop.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::http::{self, date, response::write_response, response::Framing, Response};
use shared::{args::Config, args::Extra, blocking, buffer::Buffer, listener, trace};

fn main() {
    let config = Config::from_args("ch04-sketch", &[Extra::Timeouts]);
    if config.trace {
        trace::enable();
    }
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut connections: Vec<Connection> = Vec::new();
    let mut stats = Stats::default();
    loop {
        // Say what we wait for: clients on the listener, and what each connection needs.
        let mut fds = vec![PollFd::new(listener.as_fd(), Interest::POLLIN)];
        fds.extend(connections.iter().map(|c| PollFd::new(c.stream.as_fd(), c.interest())));
        // And for how long: until the soonest timer, in whole milliseconds rounded up.
        // Rounded down, the loop would wake just before it is due, find nothing, and spin.
        let soonest = connections.iter().filter_map(|c| c.timer).min();
        let wait = soonest.map(|at| at.saturating_duration_since(Instant::now()));
        let ms = wait.map(|wait| wait.as_nanos().div_ceil(1_000_000));
        let timeout = ms.map_or(PollTimeout::NONE, |ms| ms.try_into().unwrap_or(PollTimeout::MAX));
        trace!("poll: waiting on {} fds, timeout {ms:?} ms", fds.len());
        let _ = poll(&mut fds, timeout); // an error (a signal): nothing is ready
        let ready: Vec<_> = fds.iter().map(|f| f.revents().unwrap_or(Interest::empty())).collect();
        stats.loop_turns += 1;
        // Do what is ready, and what is due (an error counts as ready: a read meets it).
        for (connection, events) in connections.iter_mut().zip(ready[1..].iter().copied()) {
            if !events.is_empty() || connection.timer.is_some_and(|at| at <= Instant::now()) {
                connection.on_events(events, &config, &mut stats);
            }
        }
        if ready[0].contains(Interest::POLLIN) {
            let connection =
                |stream| Connection::new(stream, Instant::now() + config.header_timeout);
            listener::accept_all(&listener, |stream, _| connections.push(connection(stream)));
        }
        // Forget the connections that are done: dropping one closes its socket.
        connections.retain(|connection| !connection.done);
        stats.connections_open = connections.len() as u64;
    }
}

/// What a socket waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    done: bool,
    /// When to call it back: then its answer (a `/sleep`'s), `held` until then, is due; or,
    /// before it has one, its time to send the request is up.
    timer: Option<Instant>,
    held: bool,
}

impl Connection {
    fn new(stream: TcpStream, timer: Instant) -> Connection {
        let (received, out, timer) = (Buffer::new(), Buffer::new(), Some(timer));
        Connection { stream, received, out, done: false, timer, held: false }
    }

    /// Bytes came, or end of file, or an error. One read: if more is waiting, `poll` says
    /// so again next turn.
    fn on_readable(&mut self, config: &Config, stats: &mut Stats) {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(count) if count > 0 => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            _ => return self.done = true, // end of file or a reset: the client is gone
        }
        // A whole request: answer it (with `Connection: close`: one request a connection).
        // New: the answer to a `/sleep` is held until its timer.
        let (held, timer) = (&mut self.held, &mut self.timer);
        let app = |request: &http::Request| {
            let (response, wait) = run_app(request, config, stats);
            if !wait.is_zero() {
                (*held, *timer) = (true, Some(Instant::now() + wait));
            }
            response
        };
        if http::answer(&mut self.received, &mut self.out, config.chapter, false, app).is_some() {
            stats.requests_served += 1;
            self.on_writable(); // most answers fit in the socket at once
        }
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest.
    fn on_writable(&mut self) {
        while !self.held && !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break, // the client left
            }
        }
        self.done = !self.held; // all sent: close
    }

    /// Its timer: the held answer is due; or, with none, the client's time is up.
    fn on_timer(&mut self, config: &Config) {
        if !std::mem::take(&mut self.held) && !self.received.is_empty() && self.out.is_empty() {
            let too_slow = Response::error(408, "too slow"); // a request begun, never ended
            write_response(&mut self.out, &too_slow, &Framing::CLOSE, config.chapter, &date::now());
        }
        self.timer = None;
        self.on_writable(); // the answer, or the 408; or, with nothing to send, close
    }
}

/// What the loop calls.
impl Connection {
    /// Read until the request is in, then write until its answer is out: unless the
    /// answer is held, and waits for its timer.
    fn interest(&self) -> Interest {
        match (self.held, self.out.is_empty()) {
            (true, _) => Interest::empty(),
            (false, true) => Interest::POLLIN,
            (false, false) => Interest::POLLOUT,
        }
    }

    /// What `poll` reported, or nothing: its timer is due.
    fn on_events(&mut self, events: Interest, config: &Config, stats: &mut Stats) {
        if events.is_empty() {
            self.on_timer(config);
        } else if events.contains(Interest::POLLOUT) {
            self.on_writable();
        } else {
            self.on_readable(config, stats);
        }
    }
}

/// Asks the application what to do: the answer, and how long it is held before it is
/// sent. New: `/sleep` waits for a timer, not here. A slow disk or upstream still blocks.
fn run_app(request: &http::Request, config: &Config, stats: &Stats) -> (Response, Duration) {
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
    match app::handle(request, &context) {
        Action::Sleep { ms } => (app::slept(ms), Duration::from_millis(ms)),
        action => (blocking::perform(action, config), Duration::ZERO),
    }
}
