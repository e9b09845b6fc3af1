//! `/upstream/PATH` without blocking: a small HTTP client, written as nested callbacks.
//!
//! Chapters 1 to 3 fetched with a blocking `TcpStream`, and while the upstream took its
//! time, the whole server waited. Here the fetch is a chain of steps. The loop runs each
//! one when the upstream's socket is ready, and each one starts the next:
//!
//! 1. connect: a non-blocking `connect` returns at once (`EINPROGRESS`); the socket
//!    becomes writable when the handshake is over, and `SO_ERROR` says how it went;
//! 2. send the request, as much as the kernel takes each time;
//! 3. read the answer until `parse_response` says it is whole (or garbage);
//! 4. hand it to the client's connection.
//!
//! Beside the chain runs a 5 s timer for the 504, and the two clean each other up:
//! whichever finishes first stops the other. The end of the chain cancels the timer. The
//! timer, if it fires first, deregisters the socket, which drops the callback waiting on
//! it and everything that callback captured. And if the client leaves before either, its
//! connection stops both ([`Fetch::abandon`]).
//!
//! The code is written as nested callbacks on purpose, the way a Node.js program of 2010
//! was: each step is a closure that captures what the later steps need and, when its work
//! is done, starts the next step with the next closure. Read [`fetch`] for the shape: it
//! drifts to the right with every step, and every level checks its own errors. Chapter 5
//! rewrites exactly this code with promises.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::libc;
use socket2::{Domain, Protocol, Socket, Type};

use shared::http::Response;
use shared::trace;
use shared::upstream::{self, UpstreamParse};

use crate::connection::READS_PER_TURN;
use crate::event_loop::{EventLoop, Handler, Interest, Token};
use crate::timers::TimerId;
use crate::{Server, Timer};

// ANCHOR: fetch
/// Starts fetching `path_and_query` from `address` for the client connection `client`,
/// and returns at once. The answer reaches the client later, through its `on_timer`:
/// `Timer::UpstreamAnswer`, or `Timer::UpstreamTimeout` after 5 s. If the fetch fails
/// before it has begun, the result is the 502 to answer with.
pub fn fetch(
    event_loop: &mut EventLoop<Server>, client: Token, address: SocketAddr, path_and_query: &str,
) -> Result<Fetch, Response> {
    // The 504 timer comes first, because every callback below needs its id: whichever of
    // them ends the fetch cancels it.
    let timeout = event_loop.add_timer_for(client, upstream::TIMEOUT, Timer::UpstreamTimeout);
    let request = upstream::request(path_and_query, address);

    let connecting = connect(event_loop, address, move |socket, event_loop, connected| {
        if let Err(reason) = connected {
            return finish(socket, event_loop, client, timeout, Err(reason));
        }
        socket.send(event_loop, request, move |socket, event_loop, sent| {
            if let Err(reason) = sent {
                return finish(socket, event_loop, client, timeout, Err(reason));
            }
            socket.read_answer(event_loop, move |socket, event_loop, answer| {
                finish(socket, event_loop, client, timeout, answer);
            });
        });
    });

    match connecting {
        Ok(socket) => Ok(Fetch { socket, timeout }),
        Err(reason) => {
            event_loop.cancel_timer(timeout);
            Err(upstream::bad_gateway(reason))
        }
    }
}
// ANCHOR_END: fetch

// ANCHOR: finish
/// The end of the chain, whatever the outcome. The socket finished before the timer, so
/// it cancels the timer, closes itself, and sends the client its answer.
fn finish(
    socket: &mut UpstreamSocket, event_loop: &mut EventLoop<Server>, client: Token,
    timeout: TimerId, outcome: Result<Response, &'static str>,
) {
    event_loop.cancel_timer(timeout);
    socket.close(event_loop);
    let response = outcome.unwrap_or_else(upstream::bad_gateway);
    trace!("upstream: done, {} for token {client}", response.status);
    // Why not call the client's connection right here? Because we are inside the upstream
    // socket's callback, and the loop runs one handler at a time, never one inside
    // another: that is what lets each of them borrow the whole loop. So we leave the
    // answer with the loop, as a timer for the client that is due at once. The loop
    // delivers it after this turn's other callbacks, in this same turn; and if the client
    // has gone by then, it is skipped like any timer whose registration has ended.
    let answer = Timer::UpstreamAnswer(Answer(response));
    event_loop.add_timer_for(client, Duration::ZERO, answer);
}
// ANCHOR_END: finish

