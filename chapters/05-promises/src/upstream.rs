//! `/upstream/PATH` without blocking: a small HTTP client, written as one flat promise chain.
//!
//! The steps are chapter 4's (connect, send, read until the answer is whole), raced against
//! a 5 s `delay` for the 504. But where chapter 4 nested each step inside the one before,
//! here each is a small function that returns its result (or a promise of it), and
//! [`fetch`] chains them top to bottom. A step that fails rejects, skipping all the rest.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::rc::Rc;

use shared::http::Response;
use shared::trace;
use shared::upstream::{self, ResponseReader, UpstreamParse};

use crate::event_loop::{EventLoop, Handler};
use crate::poll_backend::{Interest, Token};
use crate::promise::{self, race, Deferred, Outcome, Promise};
use crate::timers::TimerId;

// ANCHOR: fetch
/// Starts fetching `path_and_query` from `address`: returns what to stop should the fetch
/// end early and the promise of its answer (a 502 or 504 included), or a 502 to send now.
pub fn fetch<S: 'static>(
    event_loop: &mut EventLoop<S>, address: SocketAddr, path_and_query: &str,
) -> Result<(Token, TimerId, Promise<Response, S>), Response> {
    let stream = Rc::new(upstream::start_connecting(address).map_err(|_| cannot_connect())?);
    let request = upstream::request(path_and_query, address);
    // The loop's half of the socket, and a promise that resolves when it becomes writable.
    let (connected, writable) = Deferred::new(event_loop);
    let socket = UpstreamSocket { stream: stream.clone(), ready: Some(connected) };
    let socket = event_loop.register(socket, Interest { readable: false, writable: true });
    trace!("upstream {address}: connecting (token {})", socket.0);
    let (timeout, five_seconds) = promise::delay(event_loop, upstream::TIMEOUT);

    // ANCHOR: chain
    let fetched = writable
        .then(move |(), _, _| check_connected(stream))
        .then(move |stream, _, _| send(stream, &request))
        .and_then(move |stream, event_loop, state| {
            read_answer(event_loop, socket, state, stream, ResponseReader::new())
        });
    let timed_out = five_seconds.then(|(), _, _| Ok(upstream::gateway_timeout()));

    Ok((socket, timeout, race(fetched, timed_out)))
    // ANCHOR_END: chain
}
// ANCHOR_END: fetch

// ANCHOR: steps
/// Step 1: the handshake is over; `SO_ERROR` says how it went.
fn check_connected(stream: Rc<TcpStream>) -> Outcome<Rc<TcpStream>> {
    match stream.take_error() {
        Ok(None) => Ok(stream),
        _ => Err(cannot_connect()),
    }
}

/// Step 2: a request this small fits in a new socket's buffer at once.
fn send(stream: Rc<TcpStream>, request: &[u8]) -> Outcome<Rc<TcpStream>> {
    match (&*stream).write(request) {
        Ok(sent) if sent == request.len() => Ok(stream),
        _ => Err(upstream::bad_gateway("could not send the request upstream")),
    }
}

/// Step 3: reads until the answer is whole (or is not HTTP), waiting for the socket to be
/// readable again, and calling itself again, as often as it takes.
fn read_answer<S: 'static>(
    event_loop: &mut EventLoop<S>, socket: Token, state: &mut S, stream: Rc<TcpStream>,
    mut reader: ResponseReader,
) -> Promise<Response, S> {
    let mut chunk = [0u8; 16 * 1024];
    // At most 8 reads (128 KiB) a turn: a fast upstream must not keep the others waiting.
    for _ in 0..8 {
        let bytes = match (&*stream).read(&mut chunk) {
            Ok(count) => &chunk[..count], // empty at end of file
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => &[][..], // a reset: what came so far is all there is
        };
        let outcome = match reader.push(bytes) {
            UpstreamParse::Done(response) => Ok(response),
            UpstreamParse::Garbage(reason) => Err(upstream::bad_gateway(reason)),
            UpstreamParse::NeedMore => continue,
        };
        let (answer, promise) = Deferred::new(event_loop);
        answer.settle(outcome);
        return promise;
    }
    ready(event_loop, socket, state, Interest::READABLE).and_then(move |(), event_loop, state| {
        read_answer(event_loop, socket, state, stream, reader)
    })
}
// ANCHOR_END: steps

fn cannot_connect() -> Response {
    upstream::bad_gateway("could not connect to the upstream")
}

// ANCHOR: socket
/// The upstream socket, as the loop holds it: the stream (shared with the chain, which
/// reads and writes it), and the Deferred of the step waiting for it to be ready.
pub struct UpstreamSocket<S: 'static> {
    stream: Rc<TcpStream>,
    ready: Option<Deferred<(), S>>,
}

impl<S: 'static> Handler<S> for UpstreamSocket<S> {
    fn on_readable(&mut self, event_loop: &mut EventLoop<S>, token: Token, _: &mut S) {
        // Quiet until a step asks again: a ready socket left in the loop's interest would
        // wake it on every turn while the chain does something else (a busy loop).
        event_loop.set_interest(token, Interest::NONE);
        if let Some(ready) = self.ready.take() {
            ready.resolve(());
        }
    }

    fn on_writable(&mut self, event_loop: &mut EventLoop<S>, token: Token, state: &mut S) {
        self.on_readable(event_loop, token, state);
    }
}

impl<S> AsFd for UpstreamSocket<S> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

/// A promise that resolves when `socket` is next ready for `interest`.
fn ready<S: 'static>(
    event_loop: &mut EventLoop<S>, socket: Token, state: &mut S, interest: Interest,
) -> Promise<(), S> {
    let (deferred, promise) = Deferred::new(event_loop);
    event_loop.set_interest(socket, interest);
    event_loop.with_handler(socket, state, |socket: &mut UpstreamSocket<S>, _, _, _| {
        socket.ready = Some(deferred); // if the socket is gone, the Deferred drops: rejected
    });
    promise
}
// ANCHOR_END: socket
