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
//! Since chapter 3 the loop calls it (the `Handler` impl), request after request, pipelined
//! or not. New in chapter 4, time: a request may wait for [`Connection::answer`] (`/sleep`,
//! `/upstream/`), those behind it too; and a client has only so long to act (`deadline`).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use shared::args::Config;
use shared::buffer::Buffer;
use shared::http::{self, response::Framing, Parse, Response};
use shared::trace;

use crate::event_loop::Handler;
use crate::poll_backend::{Interest, Token};
use crate::timers::TimerId;
use crate::{Effect, Reply, Server, ServerLoop};

// ANCHOR: lingering
/// How much a lingering connection may send us before we stop being polite and close.
const MAX_DISCARD: usize = 1024 * 1024;

/// How long a lingering connection waits for the client to fall silent: many round trips.
const LINGER_QUIET: Duration = Duration::from_millis(500);
// ANCHOR_END: lingering

/// Backpressure: past this much unsent output, or input behind a waiting request, we stop.
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

// ANCHOR: connection
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
    /// Lingering: since when the client has sent nothing (see `deadline`).
    quiet_since: Instant,
    /// The effect a request waits on (its answer comes later), and how to frame that answer.
    effect: Option<(Effect, Framing)>,
    /// Its timeouts count from here: connect, output given or taken, or a next request begun.
    since: Instant,
    /// It has had an answer: idle now, it is kept alive, no longer new.
    kept_alive: bool,
    /// The timer that enforces the deadline, and when it fires.
    deadline_timer: Option<(Instant, TimerId)>,
}
// ANCHOR_END: connection

impl Connection {
    pub fn new(stream: TcpStream) -> Connection {
        Connection {
            stream,
            received: Buffer::new(),
            out: Buffer::new(),
            state: State::Reading,
            peer_closed: false,
            discarded: 0,
            quiet_since: Instant::now(),
            effect: None,
            since: Instant::now(),
            kept_alive: false,
            deadline_timer: None,
        }
    }

    fn pending_output(&self) -> usize {
        self.out.len()
    }

    /// A request is being answered later (see `effect`): those pipelined behind it wait.
    fn busy(&self) -> bool {
        self.effect.is_some()
    }

    /// Nothing owed to the client: every request read so far is answered, and sent.
    fn owes_nothing(&self) -> bool {
        self.state == State::Reading && !self.busy() && self.pending_output() == 0
    }

