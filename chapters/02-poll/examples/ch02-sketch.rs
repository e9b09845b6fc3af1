//! Sketch of chapter 2: many clients on one thread. The sockets are non-blocking (a call
//! that would wait returns `WouldBlock` at once instead), and the one place the server
//! waits is `poll(2)`: it watches the listener and every connection together, and wakes
//! when any of them is ready. Between turns, a client's progress lives in its `Connection`.
//!
//! Left out, and where the chapter's code has it:
//! - closing without losing the answer (a lingering close): `chapters/02-poll/src/connection.rs`
//! - running out of file descriptors without spinning: `chapters/02-poll/src/main.rs`

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::{app::Stats, args::Config, blocking::run_app, buffer::Buffer, http, listener, trace};

fn main() {
    let config = Config::from_args("ch02-sketch", &[]);
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
        // Wait until something is ready: the only place the server waits.
        trace!("poll: waiting on {} fds", fds.len());
        let _ = poll(&mut fds, PollTimeout::NONE); // an error (a signal): nothing is ready
        let ready: Vec<_> = fds.iter().map(|f| f.revents().unwrap_or(Interest::empty())).collect();
        stats.loop_turns += 1;
        // Do what is ready, nothing else (an error counts as ready: a read meets it).
        for (connection, events) in connections.iter_mut().zip(ready[1..].iter().copied()) {
            if !events.is_empty() {
                connection.on_events(events, &config, &mut stats);
            }
        }
        if ready[0].contains(Interest::POLLIN) {
            listener::accept_all(&listener, |stream, _| connections.push(Connection::new(stream)));
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
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        Connection { stream, received: Buffer::new(), out: Buffer::new(), done: false }
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
        let app = |request: &http::Request| run_app(request, config, stats);
        if http::answer(&mut self.received, &mut self.out, config.chapter, false, app).is_some() {
            stats.requests_served += 1;
            self.on_writable(); // most answers fit in the socket at once
        }
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest.
    fn on_writable(&mut self) {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break, // the client left
            }
        }
        self.done = true; // all sent: close
    }
}

/// What the loop calls.
impl Connection {
    /// Read until the request is in, then write until its answer is out.
    fn interest(&self) -> Interest {
        if self.out.is_empty() {
            Interest::POLLIN
        } else {
            Interest::POLLOUT
        }
    }

    fn on_events(&mut self, events: Interest, config: &Config, stats: &mut Stats) {
        if events.contains(Interest::POLLOUT) {
            self.on_writable();
        } else {
            self.on_readable(config, stats);
        }
    }
}
