//! One client, remembered between turns of the loop.
//!
//! A blocking server keeps a client's progress on the stack, inside `read`. A non-blocking
//! one returns to `poll` after every step, so the progress lives here: the bytes received
//! so far, the bytes still to send, and which of these states the connection is in:
//!
//! ```text
//!   Reading ──last request answered──▶ Writing ──all sent──▶ Lingering ──client closed──▶ Done
//!    │    ▲                                                                               ▲
//!    └────┘ keep-alive: answer each request (pipelined ones in order), read the next      │
//!   client left, error, reset: any state goes straight to Done ───────────────────────────┘
//! ```
//!
//! New in chapter 3: the event loop calls the connection (the `Handler` impl at the end),
//! and a connection serves many requests: it stays open unless one says `Connection: close`
//! (keep-alive), and may bring several at once, answered in order (pipelining).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use shared::blocking::run_app;
use shared::buffer::Buffer;
use shared::http::{self, date, response::Framing, Parse, Response};
use shared::trace;

use crate::event_loop::Handler;
use crate::poll_backend::{Interest, Token};
use crate::{Server, ServerLoop};

/// How much a lingering connection may send us before we stop being polite and close.
const MAX_DISCARD: usize = 1024 * 1024;

/// Unsent output above which we stop reading and answering this client (backpressure).
const MAX_PENDING: usize = 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Taking requests. Answers to them are sent as they are ready, meanwhile.
    Reading,
    /// The last response is ready; sending it as fast as the client takes it.
    Writing,
    /// Response sent and our side shut; waiting for the client to close its side.
    Lingering,
    /// Finished: the loop drops it, which closes the socket.
    Done,
}

pub struct Connection {
    pub stream: TcpStream,
    /// Bytes received and not yet answered, and answers not yet sent. Each request or
    /// part of an answer is consumed from the front; empty, they hold no memory (see
    /// `shared::buffer`: an idle kept-alive client holds no buffer).
    received: Buffer,
    out: Buffer,
    state: State,
    /// The client shut its sending side (we read end-of-file).
    peer_closed: bool,
    /// Bytes thrown away after the request (see `read_request`).
    discarded: usize,
}

impl Connection {
    pub fn new(stream: TcpStream) -> Connection {
        Connection {
            stream,
            received: Buffer::new(),
            out: Buffer::new(),
            state: State::Reading,
            peer_closed: false,
            discarded: 0,
        }
    }

    // ANCHOR: reading
    fn pending_output(&self) -> usize {
        self.out.len()
    }

    /// Nothing owed to the client: every request read so far is answered, and sent.
    fn owes_nothing(&self) -> bool {
        self.state == State::Reading && self.pending_output() == 0
    }

    /// What the loop should watch for on this socket.
    pub fn interest(&self) -> Interest {
        // Readable, always: that is also how we learn that a client went away. Except after
        // end-of-file, which stays "readable" forever (a busy loop), and while much output
        // waits: not reading pushes back on a client that never reads our answers.
        let readable = !self.peer_closed && self.pending_output() <= MAX_PENDING;
        // Writable only with something to write: asking always would wake us every turn too.
        Interest { readable, writable: self.pending_output() > 0 }
    }

    /// Reads once: `poll` is level-triggered, and reports the socket again if more is waiting.
    fn read_request(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        let count = match self.stream.read(&mut chunk) {
            Ok(count) => count,
            // Nothing there after all, or a signal interrupted us: try again next turn.
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return,
            Err(error) => {
                trace!("fd {}: read failed: {error}", self.fd());
                self.state = State::Done;
                return;
            }
        };
        trace!("fd {}: read {count} bytes", self.fd());
        if count == 0 {
            self.peer_closed = true;
            // A client that shut its side may still wait for its answer (a "half-close").
            if self.state == State::Lingering {
                self.state = State::Done;
            }
            return;
        }
        if self.state != State::Reading {
            // The last request is answered: count what follows and drop it, up to a limit.
            self.discarded += count;
            if self.discarded > MAX_DISCARD {
                self.state = State::Done;
            }
            return;
        }
        self.received.extend_from_slice(&chunk[..count]);
    }
    // ANCHOR_END: reading

