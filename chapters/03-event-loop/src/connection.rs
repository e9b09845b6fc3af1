//! One client, remembered between turns of the loop.
//!
//! A blocking server keeps a client's progress on the stack: it sits inside `read` until
//! the request is in. A non-blocking server returns to `poll` after every step, so the
//! progress must live somewhere else: here. A `Connection` holds the bytes received so far,
//! the bytes still to send, and which of these states it is in:
//!
//! ```text
//!   Reading ──last request answered──▶ Writing ──all sent──▶ Lingering ──client closed──▶ Done
//!    │    ▲                                                                               ▲
//!    └────┘ keep-alive: answer each request (pipelined ones in order), read the next      │
//!   client left, error, reset: any state goes straight to Done ───────────────────────────┘
//! ```
//!
//! New in chapter 3: the event loop calls the connection (`on_readable`, `on_writable`;
//! see the `Handler` impl), and one connection serves many requests. HTTP/1.1 keeps the
//! connection open unless a request says `Connection: close`; a client may even send
//! several requests without waiting for the answers ("pipelining"), and gets the answers
//! in order.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;

use shared::http::{self, date, response::Framing, Parse, Response, Version};
use shared::trace;

use crate::event_loop::{EventLoop, Handler, Interest, Token};
use crate::Server;

/// How much a lingering connection may send us before we stop being polite and close.
const MAX_DISCARD: usize = 1024 * 1024;

/// How many reads one connection may do per turn of the loop (16 KiB each, so 128 KiB).
const READS_PER_TURN: usize = 8;

/// Unsent output above which we stop reading and answering this client (backpressure).
const MAX_PENDING_OUTPUT: usize = 1024 * 1024;

/// A buffer that grew beyond this (a big file, a big upload) is given back once empty, so
/// that an idle keep-alive connection does not sit on megabytes. Below it, it is reused.
const KEEP_CAPACITY: usize = 64 * 1024;

// ANCHOR: state
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Taking requests. Answers to them are sent as they are ready, meanwhile.
    Reading,
    /// The last response is ready (the client asked to close, or sent a bad request, or
    /// the server is shutting down); sending it as fast as the client takes it.
    Writing,
    /// Response sent and our side shut; waiting for the client to close its side.
    Lingering,
    /// Finished: the connection deregisters itself, and the loop drops it, which closes
    /// the socket.
    Done,
}
// ANCHOR_END: state

// ANCHOR: connection
pub struct Connection {
    stream: TcpStream,
    /// Bytes received and not yet parsed into a request.
    received: Vec<u8>,
    /// Responses not yet sent, and how much of them the kernel has accepted so far.
    out: Vec<u8>,
    written: usize,
    state: State,
    /// The client shut its sending side (we read end-of-file).
    peer_closed: bool,
    /// Bytes thrown away after the last request (see `read_available`).
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

    fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Waiting for a next request with nothing half-received and nothing to send: the
    /// connections a graceful shutdown may close at once.
    fn is_idle(&self) -> bool {
        self.state == State::Reading && self.received.is_empty() && self.pending_output() == 0
    }

    fn pending_output(&self) -> usize {
        self.out.len() - self.written
    }

    // ANCHOR: interest
    /// What the loop should watch for on this socket.
    fn interest(&self) -> Interest {
        let mut interest = Interest::NONE;
        // Readable, always: that is also how we learn that a client went away. Except
        // after end-of-file, which stays "readable" forever and would make `poll` return
        // at once on every turn, a busy loop. And except while a lot of output waits:
        // a client that sends requests but never reads the answers would otherwise make
        // us buffer answers without limit. Not reading pushes back on it through TCP
        // itself: its requests wait in the kernel, then its sends stall.
        if !self.peer_closed && self.pending_output() <= MAX_PENDING_OUTPUT {
            interest.readable = true;
        }
        // Writable only while we have something to write. A socket has room to write
        // almost all the time, so asking always would also wake us on every turn.
        if self.pending_output() > 0 {
            interest.writable = true;
        }
        interest
    }
    // ANCHOR_END: interest

