//! One client, as one task: an `async fn` that reads a request, answers it, and goes round
//! again, until the client leaves, times out, or the server shuts down.
//!
//! Chapters 3-7 kept each client's progress in a `Connection` state machine (`Reading`,
//! `Writing`, `Lingering`, a `waiting` effect, a deadline timer...), because their
//! callbacks returned after every step and had to remember where they were. Here the
//! compiler builds that state machine from [`serve`]: each `.await` is a state, and the
//! local variables are what it remembers. Timeouts are [`timeout`]s around the awaits,
//! and when the task ends (or is dropped) everything it holds, its socket, its timers, its
//! wait for the disk, is dropped with it.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use shared::app::{self, Action};
use shared::files;
use shared::http::{self, response::Framing, Parse, Response};
use shared::trace;

use crate::fs::Chunk;
use crate::net::Async;
use crate::time::{sleep, timeout};
use crate::{upstream, Server};

/// Unsent output above which we send before answering more (backpressure).
const MAX_PENDING_OUTPUT: usize = 1024 * 1024;
/// How much a client may still send after its last answer before we stop being polite.
const MAX_DISCARD: usize = 1024 * 1024;

// ANCHOR: serve
/// The task for one client.
pub async fn serve(stream: Async<TcpStream>, server: Rc<Server>) {
    let _open = Open::count(&server); // until the task ends, whichever way it ends
    let mut client = Client {
        stream,
        received: Vec::new(),
        out: Vec::new(),
        since: Instant::now(),
        kept_alive: false,
    };
    match client.serve(&server).await {
        // We said `Connection: close`: linger, so that the answer is not lost (chapter 1).
        Ok(()) => client.linger(&server).await,
        Err(error) => trace!("fd {}: {error}", client.stream.get_ref().as_raw_fd()),
    }
    trace!("fd {}: closed", client.stream.get_ref().as_raw_fd());
}

/// Counts a client as open (for `/stats`, and the shutdown's wait) while its task lives:
/// a guard, not a decrement at the end of `serve`, which a task that panics never reaches.
struct Open(Rc<Server>);

