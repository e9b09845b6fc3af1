//! `/upstream/PATH` without blocking: a small HTTP client in the same loop, as nested
//! callbacks.
//!
//! The fetch is a chain of steps, each run by the loop when the upstream's socket is ready:
//! connect (a non-blocking `connect` returns at once; the socket becomes writable when the
//! handshake is over), send, read the answer until it is whole, hand it over. Beside it
//! runs a 5 s timer for the 504. The steps are nested on purpose, as a Node.js program of
//! 2010 was: read [`fetch`], which drifts to the right, each step checking its own
//! errors. Chapter 5 rewrites exactly this code with promises.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};

use shared::http::Response;
use shared::trace;
use shared::upstream::{self, ResponseReader, UpstreamParse};

use crate::event_loop::{EventLoop, Handler};
use crate::poll_backend::{Interest, Token};
use crate::timers::TimerId;

/// Whoever asked: called once, with the answer or the 502 or 504 that replaces it.
type Done<S> = Box<dyn FnOnce(Response, &mut EventLoop<S>, &mut S)>;
/// What to do once the socket is ready: gets the socket back, to go on.
type Step<S> = Box<dyn FnOnce(&mut UpstreamSocket<S>, &mut EventLoop<S>, Token, &mut S)>;

// ANCHOR: fetch
/// Starts fetching `path_and_query` from `address` and returns at once; `done` gets the
/// answer later. A fetch that fails on the spot is the 502 to answer with now.
pub fn fetch<S: 'static>(
    event_loop: &mut EventLoop<S>, address: SocketAddr, path_and_query: &str,
    done: impl FnOnce(Response, &mut EventLoop<S>, &mut S) + 'static,
) -> Result<(Token, TimerId), Response> {
    let cannot_connect = || upstream::bad_gateway("could not connect to the upstream");
    let stream = upstream::start_connecting(address).map_err(|_| cannot_connect())?;
    let request = upstream::request(path_and_query, address);

    // Step 1: connected (or not). Its last act starts step 2, whose last act starts 3.
    let connected: Step<S> = Box::new(move |socket, event_loop, token, state| {
        if !matches!(socket.stream.take_error(), Ok(None)) {
            return socket.finish(event_loop, token, state, cannot_connect());
        }
        // Step 2: send. A request this small fits in a new socket's buffer at once.
        if !matches!(socket.stream.write(&request), Ok(sent) if sent == request.len()) {
            let answer = upstream::bad_gateway("could not send the request upstream");
            return socket.finish(event_loop, token, state, answer);
        }
        // Step 3: read the answer, then (step 4) hand it over.
        socket.read_answer(event_loop, token, state, |socket, event_loop, token, state, answer| {
            socket.finish(event_loop, token, state, answer)
        });
    });

    let socket = UpstreamSocket {
        stream,
        reader: ResponseReader::new(),
        next: Some(connected),
        done: Some(Box::new(done)),
    };
    let token = event_loop.register(socket, Interest { readable: false, writable: true });
    trace!("upstream {address}: connecting (token {})", token.0);
    // The 504, if the chain has not finished by then.
    let timeout = event_loop.add_timer(upstream::TIMEOUT, move |event_loop, state| {
        event_loop.with_handler(token, state, |socket: &mut UpstreamSocket<S>, l, token, s| {
            socket.finish(l, token, s, upstream::gateway_timeout())
        })
    });
    Ok((token, timeout))
}
// ANCHOR_END: fetch

// ANCHOR: socket
/// The upstream socket, as the loop holds it: the stream, the answer read so far, the one
/// step waiting for the socket to be ready, and whom to give the answer to.
pub struct UpstreamSocket<S> {
    stream: TcpStream,
    reader: ResponseReader,
    next: Option<Step<S>>,
    done: Option<Done<S>>,
}

impl<S: 'static> Handler<S> for UpstreamSocket<S> {
    fn on_readable(&mut self, event_loop: &mut EventLoop<S>, token: Token, state: &mut S) {
        if let Some(step) = self.next.take() {
            step(self, event_loop, token, state);
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

impl<S: 'static> UpstreamSocket<S> {
    /// Step 3: reads until the answer is whole (or is not HTTP), then runs `then`.
    fn read_answer(
        &mut self, event_loop: &mut EventLoop<S>, token: Token, state: &mut S,
        then: impl FnOnce(&mut Self, &mut EventLoop<S>, Token, &mut S, Response) + 'static,
    ) {
        let mut chunk = [0u8; 16 * 1024];
        // At most 8 reads (128 KiB) a turn: a fast upstream must not keep the others waiting.
        for _ in 0..8 {
            let bytes = match self.stream.read(&mut chunk) {
                Ok(count) => &chunk[..count], // empty at end of file
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => &[][..], // a reset: what came so far is all there is
            };
            let answer = match self.reader.push(bytes) {
                UpstreamParse::Done(response) => response,
                UpstreamParse::Garbage(reason) => upstream::bad_gateway(reason),
                UpstreamParse::NeedMore => continue,
            };
            return then(self, event_loop, token, state, answer);
        }
        // No more for now: when there is, carry on, by calling this same method again.
        self.next = Some(Box::new(|socket, event_loop, token, state| {
            socket.read_answer(event_loop, token, state, then)
        }));
        event_loop.set_interest(token, Interest::READABLE);
    }

    /// The end of the chain, whatever it was: close the socket, hand over the answer.
    fn finish(
        &mut self, event_loop: &mut EventLoop<S>, token: Token, state: &mut S, answer: Response,
    ) {
        event_loop.deregister(token, state); // dropped once this callback returns
        if let Some(done) = self.done.take() {
            done(answer, event_loop, state);
        }
    }
}
// ANCHOR_END: socket
