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
use std::thread;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::args::Config;
use shared::buffer::Buffer;
use shared::http::{self, date, response::write_response, response::Framing, Parse, Response};
use shared::{files, listener, trace, upstream};

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
        let mut fds = vec![PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        fds.extend(connections.iter().map(|c| PollFd::new(c.stream.as_fd(), c.interest())));
        // Wait until something is ready: the only place the server waits.
        trace!("poll: waiting on {} fds", fds.len());
        let _ = poll(&mut fds, PollTimeout::NONE); // an error (a signal): nothing is ready
        let ready: Vec<_> =
            fds.iter().map(|fd| fd.revents().unwrap_or(PollFlags::empty())).collect();
        drop(fds); // it borrows the sockets
        stats.loop_turns += 1;
        // Do what is ready, nothing else (an error counts as ready: a read or write meets it).
        for (connection, events) in connections.iter_mut().zip(&ready[1..]) {
            if events.contains(PollFlags::POLLOUT) {
                connection.on_writable();
            } else if !events.is_empty() {
                connection.on_readable(&config, &mut stats);
            }
        }
        if ready[0].contains(PollFlags::POLLIN) {
            listener::accept_all(&listener, |stream, _| connections.push(Connection::new(stream)));
        }
        // Forget the connections that are done: dropping one closes its socket.
        connections.retain(|connection| !connection.done);
        stats.connections_open = connections.len() as u64;
    }
}

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

    /// Read until the request is in, then write until its answer is out.
    fn interest(&self) -> PollFlags {
        if self.out.is_empty() {
            PollFlags::POLLIN
        } else {
            PollFlags::POLLOUT
        }
    }

    /// Bytes came, or end of file, or an error. One read: if more is waiting, `poll` says so
    /// again next turn.
    fn on_readable(&mut self, config: &Config, stats: &mut Stats) {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => self.done = true, // the client left before a whole request
            Ok(count) => self.received.extend_from_slice(&chunk[..count]),
            Err(error) => self.done = error.kind() != io::ErrorKind::WouldBlock,
        }
        let (response, mut framing) = match http::parse(&self.received) {
            Parse::Complete { request, .. } => {
                (run_app(&request, config, stats), Framing::for_request(&request))
            }
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE),
            Parse::Incomplete => return, // wait for the rest
        };
        framing.keep_alive = false; // one request per connection
        write_response(&mut self.out, &response, &framing, config.chapter, &date::now());
        stats.requests_served += 1;
        self.on_writable(); // most answers fit in the socket at once
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