    // ANCHOR: read_available
    /// Reads what the client sent, up to this turn's budget.
    fn read_available(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        // ANCHOR: budget
        // Read until the kernel has nothing more, but at most READS_PER_TURN times: a
        // client sending as fast as it can would otherwise keep us here while everyone
        // else waits. `poll` is level-triggered, so what we leave unread is simply
        // reported again on the next turn, after the others had theirs.
        for _ in 0..READS_PER_TURN {
            let count = match self.stream.read(&mut chunk) {
                Ok(count) => count,
                // Nothing more for now: we read everything there was.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                // A signal interrupted us: just try again.
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    trace!("fd {}: read failed: {error}", self.fd());
                    self.state = State::Done;
                    return;
                }
            };
            trace!("fd {}: read {count} bytes", self.fd());
            if count == 0 {
                self.peer_closed = true;
                // A client may shut its side right after sending its requests and still
                // wait for the answers (a "half-close"), so only a lingering connection
                // is finished here; the others answer first (see `after_event`).
                if self.state == State::Lingering {
                    self.state = State::Done;
                }
                return;
            }
            if self.state != State::Reading {
                // The last request is answered, so anything after it is thrown away, up
                // to a limit, rather than stored: a client that keeps sending must not
                // make us use more and more memory.
                self.discarded += count;
                if self.discarded > MAX_DISCARD {
                    self.state = State::Done;
                    return;
                }
                continue;
            }
            self.received.extend_from_slice(&chunk[..count]);
            // A short read means we emptied the kernel's buffer. Reading again would
            // only earn a WouldBlock: one wasted system call per request on the
            // benchmark path. (Edge-triggered epoll would need that last read; `poll`
            // will simply tell us when more arrives.)
            if count < chunk.len() {
                return;
            }
        }
        // ANCHOR_END: budget
    }
    // ANCHOR_END: read_available

    // ANCHOR: try_respond
    /// Answers every complete request received so far, in order, and sends what it can.
    /// Pipelined requests that arrived together get their answers in one buffer, and so
    /// usually in one `write`.
    fn try_respond(&mut self, event_loop: &EventLoop<Server>, server: &mut Server) {
        let mut start = 0; // where the next unanswered request begins in `received`
        let mut blocked = false; // the client is not taking our output: sending can wait
        while self.state == State::Reading {
            if self.pending_output() > MAX_PENDING_OUTPUT {
                // A lot of output has piled up (a big file, or a client pipelining
                // without reading). Try to send it now; if the client is not taking it,
                // leave the remaining requests in `received` until it does.
                self.send();
                if self.pending_output() > MAX_PENDING_OUTPUT {
                    blocked = true;
                    break;
                }
                continue; // sent enough: answer the requests held back
            }
            let (response, version, head_only, keep_alive, consumed) =
                match http::parse(&self.received[start..]) {
                    Parse::Complete { request, consumed } => {
                        let head_only = request.method == "HEAD";
                        let stats = server.stats(event_loop);
                        (
                            super::run_app(&request, &server.config, &stats),
                            request.version,
                            head_only,
                            request.keep_alive,
                            consumed,
                        )
                    }
                    // After a framing error we cannot tell where a next request would
                    // begin, so everything after it goes: answer, then close.
                    Parse::Invalid(error) => (
                        Response::from_parse_error(error),
                        Version::Http11,
                        false,
                        false,
                        self.received.len() - start,
                    ),
                    Parse::Incomplete => break, // wait for more bytes
                };
            start += consumed;
            // ANCHOR: keep_alive
            // Keep the connection if the client wants to (HTTP/1.1 unless it said
            // `Connection: close`; HTTP/1.0 only if it said `keep-alive`), the response
            // allows it (not an answer to a bad request), and we are not shutting down.
            // `Framing` writes the matching `Connection` header.
            let keep_alive = keep_alive && !response.close && !server.shutting_down;
            // ANCHOR_END: keep_alive
            let framing = Framing {
                server: server.config.chapter,
                date: &date::now(),
                version,
                keep_alive,
                head_only,
            };
            http::response::write_response(&mut self.out, &response, &framing);
            server.requests_served += 1;
            if !keep_alive {
                self.state = State::Writing; // the last response: send it, then close
            }
        }
        // Forget the answered requests. What remains is the start of the next one.
        self.received.drain(..start);
        if self.received.is_empty() {
            recycle(&mut self.received);
        }
        // Try at once instead of waiting a turn: usually the whole response fits in the
        // socket's send buffer and we are done without ever asking for writable. (Not if
        // the client has just refused more: `interest` asks for writable instead.)
        if !blocked {
            self.send();
        }
    }
    // ANCHOR_END: try_respond

    // ANCHOR: send
    /// Sends as much of the output as the kernel will take.
    fn send(&mut self) {
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                // A partial write is normal: the kernel took what fit. Loop for the rest.
                Ok(count) if count > 0 => self.written += count,
                Ok(_) => {
                    self.state = State::Done;
                    return;
                }
                // The send buffer is full: the client reads slower than we write. Stop
                // here; the loop calls `on_writable` when there is room again. Meanwhile
                // every other client is served.
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
        if !self.out.is_empty() {
            trace!("fd {}: sent {} bytes", self.fd(), self.out.len());
            recycle(&mut self.out);
            self.written = 0;
        }
        if self.state == State::Writing {
            self.start_lingering();
        }
    }
    // ANCHOR_END: send

    // ANCHOR: start_lingering
    /// Closes without losing the response. Closing while the client still has bytes on
    /// their way to us (a pipelined request, the rest of a rejected body) makes the kernel
    /// send a reset, which can destroy the response before the client has read it. So we
    /// shut our sending side, wait for the client to close its side (reading and throwing
    /// away whatever still comes), and only then close. nginx calls this a lingering close.
    fn start_lingering(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        self.state = if self.peer_closed {
            State::Done
        } else {
            State::Lingering
        };
    }
    // ANCHOR_END: start_lingering

    // ANCHOR: after_event
    /// After every callback: finish if there is nothing left to do, otherwise tell the
    /// loop what to wait for next.
    fn after_event(
        &mut self,
        event_loop: &mut EventLoop<Server>,
        token: Token,
        server: &mut Server,
    ) {
        if self.state == State::Reading && self.pending_output() == 0 {
            // Every complete request is answered and sent (`try_respond` stops early
            // only while output is pending). Two reasons to finish anyway:
            if self.peer_closed {
                // The client shut its side: no further request can ever complete.
                self.state = State::Done;
            } else if server.shutting_down && self.received.is_empty() {
                // Idle while the server shuts down: no reason to wait for a request.
                self.state = State::Done;
            }
        }
        if !self.is_done() {
            if let Err(error) = event_loop.set_interest(token, self.interest()) {
                trace!("fd {}: cannot change interest: {error}", self.fd());
                self.state = State::Done;
            }
        }
        if self.is_done() {
            trace!("fd {}: closing", self.fd());
            // The loop drops us as soon as this callback returns, which closes the socket.
            event_loop.deregister(token);
            server.connection_closed(event_loop, token);
        } else if self.is_idle() {
            server.idle.insert(token);
        } else {
            server.idle.remove(&token);
        }
    }
    // ANCHOR_END: after_event

    fn fd(&self) -> i32 {
        self.stream.as_raw_fd()
    }
}

// ANCHOR: callbacks
/// How the event loop drives a connection. Both callbacks end the same way: answer what
/// can be answered, send what can be sent, and say what to wait for next.
impl Handler<Server> for Connection {
    fn on_readable(
        &mut self,
        event_loop: &mut EventLoop<Server>,
        token: Token,
        server: &mut Server,
    ) {
        self.read_available();
        self.try_respond(event_loop, server);
        self.after_event(event_loop, token, server);
    }

    fn on_writable(
        &mut self,
        event_loop: &mut EventLoop<Server>,
        token: Token,
        server: &mut Server,
    ) {
        // `try_respond` sends first if output is piled up, then answers the requests it
        // held back because of it, then sends again.
        self.try_respond(event_loop, server);
        self.after_event(event_loop, token, server);
    }
}
// ANCHOR_END: callbacks

/// Empties a buffer for the next request or response, keeping its memory unless it grew
/// large.
fn recycle(buffer: &mut Vec<u8>) {
    if buffer.capacity() > KEEP_CAPACITY {
        *buffer = Vec::new();
    } else {
        buffer.clear();
    }
}
