//! One client, remembered between turns of the loop.
//!
//! A blocking server keeps a client's progress on the stack: it sits inside `read` until
//! the request is in. A non-blocking server returns to `poll` after every step, so the
//! progress must live somewhere else: here. A `Connection` holds the bytes received so far,
//! the bytes still to send, and which of these states it is in:
//!
//! ```text
//!   Reading ──request complete──▶ Writing ──all sent──▶ Lingering ──client closed──▶ Done
//!      │                            │                                                  ▲
//!      └────────client left, error, reset: any state goes straight to Done ────────────┘
//! ```

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;

use nix::poll::PollFlags;

use shared::app::Stats;
use shared::args::Config;
use shared::blocking::run_app;
use shared::http::{self, date, response::Framing, Parse, Response};
use shared::trace;

/// How much a lingering connection may send us before we stop being polite and close.
const MAX_DISCARD: usize = 1024 * 1024;

// ANCHOR: state
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for the rest of the request.
    Reading,
    /// The response is ready; sending it as fast as the client takes it.
    Writing,
    /// Response sent and our side shut; waiting for the client to close its side.
    Lingering,
    /// Finished: the main loop drops it, which closes the socket.
    Done,
}
// ANCHOR_END: state

// ANCHOR: connection
pub struct Connection {
    pub stream: TcpStream,
    /// Bytes received and not yet parsed into a request.
    received: Vec<u8>,
    /// The response, and how much of it the kernel has accepted so far.
    out: Vec<u8>,
    written: usize,
    state: State,
    /// The client shut its sending side (we read end-of-file).
    peer_closed: bool,
    /// Bytes thrown away after the request (see `on_readable`).
    discarded: usize,
}
// ANCHOR_END: connection

impl Connection {
    pub fn new(stream: TcpStream) -> Connection {
        Connection {
            stream,
            received: Vec::new(),
            out: Vec::new(),
            written: 0,
            state: State::Reading,
            peer_closed: false,
            discarded: 0,
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    // ANCHOR: interest
    /// What `poll` should watch for on this socket.
    pub fn interest(&self) -> PollFlags {
        let mut interest = PollFlags::empty();
        // Readable, always: that is also how we learn that a client went away. Except
        // after end-of-file, which stays "readable" forever and would make `poll` return
        // at once on every turn, a busy loop.
        if !self.peer_closed {
            interest |= PollFlags::POLLIN;
        }
        // Writable only while we have something to write. A socket has room to write
        // almost all the time, so asking always would also wake us on every turn.
        if self.state == State::Writing {
            interest |= PollFlags::POLLOUT;
        }
        interest
    }
    // ANCHOR_END: interest

    // ANCHOR: on_events
    /// Called by the loop with what `poll` reported for this socket.
    pub fn on_events(&mut self, events: PollFlags, config: &Config, stats: &mut Stats) {
        // POLLERR: the connection failed (a reset, say). POLLNVAL: not an open descriptor.
        if events.intersects(PollFlags::POLLERR | PollFlags::POLLNVAL) {
            trace!("fd {}: error or reset, closing", self.fd());
            self.state = State::Done;
            return;
        }
        // POLLHUP comes with end-of-file; reading is how we see the rest of it.
        if events.intersects(PollFlags::POLLIN | PollFlags::POLLHUP) {
            self.on_readable(config, stats);
        }
        if events.contains(PollFlags::POLLOUT) && self.state == State::Writing {
            self.on_writable();
        }
    }
    // ANCHOR_END: on_events

    // ANCHOR: on_readable
    /// The socket has bytes for us (or end-of-file). Read once: `poll` is level-triggered,
    /// so if more is waiting it will simply report the socket again on the next turn.
    fn on_readable(&mut self, config: &Config, stats: &mut Stats) {
        let mut chunk = [0u8; 16 * 1024];
        let count = match self.stream.read(&mut chunk) {
            Ok(count) => count,
            // Nothing there after all, or a signal interrupted us: try again next turn.
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return
            }
            Err(error) => {
                trace!("fd {}: read failed: {error}", self.fd());
                self.state = State::Done;
                return;
            }
        };
        trace!("fd {}: read {count} bytes", self.fd());
        if count == 0 {
            self.peer_closed = true;
            // A client may shut its side right after sending its request and still wait
            // for the answer (a "half-close"), so only a connection still reading or
            // already lingering is finished by end-of-file.
            if self.state != State::Writing {
                self.state = State::Done;
            }
            return;
        }
        if self.state != State::Reading {
            // This chapter answers one request per connection, so anything after it is
            // thrown away, up to a limit, rather than stored: a client that keeps sending
            // must not make us use more and more memory.
            self.discarded += count;
            if self.discarded > MAX_DISCARD {
                self.state = State::Done;
            }
            return;
        }
        self.received.extend_from_slice(&chunk[..count]);
        self.try_respond(config, stats);
    }
    // ANCHOR_END: on_readable

    // ANCHOR: try_respond
    /// If a whole request has arrived (or a bad one), prepare the answer and start sending.
    fn try_respond(&mut self, config: &Config, stats: &mut Stats) {
        let (response, mut framing) = match http::parse(&self.received) {
            Parse::Complete { request, .. } => {
                (run_app(&request, config, stats), Framing::for_request(&request))
            }
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE),
            Parse::Incomplete => return, // wait for more bytes
        };
        framing.keep_alive = false; // still one request per connection (keep-alive: chapter 3)
        let date = date::now();
        http::response::write_response(&mut self.out, &response, &framing, config.chapter, &date);
        stats.requests_served += 1;
        self.received = Vec::new(); // the request is answered; give its memory back
        self.state = State::Writing;
        // Try at once instead of waiting a turn: usually the whole response fits in the
        // socket's send buffer and we are done without ever asking for POLLOUT.
        self.on_writable();
    }
    // ANCHOR_END: try_respond

    // ANCHOR: on_writable
    /// The socket has room: send as much of the response as the kernel will take.
    fn on_writable(&mut self) {
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                // A partial write is normal: the kernel took what fit. Loop for the rest.
                Ok(count) if count > 0 => self.written += count,
                Ok(_) => {
                    self.state = State::Done;
                    return;
                }
                // The send buffer is full: the client reads slower than we write. Stop
                // here; `poll` will tell us (POLLOUT) when there is room again. Meanwhile
                // every other client is served: that is the lesson of this chapter.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    trace!(
                        "fd {}: wrote {} of {} bytes, waiting for room",
                        self.fd(),
                        self.written,
                        self.out.len()
                    );
                    return;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    // EPIPE or ECONNRESET: the client went away mid-response.
                    trace!("fd {}: write failed: {error}", self.fd());
                    self.state = State::Done;
                    return;
                }
            }
        }
        trace!("fd {}: response sent ({} bytes)", self.fd(), self.out.len());
        self.out = Vec::new();
        self.start_lingering();
    }
    // ANCHOR_END: on_writable

    // ANCHOR: start_lingering
    /// Closes without losing the response. Closing while the client still has bytes on
    /// their way to us (a pipelined request, the rest of a rejected body) makes the kernel
    /// send a reset, which can destroy the response before the client has read it. So we
    /// shut our sending side, wait for the client to close its side (reading and throwing
    /// away whatever still comes), and only then close. nginx calls this a lingering close.
    fn start_lingering(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        self.state = if self.peer_closed { State::Done } else { State::Lingering };
    }
    // ANCHOR_END: start_lingering

    fn fd(&self) -> i32 {
        self.stream.as_raw_fd()
    }
}
