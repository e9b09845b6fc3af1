//! `/upstream/PATH` without blocking: a small HTTP client, written as one flat promise chain.
//!
//! Chapters 1 to 3 fetched with a blocking `TcpStream`, and while the upstream took its
//! time, the whole server waited. Here the fetch is a promise chain. Each step waits for
//! the upstream's socket to be ready (a promise its handler resolves), and the next step
//! then runs from the loop's ready queue:
//!
//! 1. connect: a non-blocking `connect` returns at once (`EINPROGRESS`); the socket
//!    becomes writable when the handshake is over, and `SO_ERROR` says how it went;
//! 2. send the request, as much as the kernel takes each time;
//! 3. read the answer until `parse_response` says it is whole (or garbage);
//! 4. resolve the fetch's promise with it; `answer_later` in `main.rs` hands it to the
//!    client's connection.
//!
//! Beside the chain runs a 5 s `delay` for the 504, and the two race ([`race`]): the
//! client gets whichever answer comes first. The loser is still running then, so once the
//! answer is in, the client's connection stops what is left of both: it cancels the timer
//! and closes the socket ([`Fetch::abandon`]). It does the same if the client leaves first.
//!
//! Chapter 4 wrote this code as nested callbacks, each step a closure that captured what
//! the later steps needed and, when its work was done, started the next step with the next
//! closure: it drifted to the right with every step, and every level checked its own
//! errors. Here each step is a small function that returns a promise of its result, and
//! [`fetch`] chains them in one flat line that reads top to bottom. A step that fails
//! rejects its promise, and the rejection skips every step after it, down to one `catch`.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::rc::Rc;

use nix::libc;
use socket2::{Domain, Protocol, Type};

use shared::http::Response;
use shared::trace;
use shared::upstream::{self, UpstreamParse};

use crate::connection::READS_PER_TURN;
use crate::event_loop::{EventLoop, Handler, Interest, Outbox, Token};
use crate::promise::{race, Deferred, Promise, ReadyQueue};
use crate::timers::TimerId;
use crate::{Server, Timer};

// ANCHOR: fetch
/// Starts fetching `path_and_query` from `address`, and returns at once: what to stop
/// should the fetch end early, and the promise of the answer, a 502 or a 504 included.
/// If the fetch fails before it has begun, the result is the 502 to answer with.
pub fn fetch(
    event_loop: &mut EventLoop<Server>, address: SocketAddr, path_and_query: &str,
) -> Result<(Fetch, Promise<Response, Response>), Response> {
    let request = upstream::request(path_and_query, address);
    let (socket, connected) = connect(event_loop, address).map_err(upstream::bad_gateway)?;
    let (timeout, five_seconds) = event_loop.delay(upstream::TIMEOUT);

    // ANCHOR: chain
    let fetched = connected
        .and_then(move |socket| send(socket, request))
        .and_then(read_answer)
        .catch(|bad_gateway| {
            // The one place for errors. Whichever step failed, its 502 skipped the steps
            // after it and lands here, where it becomes the answer like any other.
            trace!("promise: upstream failed: {}", bad_gateway.status);
            bad_gateway
        });
    let timed_out = five_seconds.then(|()| upstream::gateway_timeout());
    let answer = race(fetched, timed_out);
    // ANCHOR_END: chain

    Ok((Fetch { socket, timeout }, answer))
}
// ANCHOR_END: fetch

/// A fetch in flight, as its client connection sees it: the two things to stop once the
/// race is over (one of them lost), or should the client leave first.
pub struct Fetch {
    socket: Token,
    timeout: TimerId,
}

impl Fetch {
    /// Stops both the socket and the timer. Deregistering the socket drops the loop's
    /// handle on it ([`UpstreamSocket`]): the socket closes, and a step still waiting for
    /// it is rejected with `Abandoned` (its Deferred is dropped), which ends its chain.
    /// Cancelling the timer does the same to the `delay`. Either may be over already:
    /// stopping it again does nothing.
    pub fn abandon(&self, event_loop: &mut EventLoop<Server>) {
        trace!("upstream (token {}): abandoned", self.socket);
        event_loop.cancel_timer(self.timeout);
        event_loop.deregister(self.socket);
    }
}