/// A fetch in flight, as its client connection sees it: the two things to stop should
/// the fetch have to end early.
pub struct Fetch {
    socket: Token,
    timeout: TimerId,
}

impl Fetch {
    /// The timer fired first. Deregistering the socket drops its handler, and with it the
    /// callback that was waiting and everything that callback had captured: the socket
    /// closes, and no step of the chain will ever run again. The answer is a 504.
    pub fn time_out(&self, event_loop: &mut EventLoop<Server>) -> Response {
        trace!("upstream (token {}): timed out", self.socket);
        event_loop.deregister(self.socket);
        upstream::gateway_timeout()
    }

    /// The client left first: stop both the socket and the timer.
    pub fn abandon(&self, event_loop: &mut EventLoop<Server>) {
        trace!("upstream (token {}): abandoned", self.socket);
        event_loop.cancel_timer(self.timeout);
        event_loop.deregister(self.socket);
    }
}

/// An upstream's answer, on its way to the client inside a timer. `--trace` prints it
/// short: the status and the size, not the whole body.
#[derive(Clone)]
pub struct Answer(pub Response);

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (status, size) = (self.0.status, self.0.body.as_bytes().len());
        write!(f, "status {status}, {size} bytes")
    }
}

// ANCHOR: socket
/// The upstream socket, as the loop holds it: the stream, what has been read from it so
/// far, and the one callback to run when the socket is next ready. Each step of the chain
/// puts the next one here.
pub struct UpstreamSocket {
    stream: TcpStream,
    /// Its registration, which the loop tells it on every callback (see `ready`).
    token: Option<Token>,
    received: Vec<u8>,
    next: Option<Step>,
}

/// What to do once the socket is ready. It gets the socket back, to read, write, or wait
/// again with another step.
type Step = Box<dyn FnOnce(&mut UpstreamSocket, &mut EventLoop<Server>)>;

/// What comes after a step: a callback that gets the socket back, with the step's result
/// (an error is the reason the 502 gives). A trait only to give that long closure type a
/// short name: any such closure is a `Then`.
trait Then<T>: FnOnce(&mut UpstreamSocket, &mut EventLoop<Server>, T) + 'static {}

impl<T, F> Then<T> for F where F: FnOnce(&mut UpstreamSocket, &mut EventLoop<Server>, T) + 'static {}

impl Handler<Server> for UpstreamSocket {
    fn on_readable(&mut self, event_loop: &mut EventLoop<Server>, token: Token, _: &mut Server) {
        self.ready(event_loop, token);
    }

    fn on_writable(&mut self, event_loop: &mut EventLoop<Server>, token: Token, _: &mut Server) {
        self.ready(event_loop, token);
    }
}

impl UpstreamSocket {
    /// The socket is ready: run the step that was waiting for it.
    fn ready(&mut self, event_loop: &mut EventLoop<Server>, token: Token) {
        self.token = Some(token);
        if let Some(step) = self.next.take() {
            step(self, event_loop);
        }
    }

    /// "When you are next ready for `interest`, run `step`."
    fn wait_for(
        &mut self, event_loop: &mut EventLoop<Server>, interest: Interest,
        step: impl FnOnce(&mut UpstreamSocket, &mut EventLoop<Server>) + 'static,
    ) {
        self.next = Some(Box::new(step));
        // Steps run only from `ready`, so the token is always known here.
        if let Some(token) = self.token {
            if let Err(error) = event_loop.set_interest(token, interest) {
                // Cannot happen for a registered socket. If it did, the step would never
                // run, and the 504 timer would clean up after it.
                trace!("upstream (token {token}): cannot wait: {error}");
            }
        }
    }

    /// Done with the socket. We are inside its own callback, so the loop drops it, which
    /// closes the stream, as soon as that returns.
    fn close(&mut self, event_loop: &mut EventLoop<Server>) {
        if let Some(token) = self.token {
            event_loop.deregister(token);
        }
    }
}
// ANCHOR_END: socket

