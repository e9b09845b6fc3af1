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
//!   client left, error, reset, timed out: any state goes straight to Done ────────────────┘
//! ```
//!
//! Since chapter 3 the event loop calls the connection (`on_readable`, `on_writable`; see
//! the `Handler` impl), and one connection serves many requests. HTTP/1.1 keeps the
//! connection open unless a request says `Connection: close`; a client may even send
//! several requests without waiting for the answers ("pipelining"), and gets the answers
//! in order.
//!
//! New in chapter 4, time:
//!
//! - A request may have to wait for an effect: `/sleep` for a timer, `/upstream/` for the
//!   upstream. The connection is then "waiting for effect" (`waiting` is set; still in
//!   Reading): the requests pipelined behind it wait too, in order, and the loop calls
//!   `on_timer` when the answer is ready (since chapter 5, the end of the effect's promise
//!   chain posts it: `Timer::Answer`). If the client leaves first, its timer or fetch
//!   is cancelled. Since chapter 6, `/files/` waits the same way, for the thread pool.
//! - A client has only so long to make its move (`deadline`): an idle keep-alive
//!   connection is closed after `--keep-alive-timeout`, and a client that has not sent a
//!   whole request within `--header-timeout` gets 408 and is closed (slowloris).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Instant;

use shared::args::Config;
use shared::http::{self, response::Framing, Parse, Response, Version};
use shared::trace;

use crate::event_loop::{EventLoop, Handler, Interest, Token};
use crate::timers::TimerId;
use crate::{Answer, Effect, Reply, Server, Timer};

// ANCHOR: limits
/// How much a lingering connection may send us before we stop being polite and close.
const MAX_DISCARD: usize = 1024 * 1024;

/// How many reads one connection may do per turn of the loop (16 KiB each, so 128 KiB).
pub const READS_PER_TURN: usize = 8;

/// Unsent output above which we stop reading and answering this client (backpressure).
const MAX_PENDING_OUTPUT: usize = 1024 * 1024;

/// Received bytes above which we stop reading while a request waits for its effect: the
/// requests behind it are not parsed until then, so nothing else would limit them.
const MAX_QUEUED_INPUT: usize = 64 * 1024;

/// A buffer that grew beyond this (a big file, a big upload) is given back once empty, so
/// that an idle keep-alive connection does not sit on megabytes. Below it, it is reused.
const KEEP_CAPACITY: usize = 64 * 1024;
// ANCHOR_END: limits

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
    /// "Waiting for effect": a request whose answer will come from a timer or from the
    /// upstream (or, since chapter 6, the thread pool). Until it does, the requests behind
    /// it wait in `received`.
    waiting: Option<Waiting>,
    /// When the client's clock started: when it connected, or when its last answer was
    /// sent. Its timeouts count from here (see `deadline`).
    timeout_from: Instant,
    /// The one timer that enforces those timeouts, and when it is due.
    deadline_timer: Option<(Instant, TimerId)>,
    /// It has answered a request, so an empty `received` means an idle keep-alive
    /// connection rather than a new client that has yet to speak.
    answered_before: bool,
}
// ANCHOR_END: connection