    // ANCHOR: try_respond
    /// Answers every whole request received so far, in order, and starts sending. Pipelined
    /// requests that arrived together get their answers in one `write`, usually.
    fn try_respond(&mut self, event_loop: &ServerLoop, server: &mut Server) {
        while self.state == State::Reading {
            if self.pending_output() > MAX_PENDING {
                self.send(); // now: no writable event would follow a send that took it all
            }
            if self.pending_output() > MAX_PENDING {
                break; // the socket is full: its writable event brings us back
            }
            match http::parse(&self.received) {
                Parse::Complete { request, consumed } => {
                    let stats = server.stats(event_loop);
                    let response = run_app(&request, &server.config, &stats);
                    self.respond(&response, Framing::for_request(&request), server);
                    self.received.consume(consumed); // answered: forget it
                }
                // After a framing error we cannot tell where a next request would begin,
                // so everything after it goes: answer, then close.
                Parse::Invalid(error) => {
                    self.respond(&Response::from_parse_error(error), Framing::CLOSE, server);
                    self.received.clear();
                }
                Parse::Incomplete => break, // wait for more bytes
            }
        }
        // Try at once, not next turn: the output usually fits in the socket's send buffer.
        self.send();
    }

    /// Adds the answer to one request to the output.
    fn respond(&mut self, response: &Response, mut framing: Framing, server: &mut Server) {
        // Keep the connection if the client asks to (see `Framing`), the response allows it,
        // and we are not shutting down.
        framing.keep_alive &= !response.close && server.shutdown_deadline.is_none();
        let (name, date) = (server.config.chapter, date::now());
        http::response::write_response(&mut self.out, response, &framing, name, &date);
        server.requests_served += 1;
        if !framing.keep_alive {
            self.state = State::Writing; // the last response: send it, then close
        }
    }
    // ANCHOR_END: try_respond

    // ANCHOR: send
    /// Sends as much of the output as the kernel will take.
    fn send(&mut self) {
        let mut sent = 0;
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                // A partial write is normal: the kernel took what fit. Loop for the rest.
                Ok(count) if count > 0 => {
                    self.out.consume(count);
                    sent += count;
                }
                Ok(_) => {
                    self.state = State::Done;
                    return;
                }
                // The send buffer is full: stop; the loop calls `on_writable` when there is room.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    // EPIPE or ECONNRESET: the client went away mid-response.
                    trace!("fd {}: write failed: {error}", self.fd());
                    self.state = State::Done;
                    return;
                }
            }
        }
        if sent > 0 {
            trace!("fd {}: sent {sent} bytes", self.fd());
        }
        if self.state == State::Writing && self.out.is_empty() {
            self.start_lingering();
        }
    }

    /// Closes without losing the response: closing while the client still sends (a pipelined
    /// request, a rejected body) sends a reset, which can destroy the answer unread. So, as
    /// nginx's "lingering close": shut our side; close once the client closes its own.
    fn start_lingering(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        self.state = if self.peer_closed { State::Done } else { State::Lingering };
    }
    // ANCHOR_END: send

    // ANCHOR: after_event
    /// After every callback: finish, or tell the loop what to wait for next.
    fn after_event(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        // Nothing left to answer or send. Finish if the client shut its side (no request
        // can come), or if we are shutting down and no request has begun.
        let no_more =
            self.peer_closed || (server.shutdown_deadline.is_some() && self.received.is_empty());
        if self.owes_nothing() && no_more {
            self.state = State::Done;
        }
        // A lingering one too, during a shutdown: it counts as idle (see `is_idle`).
        if self.state == State::Lingering && server.shutdown_deadline.is_some() {
            self.state = State::Done;
        }
        if self.state == State::Done {
            event_loop.deregister(token, server); // we are dropped once this callback returns
            return;
        }
        event_loop.set_interest(token, self.interest());
    }
    // ANCHOR_END: after_event

    fn fd(&self) -> i32 {
        self.stream.as_raw_fd()
    }
}

// ANCHOR: callbacks
impl Handler<Server> for Connection {
    fn on_readable(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        self.read_request();
        self.try_respond(event_loop, server);
        self.after_event(event_loop, token, server);
    }

    fn on_writable(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        // Sends first; then answers requests held back while output piled up.
        self.send();
        self.try_respond(event_loop, server);
        self.after_event(event_loop, token, server);
    }

    fn on_close(&mut self, event_loop: &mut ServerLoop, _: Token, server: &mut Server) {
        trace!("fd {}: closed", self.fd());
        server.connection_closed(event_loop);
    }

    fn is_idle(&self) -> bool {
        let between_requests = self.owes_nothing() && self.received.is_empty();
        // Lingering too: until chapter 4's timers bound lingering, a client that keeps its
        // socket open after its last answer would hold a shutdown for the grace period.
        between_requests || self.state == State::Lingering
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}
// ANCHOR_END: callbacks
