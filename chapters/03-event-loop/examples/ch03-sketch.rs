//! Sketch of chapter 3: an event loop. Chapter 2's loop no longer knows what it watches: it
//! holds `Handler`s, each owning a socket, saying what it waits for, called back when it
//! is ready: the listener, the signal pipe (SIGINT, SIGTERM: a graceful stop), and each
//! `Connection`, which now answers request after request (keep-alive), pipelined in order.
//!
//! Left out (`chapters/03-event-loop/src/` has them): `Token`s naming the registrations, a
//! lingering close, running out of descriptors, a bound on how long a graceful stop waits,
//! a callback's panic (here it ends the program; there, only that client).

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::signals::Signals;
use shared::{app::Stats, args::Config, blocking::run_app, buffer::Buffer, http, listener, trace};

fn main() {
    let config = Config::from_args("ch03-sketch", &[]);
    if config.trace {
        trace::enable();
    }
    let signals = Signals::install(); // before the first line: SIGTERM may follow it at once
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut handlers: Vec<Box<dyn Handler>> = vec![Box::new(signals), Box::new(listener)];
    let mut server = Server { config, stats: Stats::default(), stopping: false, accepted: vec![] };
    while !handlers.is_empty() {
        // Say what we wait for: what each handler needs.
        let mut fds: Vec<_> =
            handlers.iter().map(|h| PollFd::new(h.as_fd(), h.interest())).collect();
        // Wait until something is ready: the only place the server waits.
        trace!("poll: waiting on {} fds", fds.len());
        let _ = poll(&mut fds, PollTimeout::NONE); // an error (a signal): nothing is ready
        let ready: Vec<_> = fds.iter().map(|f| f.revents().unwrap_or(Interest::empty())).collect();
        server.stats.loop_turns += 1;
        // Call back what is ready, nothing else (an error counts as ready: a read meets it).
        for (handler, events) in handlers.iter_mut().zip(ready) {
            if !events.is_empty() {
                handler.on_events(events, &mut server);
            }
        }
        // Forget what is done (dropping it closes its socket), in a graceful stop the idle
        // handlers too (the listener: newcomers are refused).
        handlers.retain(|handler| !(handler.is_done() || server.stopping && handler.is_idle()));
        handlers.append(&mut server.accepted); // the clients the listener took in
        let services = if server.stopping { 0 } else { 2 }; // a stop drops signals, listener
        server.stats.connections_open = (handlers.len() - services) as u64;
    } // a graceful stop is over: exit, status 0
}

/// What a socket waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    done: bool,
    /// Our last answer said `Connection: close`: answer no more, close once it is sent.
    last: bool,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        Connection { stream, received: Buffer::new(), out: Buffer::new(), done: false, last: false }
    }

    /// Bytes came, or end of file, or an error. One read: if more is waiting, `poll` says
    /// so again next turn.
    fn on_readable(&mut self, server: &mut Server) {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(count) if count > 0 => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            _ => return self.done = true, // end of file or a reset: the client is gone
        }
        self.on_writable(server);
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest;
    /// new: whenever all is sent, answer the next whole request (pipelined ones in order).
    fn on_writable(&mut self, server: &mut Server) {
        while !self.out.is_empty() || !self.last && self.answer_next(server).is_some() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => return self.done = true, // the client left
            }
        }
        self.done = self.last || server.stopping; // all sent: close, or wait for the next
    }

    /// Answers the next whole request; keeps the connection if the client asks, the answer
    /// allows, and we go on.
    fn answer_next(&mut self, server: &mut Server) -> Option<()> {
        let (config, stats, go_on) = (&server.config, &server.stats, !server.stopping);
        let app = |request: &http::Request| run_app(request, config, stats);
        let open = http::answer(&mut self.received, &mut self.out, config.chapter, go_on, app)?;
        (self.last, server.stats.requests_served) = (!open, server.stats.requests_served + 1);
        Some(())
    }
}

#[rustfmt::skip] // short callbacks on one line, as in the trait
impl Handler for Connection {
    /// Read only while we owe the client nothing: one that sends faster than it reads waits.
    fn interest(&self) -> Interest {
        if self.out.is_empty() {
            Interest::POLLIN
        } else {
            Interest::POLLOUT
        }
    }

    fn on_events(&mut self, events: Interest, server: &mut Server) {
        if events.contains(Interest::POLLOUT) {
            self.on_writable(server);
        } else {
            self.on_readable(server);
        }
    }

    fn is_done(&self) -> bool { self.done }
    fn is_idle(&self) -> bool { self.received.is_empty() && self.out.is_empty() }
}

/// What the loop holds and calls back; it owns a socket, lent to `poll`. Idle: nothing in
/// flight, so a graceful stop need not wait for it.
#[rustfmt::skip] // one line a callback
trait Handler: AsFd {
    fn interest(&self) -> Interest { Interest::POLLIN }
    fn on_events(&mut self, events: Interest, server: &mut Server);
    fn is_done(&self) -> bool { false }
    fn is_idle(&self) -> bool { true }
}

/// What the handlers share; `accepted`: the new ones, taken in after this turn's callbacks.
struct Server {
    config: Config,
    stats: Stats,
    stopping: bool,
    accepted: Vec<Box<dyn Handler>>,
}

/// The listener: readable means clients are waiting to be accepted.
impl Handler for TcpListener {
    fn on_events(&mut self, _: Interest, server: &mut Server) {
        let accepted = &mut server.accepted;
        listener::accept_all(self, |stream, _| accepted.push(Box::new(Connection::new(stream))));
    }
}

/// SIGINT or SIGTERM came, a byte in the signal pipe: stop gracefully (here, not in the
/// signal handler, which may do almost nothing).
impl Handler for Signals {
    fn on_events(&mut self, _: Interest, server: &mut Server) {
        server.stopping = true;
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}