// ANCHOR: socket
/// The upstream socket, as the chain holds it: what a step is given, and hands on to the
/// next. The loop holds the same socket as an [`UpstreamSocket`]; the two share it.
struct Socket {
    token: Token,
    shared: Rc<Shared>,
}

/// The upstream socket, as the loop holds it: the registration that keeps the socket open
/// and, when the socket is ready, resolves the step that is waiting for it.
pub struct UpstreamSocket {
    shared: Rc<Shared>,
}

/// What the two handles share: the stream, what has been read from it so far, the one
/// step waiting for it, and the two ways a step reaches the loop.
struct Shared {
    stream: TcpStream,
    received: RefCell<Vec<u8>>,
    waiting: RefCell<Option<Deferred<Socket, Response>>>,
    ready: ReadyQueue,
    outbox: Outbox<Timer>,
}

impl Handler<Server> for UpstreamSocket {
    fn on_readable(&mut self, event_loop: &mut EventLoop<Server>, token: Token, _: &mut Server) {
        self.ready(event_loop, token);
    }

    fn on_writable(&mut self, event_loop: &mut EventLoop<Server>, token: Token, _: &mut Server) {
        self.ready(event_loop, token);
    }

    /// A step asked to wait for the socket (see `Socket::wait_for`).
    fn on_timer(
        &mut self, event_loop: &mut EventLoop<Server>, token: Token, _: &mut Server, timer: Timer,
    ) {
        if let Timer::Wait(interest) = timer {
            if let Err(error) = event_loop.set_interest(token, interest) {
                // Cannot happen for a registered socket. If it did, the step would never
                // be resolved, and the 504 would win the race.
                trace!("upstream (token {token}): cannot wait: {error}");
            }
        }
    }
}

impl UpstreamSocket {
    /// The socket is ready: resolve the step that was waiting for it, handing it the socket.
    fn ready(&mut self, event_loop: &mut EventLoop<Server>, token: Token) {
        // Watch nothing until the next step asks: `poll` is level-triggered, and would
        // report the socket ready on every turn until then.
        let _ = event_loop.set_interest(token, Interest::NONE);
        if let Some(deferred) = self.shared.waiting.take() {
            let shared = Rc::clone(&self.shared);
            deferred.resolve(Socket { token, shared });
        }
    }
}

impl Socket {
    /// "When you are next ready for `interest`, resolve": the promise of this same socket,
    /// resolved from the loop's `UpstreamSocket::ready`.
    fn wait_for(self, interest: Interest) -> Promise<Socket, Response> {
        let (deferred, promise) = Deferred::new(&self.shared.ready);
        *self.shared.waiting.borrow_mut() = Some(deferred);
        // Only the loop may change what it watches, and a step runs outside the loop's
        // callbacks. So it leaves the loop a message, which the loop hands to
        // `UpstreamSocket::on_timer` at the end of this turn, before it next waits.
        self.shared.outbox.post(self.token, Timer::Wait(interest));
        // `self` is dropped here: the socket comes back through the promise, from the
        // loop's handle, rather than captured by the next step. A captured socket would
        // hold the Deferred that holds the step that holds the socket: a cycle of `Rc`s,
        // never freed.
        promise
    }

    /// This step is done without waiting: the next one gets the socket (on a later turn,
    /// from the ready queue, like every step).
    fn done(self) -> Promise<Socket, Response> {
        let (deferred, promise) = Deferred::new(&self.shared.ready);
        deferred.resolve(self);
        promise
    }

    /// A promise settled already: a step's result, or the reason for its 502. (Its next
    /// step still waits for the ready queue, like every step.)
    fn settled<T: 'static>(&self, outcome: Result<T, &'static str>) -> Promise<T, Response> {
        let (deferred, promise) = Deferred::new(&self.shared.ready);
        deferred.settle(outcome.map_err(upstream::bad_gateway));
        promise
    }

    fn stream(&self) -> &TcpStream {
        &self.shared.stream
    }
}
// ANCHOR_END: socket