// ANCHOR: steps
/// Step 1: starts connecting to `address` without waiting, registers the socket with the
/// loop, and calls `then` once the connection is made or has failed. Returns the socket's
/// token, or the reason for a 502 if it failed on the spot.
fn connect(
    event_loop: &mut EventLoop<Server>, address: SocketAddr,
    then: impl Then<Result<(), &'static str>>,
) -> Result<Token, &'static str> {
    let stream = start_connecting(address).map_err(|error| {
        trace!("upstream {address}: {error}");
        "could not connect to the upstream"
    })?;
    let fd = stream.as_raw_fd();
    // Writable: the handshake is over, one way or the other. `SO_ERROR` says which.
    let connected = move |socket: &mut UpstreamSocket, event_loop: &mut _| {
        let result = match socket.stream.take_error() {
            Ok(None) => Ok(()),
            Ok(Some(error)) | Err(error) => {
                trace!("upstream {address}: {error}");
                Err("could not connect to the upstream")
            }
        };
        then(socket, event_loop, result);
    };
    let socket = UpstreamSocket {
        stream,
        token: None,
        received: Vec::new(),
        next: Some(Box::new(connected)),
    };
    let token = event_loop.register(fd, Interest::WRITABLE, socket).map_err(|error| {
        trace!("upstream {address}: cannot register: {error}");
        "could not connect to the upstream"
    })?;
    trace!("upstream {address}: connecting (fd {fd}, token {token})");
    Ok(token)
}

/// A non-blocking `connect`: returns at once, usually before the connection is made.
fn start_connecting(address: SocketAddr) -> io::Result<TcpStream> {
    let domain = Domain::for_address(address);
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    match socket.connect(&address.into()) {
        // Connected already: it can happen on loopback.
        Ok(()) => {}
        // The usual answer, "in progress": the kernel goes on with the handshake without
        // us. An interrupted non-blocking connect goes on just the same.
        Err(error)
            if error.raw_os_error() == Some(libc::EINPROGRESS)
                || error.kind() == io::ErrorKind::Interrupted => {}
        // Refused on the spot, no route to the host, out of descriptors...
        Err(error) => return Err(error),
    }
    Ok(socket.into())
}

impl UpstreamSocket {
    /// Step 2: sends `request`, as much as the kernel takes each time, then calls `then`.
    fn send(
        &mut self, event_loop: &mut EventLoop<Server>, mut request: Vec<u8>,
        then: impl Then<Result<(), &'static str>>,
    ) {
        while !request.is_empty() {
            match self.stream.write(&request) {
                Ok(0) => return then(self, event_loop, Err("the upstream took nothing")),
                // A partial write is normal: keep what the kernel did not take, go on.
                Ok(count) => {
                    request.drain(..count);
                }
                // The kernel's buffer is full: wait for room, then carry on with the rest,
                // by calling this same method again from the next step.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    let rest = move |socket: &mut UpstreamSocket, event_loop: &mut _| {
                        socket.send(event_loop, request, then)
                    };
                    return self.wait_for(event_loop, Interest::WRITABLE, rest);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    trace!("upstream: write failed: {error}");
                    let reason = "could not send the request to the upstream";
                    return then(self, event_loop, Err(reason));
                }
            }
        }
        then(self, event_loop, Ok(()));
    }

    /// Step 3: reads the answer until `parse_response` says it is whole, or garbage, then
    /// calls `then` with it.
    fn read_answer(
        &mut self, event_loop: &mut EventLoop<Server>,
        then: impl Then<Result<Response, &'static str>>,
    ) {
        let mut chunk = [0u8; 16 * 1024];
        // As for a client: at most READS_PER_TURN reads, then the others get their turn.
        for _ in 0..READS_PER_TURN {
            let count = match self.stream.read(&mut chunk) {
                Ok(count) => count,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    trace!("upstream: read failed: {error}");
                    let reason = "lost the connection to the upstream";
                    return then(self, event_loop, Err(reason));
                }
            };
            self.received.extend_from_slice(&chunk[..count]);
            // We asked the upstream to close after its answer, so end-of-file is how an
            // answer without a `Content-Length` ends.
            let at_eof = count == 0;
            let outcome = match upstream::parse_response(&self.received, at_eof) {
                UpstreamParse::Done(response) => Ok(response),
                UpstreamParse::Garbage(reason) => Err(reason),
                // Never at end of file, where an answer is whole or garbage. But if it
                // were, reading on would spin on end-of-file forever.
                UpstreamParse::NeedMore if at_eof => Err("the upstream closed too early"),
                UpstreamParse::NeedMore => continue,
            };
            return then(self, event_loop, outcome);
        }
        // Nothing more for now: wait for more, then carry on, again by this same method.
        let more = move |socket: &mut UpstreamSocket, event_loop: &mut _| {
            socket.read_answer(event_loop, then)
        };
        self.wait_for(event_loop, Interest::READABLE, more);
    }
}

// ANCHOR_END: steps