    /// What the loop should watch for on this socket.
    pub fn interest(&self) -> Interest {
        // Readable, always (that is how we learn a client left), except after end-of-file,
        // which stays "readable" forever (a busy loop), and while much output waits or many
        // requests queue behind a waiting one: not reading pushes back on the client.
        let queue_full = self.busy() && self.received.len() > MAX_PENDING;
        let readable = !self.peer_closed && self.pending_output() <= MAX_PENDING && !queue_full;
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
            self.quiet_since = Instant::now();
            if self.discarded > MAX_DISCARD {
                self.state = State::Done;
            }
            return;
        }
        if self.received.is_empty() && self.kept_alive {
            self.since = Instant::now(); // its next request begins: the header timeout from here
        }
        self.received.extend_from_slice(&chunk[..count]);
    }

    // ANCHOR: try_respond
    /// Answers every whole request received so far, in order, and starts sending. Pipelined
    /// requests that arrived together get their answers in one `write`, usually.
    fn try_respond(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        while self.state == State::Reading && !self.busy() {
            if self.pending_output() > MAX_PENDING {
                self.send(); // now: no writable event would follow a send that took it all
            }
            if self.pending_output() > MAX_PENDING {
                break; // the socket is full: its writable event brings us back
            }
            match http::parse(&self.received) {
                Parse::Complete { request, consumed } => {
                    let framing = Framing::for_request(&request);
                    match super::run_app(&request, event_loop, token, server) {
                        Reply::Now(response) => self.respond(&response, framing, server),
                        // Answered later (`answer`); those behind it wait in `received`.
                        Reply::Later(effect) => self.effect = Some((effect, framing)),
                    }
                    self.received.consume(consumed); // answered, or its answer under way
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
        let (name, date) = (server.config.chapter, &server.date);
        http::response::write_response(&mut self.out, response, &framing, name, date);
        server.requests_served += 1;
        self.since = Instant::now(); // the client's clock starts again: it has output to take
        self.kept_alive = true;
        if !framing.keep_alive {
            self.state = State::Writing; // the last response: send it, then close
        }
    }
    // ANCHOR_END: try_respond

    /// Sends as much of the output as the kernel will take.
    fn send(&mut self) {
        let mut sent = 0;
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                // A partial write is normal: the kernel took what fit. Loop for the rest.
                Ok(count) if count > 0 => {
                    self.out.consume(count);
                    sent += count;
                    self.since = Instant::now(); // it took some: its send timeout restarts
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
    /// nginx's "lingering close": shut our side; close once the client closes or falls silent.
    fn start_lingering(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        self.quiet_since = Instant::now();
        self.state = if self.peer_closed { State::Done } else { State::Lingering };
    }

    // ANCHOR: after_event
    /// After every callback: finish, or tell the loop what to wait for next.
    pub fn after_event(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        // Nothing left to answer or send: finish if the client shut its side (no request can
        // come; one still waiting is answered first), or we shut down and none has begun.
        let no_more =
            self.peer_closed || (server.shutdown_deadline.is_some() && self.received.is_empty());
        if self.owes_nothing() && no_more {
            self.state = State::Done;
        }
        if self.state == State::Done {
            event_loop.deregister(token, server); // we are dropped once this callback returns
            return;
        }
        event_loop.set_interest(token, self.interest());
        // Arm the deadline timer if the deadline is now earlier. (A timer that fires early,
        // the deadline having moved later, just checks and re-arms.)
        let Some(deadline) = self.deadline(&server.config) else { return };
        if self.deadline_timer.is_some_and(|(armed, _)| armed <= deadline) {
            return;
        }
        if let Some((_, timer)) = self.deadline_timer.take() {
            event_loop.cancel_timer(timer);
        }
        let delay = deadline.saturating_duration_since(Instant::now());
        let timer = event_loop.add_timer(delay, move |event_loop, server| {
            event_loop.with_handler(token, server, Connection::on_deadline)
        });
        self.deadline_timer = Some((deadline, timer));
    }
    // ANCHOR_END: after_event

    // ANCHOR: deadline
    /// When this client runs out of time. `None` while a request waits for its answer:
    /// that time is ours, not the client's.
    fn deadline(&self, config: &Config) -> Option<Instant> {
        if self.state == State::Lingering {
            // Until the client falls silent; at most the keep-alive timeout after our last byte.
            let quiet = self.quiet_since + LINGER_QUIET;
            return Some(quiet.min(self.since + config.keep_alive_timeout));
        }
        let limit = if self.effect.is_some() {
            return None;
        } else if self.pending_output() > 0 {
            config.send_timeout // it must take our output
        } else if self.received.is_empty() && self.kept_alive {
            config.keep_alive_timeout // idle between requests
        } else {
            config.header_timeout // new, or a request begun: it must come whole in time
        };
        Some(self.since + limit)
    }

    fn on_deadline(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        self.deadline_timer = None;
        if self.deadline(&server.config).is_some_and(|deadline| deadline <= Instant::now()) {
            trace!("fd {}: out of time", self.fd());
            if self.owes_nothing() && !self.received.is_empty() {
                // A request begun and never finished (slowloris): say so, then close.
                let timeout = Response { close: true, ..Response::error(408, "too slow") };
                self.respond(&timeout, Framing::CLOSE, server);
            } else {
                self.state = State::Done;
            }
        }
        self.after_event(event_loop, token, server);
    }
    // ANCHOR_END: deadline

    // ANCHOR: answer
    /// Hands the late answer (from a timer, the upstream) to the connection `token`, for
    /// the request whose `effect` it was, if the connection is still open.
    pub fn answer(
        event_loop: &mut ServerLoop, token: Token, server: &mut Server, response: Response,
    ) {
        event_loop.with_handler(token, server, |connection: &mut Self, event_loop, _, server| {
            let Some((effect, framing)) = connection.effect.take() else { return };
            effect.cancel(event_loop, server); // what is left of it: the upstream's 504 timer
            connection.respond(&response, framing, server);
            connection.try_respond(event_loop, token, server); // the requests queued behind it
            connection.after_event(event_loop, token, server);
        });
    }
    // ANCHOR_END: answer

    fn fd(&self) -> i32 {
        self.stream.as_raw_fd()
    }
}

// ANCHOR: callbacks
impl Handler<Server> for Connection {
    fn on_readable(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        self.read_request();
        self.try_respond(event_loop, token, server);
        self.after_event(event_loop, token, server);
    }

    fn on_writable(&mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server) {
        // Sends first; then answers requests held back while output piled up.
        self.send();
        self.try_respond(event_loop, token, server);
        self.after_event(event_loop, token, server);
    }

    fn on_close(&mut self, event_loop: &mut ServerLoop, _: Token, server: &mut Server) {
        trace!("fd {}: closed", self.fd());
        // Stop whatever still works for us: the deadline timer, a `/sleep` or an upstream.
        if let Some((_, timer)) = self.deadline_timer.take() {
            event_loop.cancel_timer(timer);
        }
        if let Some((effect, _)) = self.effect.take() {
            effect.cancel(event_loop, server);
        }
        server.connection_closed(event_loop);
    }

    fn is_idle(&self) -> bool {
        self.owes_nothing() && self.received.is_empty()
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}
// ANCHOR_END: callbacks