// ANCHOR: steps
/// Step 1: starts connecting to `address` without waiting and registers the socket with the
/// loop. Returns the socket's token, and the promise of the connected socket; or the
/// reason for a 502 if it failed on the spot.
fn connect(
    event_loop: &mut EventLoop<Server>, address: SocketAddr,
) -> Result<(Token, Promise<Socket, Response>), &'static str> {
    let stream = start_connecting(address).map_err(|error| {
        trace!("upstream {address}: {error}");
        "could not connect to the upstream"
    })?;
    let fd = stream.as_raw_fd();
    let (deferred, writable) = Deferred::new(event_loop.ready());
    let shared = Rc::new(Shared {
        stream,
        received: RefCell::default(),
        waiting: RefCell::new(Some(deferred)),
        ready: event_loop.ready().clone(),
        outbox: event_loop.outbox(),
    });
    let token = event_loop.register(fd, Interest::WRITABLE, UpstreamSocket { shared }).map_err(
        |error| {
            trace!("upstream {address}: cannot register: {error}");
            "could not connect to the upstream"
        },
    )?;
    trace!("upstream {address}: connecting (fd {fd}, token {token})");
    // Writable: the handshake is over, one way or the other. `SO_ERROR` says which.
    let connected = writable.and_then(move |socket| match socket.stream().take_error() {
        Ok(None) => {
            trace!("promise: upstream {address} connected");
            socket.done()
        }
        Ok(Some(error)) | Err(error) => {
            trace!("upstream {address}: {error}");
            socket.settled(Err("could not connect to the upstream"))
        }
    });
    Ok((token, connected))
}

/// A non-blocking `connect`: returns at once, usually before the connection is made.
fn start_connecting(address: SocketAddr) -> io::Result<TcpStream> {
    let domain = Domain::for_address(address);
    let socket = socket2::Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
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

/// Step 2: sends `request`, as much as the kernel takes each time; the promise resolves
/// with the socket once all of it is sent.
fn send(socket: Socket, mut request: Vec<u8>) -> Promise<Socket, Response> {
    while !request.is_empty() {
        match socket.stream().write(&request) {
            Ok(0) => return socket.settled(Err("the upstream took nothing")),
            // A partial write is normal: keep what the kernel did not take, go on.
            Ok(count) => {
                request.drain(..count);
            }
            // The kernel's buffer is full: wait for room, then carry on with the rest,
            // by calling this same function again as the next step.
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                let rest = move |socket| send(socket, request);
                return socket.wait_for(Interest::WRITABLE).and_then(rest);
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                trace!("upstream: write failed: {error}");
                let reason = "could not send the request to the upstream";
                return socket.settled(Err(reason));
            }
        }
    }
    trace!("promise: upstream request sent");
    socket.done()
}

/// Step 3: reads the answer until `parse_response` says it is whole, or garbage; the
/// promise resolves with it.
fn read_answer(socket: Socket) -> Promise<Response, Response> {
    let mut chunk = [0u8; 16 * 1024];
    // As for a client: at most READS_PER_TURN reads, then the others get their turn.
    for _ in 0..READS_PER_TURN {
        let count = match socket.stream().read(&mut chunk) {
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                trace!("upstream: read failed: {error}");
                let reason = "lost the connection to the upstream";
                return socket.settled(Err(reason));
            }
        };
        let mut received = socket.shared.received.borrow_mut();
        received.extend_from_slice(&chunk[..count]);
        // We asked the upstream to close after its answer, so end-of-file is how an
        // answer without a `Content-Length` ends.
        let at_eof = count == 0;
        let outcome = match upstream::parse_response(&received, at_eof) {
            UpstreamParse::Done(response) => Ok(response),
            UpstreamParse::Garbage(reason) => Err(reason),
            // Never at end of file, where an answer is whole or garbage. But if it
            // were, reading on would spin on end-of-file forever.
            UpstreamParse::NeedMore if at_eof => Err("the upstream closed too early"),
            UpstreamParse::NeedMore => continue,
        };
        if let Ok(response) = &outcome {
            trace!("promise: upstream answered {}", response.status);
        }
        return socket.settled(outcome);
    }
    // Nothing more for now: wait for more, then carry on, again by this same function.
    socket.wait_for(Interest::READABLE).and_then(read_answer)
}

// ANCHOR_END: steps