// ANCHOR: waiting
/// A request whose answer is not ready yet: what it waits for, and how to frame the
/// answer when it comes (the request itself is gone by then).
struct Waiting {
    effect: Effect,
    version: Version,
    head_only: bool,
    keep_alive: bool,
}
// ANCHOR_END: waiting

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
            waiting: None,
            timeout_from: Instant::now(),
            deadline_timer: None,
            answered_before: false,
        }
    }

    fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Waiting for a next request with nothing half-received, nothing to send and no answer
    /// pending: the connections a graceful shutdown may close at once.
    fn is_idle(&self) -> bool {
        self.state == State::Reading
            && self.waiting.is_none()
            && self.received.is_empty()
            && self.pending_output() == 0
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
        // itself: its requests wait in the kernel, then its sends stall. The same while a
        // request waits for its effect and many more have queued up behind it.
        let queue_full = self.waiting.is_some() && self.received.len() >= MAX_QUEUED_INPUT;
        if !self.peer_closed && self.pending_output() <= MAX_PENDING_OUTPUT && !queue_full {
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
    /// usually in one `write`. A request whose answer must wait stops the line there.
    fn try_respond(
        &mut self, event_loop: &mut EventLoop<Server>, token: Token, server: &mut Server,
    ) {
        let mut start = 0; // where the next unanswered request begins in `received`
        let mut blocked = false; // the client is not taking our output: sending can wait
        while self.state == State::Reading && self.waiting.is_none() {
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
            let (reply, version, head_only, keep_alive, consumed) =
                match http::parse(&self.received[start..]) {
                    Parse::Complete { request, consumed } => {
                        // The whole request is in: the client's clock stops, as nginx
                        // stops its header timer (`after_event` starts it again).
                        if let Some((_, timer)) = self.deadline_timer.take() {
                            event_loop.cancel_timer(timer);
                        }
                        let head_only = request.method == "HEAD";
                        let stats = server.stats(event_loop);
                        (
                            super::run_app(
                                &request,
                                &server.config,
                                &server.filesystem,
                                &stats,
                                event_loop,
                                token,
                            ),
                            request.version,
                            head_only,
                            request.keep_alive,
                            consumed,
                        )
                    }
                    // After a framing error we cannot tell where a next request would
                    // begin, so everything after it goes: answer, then close.
                    Parse::Invalid(error) => (
                        Reply::Now(Response::from_parse_error(error)),
                        Version::Http11,
                        false,
                        false,
                        self.received.len() - start,
                    ),
                    Parse::Incomplete => break, // wait for more bytes
                };
            start += consumed;
            // ANCHOR: wait_for_effect
            match reply {
                Reply::Now(response) => {
                    self.respond(&response, version, head_only, keep_alive, server);
                }
                // The answer will come later, when the effect's promise settles, through
                // `on_timer`. Until then this request keeps its place in line: the ones
                // pipelined behind it stay in `received`, unanswered, so that the answers
                // still go out in order.
                Reply::Later(effect) => {
                    self.waiting = Some(Waiting { effect, version, head_only, keep_alive });
                }
            }
            // ANCHOR_END: wait_for_effect
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

    // ANCHOR: respond
    /// Adds the answer to one request to the output, and decides whether it is the last.
    fn respond(
        &mut self, response: &Response, version: Version, head_only: bool, keep_alive: bool,
        server: &mut Server,
    ) {
        // ANCHOR: keep_alive
        // Keep the connection if the client wants to (HTTP/1.1 unless it said
        // `Connection: close`; HTTP/1.0 only if it said `keep-alive`), the response
        // allows it (not an answer to a bad request), and we are not shutting down.
        // `Framing` writes the matching `Connection` header.
        let keep_alive = keep_alive && !response.close && !server.shutting_down;
        // ANCHOR_END: keep_alive
        let framing = Framing { version, keep_alive, head_only };
        let (name, date) = (server.config.chapter, &server.date);
        http::response::write_response(&mut self.out, response, &framing, name, date);
        server.requests_served += 1;
        self.answered_before = true;
        if !keep_alive {
            self.state = State::Writing; // the last response: send it, then close
        }
    }
    // ANCHOR_END: respond

    /// The effect a request waited for is over, with this answer: it goes out in the
    /// request's place in line, and the requests behind it may go on.
    fn finish_waiting(
        &mut self, event_loop: &mut EventLoop<Server>, response: Response, server: &mut Server,
    ) {
        // Always `Some`: an effect's chain answers once. But a stray message must not
        // answer a request that is not waiting.
        let Some(waiting) = self.waiting.take() else {
            return;
        };
        // What lost the race, if anything, is still running: a 5 s timer, a socket.
        waiting.effect.cancel(event_loop);
        self.respond(&response, waiting.version, waiting.head_only, waiting.keep_alive, server);
    }

    // ANCHOR: deadline
    /// When this client runs out of time, if we are waiting for it at all. Its clock
    /// starts when it connects or when its last answer has been sent (`timeout_from`), and
    /// runs only while the next move is the client's: not while a request waits for its
    /// effect, nor while we still have output to send.
    fn deadline(&self, config: &Config) -> Option<Instant> {
        let timeout = match self.state {
            // An idle keep-alive connection: it may send its next request, or go.
            State::Reading if self.is_idle() && self.answered_before => config.keep_alive_timeout,
            // A new client, or a request under way. (The parser tells us only "complete"
            // or not, so a body counts as part of the head here: a client that trickles
            // in a body one byte at a time is the same attack.)
            State::Reading if self.waiting.is_none() && self.pending_output() == 0 => {
                config.header_timeout
            }
            // We said goodbye: it has as long to close its side as an idle client has.
            State::Lingering => config.keep_alive_timeout,
            _ => return None,
        };
        Some(self.timeout_from + timeout)
    }

    /// Keeps the connection's one deadline timer in step with `deadline`, after every
    /// event. It only touches the timers when the deadline has moved: in a keep-alive
    /// exchange, once or twice per request (a request began; its answer was sent).
    ///
    /// nginx and Redis do it the other way round: they store the deadline, never cancel,
    /// and let a timer that fires early check the stored deadline and set itself again.
    /// That saves a cancel per request, at the price of timers that fire for nothing. A
    /// cancel is cheap here (`Timers::cancel` is O(1)), and a timer that means what it
    /// says is easier to follow.
    fn keep_deadline(&mut self, event_loop: &mut EventLoop<Server>, token: Token, config: &Config) {
        let deadline = self.deadline(config);
        if self.deadline_timer.map(|(due, _)| due) == deadline {
            return;
        }
        if let Some((_, timer)) = self.deadline_timer.take() {
            event_loop.cancel_timer(timer);
        }
        if let Some(due) = deadline {
            let delay = due.saturating_duration_since(Instant::now());
            let timer = event_loop.add_timer_for(token, delay, Timer::Deadline);
            self.deadline_timer = Some((due, timer));
        }
    }
    // ANCHOR_END: deadline

    // ANCHOR: timeouts
    /// The deadline timer fired: the client took too long. (No need to check the deadline
    /// again: `keep_deadline` replaces the timer whenever the deadline moves, so a timer
    /// that fires is always for the current one.)
    fn deadline_passed(&mut self, server: &mut Server) {
        self.deadline_timer = None; // a one-off timer is gone once it has fired
        if self.state == State::Reading && !(self.is_idle() && self.answered_before) {
            // It connected or started a request, and has not sent a whole one in time:
            // perhaps slow, perhaps slowloris, holding a connection with a trickle of
            // bytes. 408, then close. What it did send is thrown away.
            trace!("fd {}: header timeout, 408", self.fd());
            self.received.clear();
            let response = Response {
                close: true,
                ..Response::error(408, "no complete request within the header timeout")
            };
            self.respond(&response, Version::Http11, false, false, server);
        } else {
            // Idle (or lingering) for too long. Nothing to answer: a response it did not
            // ask for could be mistaken for the answer to the request it is about to send.
            trace!("fd {}: idle timeout, closing", self.fd());
            self.state = State::Done;
        }
    }
    // ANCHOR_END: timeouts

    /// Gives back the buffers kept for the next request (see `Timer::TrimIdleConnections`).
    fn trim_buffers(&mut self) {
        if self.is_idle() {
            self.received = Vec::new();
            self.out = Vec::new();
        }
    }

    /// Closing: stop whatever would still call back for us, so that nothing is left behind
    /// (`/stats` shows what is: `timers_pending`).
    fn stop_timers(&mut self, event_loop: &mut EventLoop<Server>) {
        if let Some((_, timer)) = self.deadline_timer.take() {
            event_loop.cancel_timer(timer);
        }
        if let Some(waiting) = self.waiting.take() {
            waiting.effect.cancel(event_loop);
        }
    }

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
            self.timeout_from = Instant::now(); // all answered: the client's move again
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
        self.state = if self.peer_closed { State::Done } else { State::Lingering };
    }
    // ANCHOR_END: start_lingering

    // ANCHOR: after_event
    /// After every callback: finish if there is nothing left to do, otherwise tell the
    /// loop what to wait for next.
    fn after_event(
        &mut self, event_loop: &mut EventLoop<Server>, token: Token, server: &mut Server,
    ) {
        if self.state == State::Reading && self.pending_output() == 0 {
            // Every complete request is answered and sent (`try_respond` stops early
            // only while output is pending), or waits for its effect. Two reasons to
            // finish anyway:
            let waiting = self.waiting.as_ref();
            if self.peer_closed
                && waiting.map_or(true, |request| request.effect.ends_on_half_close())
            {
                // The client shut its side: no further request can ever complete. And if
                // one is waiting, we cannot tell a client that half-closed from one that
                // left, with its answer perhaps seconds away. We take it that it left, as
                // nginx does for a proxied request, and cancel the effect (below).
                // (New in chapter 6: not for every effect. See `ends_on_half_close`.)
                self.state = State::Done;
            } else if server.shutting_down && self.is_idle() {
                // Idle while the server shuts down: no reason to wait for a request.
                self.state = State::Done;
            }
        }
        if !self.is_done() {
            self.keep_deadline(event_loop, token, &server.config);
            if let Err(error) = event_loop.set_interest(token, self.interest()) {
                trace!("fd {}: cannot change interest: {error}", self.fd());
                self.state = State::Done;
            }
        }
        if self.is_done() {
            trace!("fd {}: closing", self.fd());
            self.stop_timers(event_loop);
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
/// How the event loop drives a connection. All three callbacks end the same way: answer
/// what can be answered, send what can be sent, and say what to wait for next.
impl Handler<Server> for Connection {
    fn on_readable(
        &mut self, event_loop: &mut EventLoop<Server>, token: Token, server: &mut Server,
    ) {
        self.read_available();
        self.try_respond(event_loop, token, server);
        self.after_event(event_loop, token, server);
    }

    fn on_writable(
        &mut self, event_loop: &mut EventLoop<Server>, token: Token, server: &mut Server,
    ) {
        // `try_respond` sends first if output is piled up, then answers the requests it
        // held back because of it, then sends again.
        self.try_respond(event_loop, token, server);
        self.after_event(event_loop, token, server);
    }

    // ANCHOR: on_timer
    /// One of this connection's timers fired, its idle callback is up, or (new in chapter
    /// 5) a settled promise posted it a message through the outbox. The `Timer` says what.
    fn on_timer(
        &mut self, event_loop: &mut EventLoop<Server>, token: Token, server: &mut Server,
        timer: Timer,
    ) {
        match timer {
            // Nothing but what every callback ends with, below: set the deadline timer.
            Timer::Accepted => {}
            Timer::Answer(Answer(response)) => {
                self.finish_waiting(event_loop, response, server);
            }
            Timer::Deadline => self.deadline_passed(server),
            Timer::TrimBuffers => self.trim_buffers(),
            // The server's own, or an upstream socket's; never sent to a connection.
            Timer::RefreshDate
            | Timer::ResumeAccepting
            | Timer::TrimIdleConnections
            | Timer::Wait(_) => {}
        }
        // Then as after any event: answer what can be answered now (the requests that
        // waited behind this one), send, and say what to wait for next.
        self.try_respond(event_loop, token, server);
        self.after_event(event_loop, token, server);
    }
    // ANCHOR_END: on_timer
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