impl Open {
    fn count(server: &Rc<Server>) -> Open {
        server.counters().connections_open.fetch_add(1, Ordering::Relaxed);
        Open(server.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.counters().connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}
// ANCHOR_END: serve

struct Client {
    stream: Async<TcpStream>,
    /// Bytes received and not yet answered.
    received: Vec<u8>,
    /// Answers not yet sent.
    out: Vec<u8>,
    /// When the client's clock started: at connect, when it last had an answer, or when its
    /// next request began. Its request must be in within its time from here (see
    /// `read_request`), however slowly it trickles in: each read does not restart it.
    since: Instant,
    /// It has had an answer: idle now, it is kept alive, no longer new.
    kept_alive: bool,
}

impl Client {
    // ANCHOR: loop
    /// Answers requests, pipelined ones in order, until one is the last. `Ok` when the
    /// last answer is sent; `Err` when the client left, failed or timed out.
    async fn serve(&mut self, server: &Server) -> io::Result<()> {
        loop {
            let (response, first_chunk, framing, consumed) = match http::parse(&self.received) {
                Parse::Complete { request, consumed } => {
                    let (response, first_chunk) = answer(&request, server).await;
                    (response, first_chunk, Framing::for_request(&request), consumed)
                }
                // After a framing error we cannot tell where a next request would begin:
                // answer, then close.
                Parse::Invalid(error) => {
                    (Response::from_parse_error(error), None, Framing::CLOSE, self.received.len())
                }
                Parse::Incomplete => {
                    self.send(server).await?; // nothing more to answer now: send it all
                    self.read_request(server).await?;
                    continue;
                }
            };
            self.received.drain(..consumed);
            let keep_alive = self.respond(&response, framing, server);
            let body = first_chunk.filter(|chunk| !framing.head_only && chunk.length > 0);
            if let Some(chunk) = body {
                self.send_file(chunk, server).await?;
            }
            if !keep_alive {
                return self.send(server).await;
            }
            if self.out.len() > MAX_PENDING_OUTPUT {
                self.send(server).await?;
            }
        }
    }
    // ANCHOR_END: loop

    // ANCHOR: send_file
    /// Sends a file's body a chunk at a time, each read on the pool once the last is sent.
    async fn send_file(&mut self, mut chunk: Chunk, server: &Server) -> io::Result<()> {
        let mut left = chunk.length;
        loop {
            chunk.bytes.truncate(left as usize); // the file may have grown: send what we said
            if chunk.bytes.is_empty() {
                // It shrank: we cannot send the length we said. Closing is the only honest end.
                return Err(io::Error::other("the file shrank while it was sent"));
            }
            left -= chunk.bytes.len() as u64;
            self.out.extend_from_slice(&chunk.bytes);
            self.send(server).await?;
            if left == 0 {
                return Ok(());
            }
            let next = server.files.read(chunk.file, chunk.length).await;
            chunk = next.map_err(|_| io::Error::other("the file could not be read"))?;
        }
    }

    /// Adds the answer to one request to the output; returns whether to keep the
    /// connection (as in chapter 3).
    fn respond(&mut self, response: &Response, mut framing: Framing, server: &Server) -> bool {
        framing.keep_alive &= !response.close && !server.shutdown.is_set();
        let (name, date) = (server.config.chapter, &*server.date.borrow());
        http::response::write_response(&mut self.out, response, &framing, name, date);
        server.counters().requests_served.fetch_add(1, Ordering::Relaxed);
        framing.keep_alive
    }
    // ANCHOR_END: send_file

    // ANCHOR: read_request
    /// Reads more of the next request, within its time: a kept-alive client that sends
    /// nothing has the keep-alive timeout; a new one, or one that has begun a request, the
    /// header timeout (a head that never ends is slowloris: 408). A shutdown ends an idle one.
    async fn read_request(&mut self, server: &Server) -> io::Result<()> {
        let config = &server.config;
        let idle = self.received.is_empty();
        let limit =
            if idle && self.kept_alive { config.keep_alive_timeout } else { config.header_timeout };
        let deadline = self.since + limit;
        let read = timeout(
            deadline.saturating_duration_since(Instant::now()),
            self.stream.read_to(&mut self.received),
        );
        let read = if idle { server.shutdown.cancels(read).await } else { Some(read.await) };
        let count = match read {
            None => return Err(io::Error::other("shutting down")),
            Some(Ok(read)) => read?,
            Some(Err(_elapsed)) if idle => return Err(io::ErrorKind::TimedOut.into()),
            Some(Err(_elapsed)) => {
                let timeout = Response { close: true, ..Response::error(408, "too slow") };
                self.respond(&timeout, Framing::CLOSE, server);
                self.send(server).await?;
                return Err(io::ErrorKind::TimedOut.into());
            }
        };
        trace!("fd {}: read {count} bytes", self.stream.get_ref().as_raw_fd());
        if count == 0 {
            return Err(io::Error::other("closed by the client")); // or half-closed: done
        }
        if idle && self.kept_alive {
            self.since = Instant::now(); // its next request begins: the header timeout from here
        }
        Ok(())
    }
    // ANCHOR_END: read_request

    // ANCHOR: send
    /// Sends all the output, with `--send-timeout` between any two writes that make progress.
    async fn send(&mut self, server: &Server) -> io::Result<()> {
        let mut sent = 0;
        while sent < self.out.len() {
            match timeout(server.config.send_timeout, self.stream.write(&self.out[sent..])).await {
                Ok(written) => sent += written?,
                Err(_elapsed) => return Err(io::ErrorKind::TimedOut.into()),
            }
        }
        if !self.out.is_empty() {
            trace!("fd {}: response sent ({sent} bytes)", self.stream.get_ref().as_raw_fd());
            self.since = Instant::now(); // answered: the clock for its next request starts
            self.kept_alive = true;
        }
        self.out.clear();
        self.out.shrink_to(64 * 1024);
        Ok(())
    }

    /// Closes without losing the answer: shut our side, and read until the client closes
    /// its side (or sends too much, or takes too long). nginx calls this a lingering close.
    async fn linger(&mut self, server: &Server) {
        let _ = self.stream.get_ref().shutdown(Shutdown::Write);
        let mut discarded = 0;
        let discard = async {
            while discarded <= MAX_DISCARD {
                self.received.clear();
                match self.stream.read_to(&mut self.received).await {
                    Ok(count) if count > 0 => discarded += count,
                    _ => return,
                }
            }
        };
        let _ = timeout(server.config.keep_alive_timeout, discard).await; // at most this long
    }
    // ANCHOR_END: send
}

// ANCHOR: answer
/// Asks the application what to do, and does it: each wait is an `.await`. A file's answer
/// comes with its first chunk; the rest follows (`send_file`).
async fn answer(request: &http::Request<'_>, server: &Server) -> (Response, Option<Chunk>) {
    match app::handle(request, &server.context(request.path)) {
        Action::Respond(mut response) => {
            if request.path == "/stats" && response.status == 200 {
                server.add_thread_lines(&mut response); // new in chapter 9: a line per loop
            }
            (response, None)
        }
        Action::Sleep { ms } => {
            sleep(Duration::from_millis(ms)).await;
            (app::slept(ms), None)
        }
        Action::ReadFile { path } => {
            match server.files.open(server.config.root.clone(), path.clone()).await {
                Ok(chunk) => (files::streamed_response(&path, chunk.length), Some(chunk)),
                Err(response) => (response, None),
            }
        }
        Action::Upstream { address, path_and_query } => {
            (upstream::fetch(address, &path_and_query, &server.upstream_slots).await, None)
        }
    }
}
// ANCHOR_END: answer
