//! One client, as one task: an `async fn` that reads a request, answers it, and goes round
//! again, until the client leaves, times out, or the server shuts down.
//!
//! Chapters 3-7 kept each client's progress in a `Connection` state machine (`Reading`,
//! `Writing`, `Lingering`, a `waiting` effect, a deadline timer...), because their
//! callbacks returned after every step and had to remember where they were. Here the
//! compiler builds that state machine from [`serve`]: each `.await` is a state, and the
//! local variables are what it remembers. Timeouts are [`timeout`]s around the awaits,
//! and when the task ends (or is dropped) everything it holds, its socket, its timers, its
//! wait for the disk, is dropped with it. While an answer waits, the client is listened
//! to ([`Client::listening`]), so that one who leaves ends the task at once.

use std::future::Future;
use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use shared::app::{self, Action};
use shared::buffer::Buffer;
use shared::files;
use shared::http::{self, response::Framing, Parse, Response};
use shared::trace;

use crate::fs::Chunk;
use crate::net::Async;
use crate::race::{race, Winner};
use crate::sync::OnDrop;
use crate::time::{sleep, timeout};
use crate::{executor, upstream, Server};

/// Backpressure, as in chapters 3-7: past this much unsent output we send before answering
/// more; past this much received and not yet answered, we stop reading.
const MAX_PENDING: usize = 1024 * 1024;
/// How much a client may still send after its last answer before we stop being polite.
const MAX_DISCARD: usize = 1024 * 1024;
/// How long a lingering close waits for more from the client. What it sent before it saw
/// our last answer is a round trip away at most: a client quiet for this long has sent all
/// it will, and must not hold its socket (or a shutdown) open by keeping quiet.
const LINGER_QUIET: Duration = Duration::from_millis(500);

// ANCHOR: serve
/// The task for one client.
pub async fn serve(stream: Async<TcpStream>, server: Rc<Server>) {
    // Counted open (for `/stats`, and the shutdown's wait) until the task ends, whichever
    // way: a guard, since a task that panics never reaches a decrement at the end.
    server.counters().connections_open.fetch_add(1, Ordering::Relaxed);
    let _open = OnDrop(|| {
        server.counters().connections_open.fetch_sub(1, Ordering::Relaxed);
    });
    let mut client = Client {
        stream,
        received: Buffer::new(),
        out: Buffer::new(),
        since: Instant::now(),
        kept_alive: false,
    };
    match client.serve(&server).await {
        // We said `Connection: close`: linger, so that the answer is not lost (chapter 1).
        Ok(()) => Box::pin(client.linger(&server)).await, // boxed: see `Client::serve`
        Err(error) => trace!("fd {}: {error}", client.stream.get_ref().as_raw_fd()),
    }
    trace!("fd {}: closed", client.stream.get_ref().as_raw_fd());
}
// ANCHOR_END: serve

struct Client {
    stream: Async<TcpStream>,
    /// Bytes received and not yet answered, and answers not yet sent, each consumed from the
    /// front as it is answered or sent. Empty, they hold no memory (`shared::buffer`): an
    /// idle client costs its task and its socket, no buffer.
    received: Buffer,
    out: Buffer,
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
        // Every read of a new request races the shutdown: one place in its line for the
        // client's whole life, rather than a new one for every request.
        let mut shutdown = pin!(server.shutdown.wait());
        loop {
            let (action, framing, consumed) = match http::parse(&self.received) {
                Parse::Complete { request, consumed } => {
                    // Owned: the request's bytes go, and more are read, while it waits.
                    let action = match app::handle(&request, &server.context(request.path)) {
                        Action::Respond(mut response) if request.path == "/stats" => {
                            server.add_thread_lines(&mut response); // new: a line per loop
                            Action::Respond(response)
                        }
                        action => action.into_owned(),
                    };
                    (action, Framing::for_request(&request), consumed)
                }
                // After a framing error no one knows where a next request begins: answer, close.
                Parse::Invalid(error) => {
                    let response = Response::from_parse_error(error);
                    (Action::Respond(response), Framing::CLOSE, self.received.len())
                }
                Parse::Incomplete => {
                    self.send(server).await?; // nothing more to answer now: send it all
                    self.read_request(server, shutdown.as_mut()).await?;
                    continue;
                }
            };
            self.received.consume(consumed); // by an offset: the bytes behind it stay put
            let (response, file) = match action {
                Action::Respond(response) => (response, None),
                // An answer that must wait: the answers ready before it go out first, and
                // the client is listened to meanwhile, so that it costs nothing once gone.
                // Boxed: a task is as big as its biggest state, and every task, idle or not,
                // would pay for the waits' futures (a fetch from the upstream is big).
                wait => {
                    self.send(server).await?;
                    self.listening(Box::pin(perform(wait, server))).await?
                }
            };
            let keep_alive = self.respond(&response, framing, server);
            executor::consume_budget().await; // an answer costs as a read does
            if let Some((chunk, length)) = file.filter(|_| !framing.head_only) {
                self.send_file(chunk, length, server).await?;
            }
            if !keep_alive {
                return self.send(server).await;
            }
            if self.out.len() > MAX_PENDING {
                self.send(server).await?;
            }
        }
    }
    // ANCHOR_END: loop

    // ANCHOR: listening
    /// Waits for `wait` while reading what the client sends meanwhile, as chapter 7's
    /// connection stayed readable: pipelined requests are kept for later (up to a limit:
    /// past it we stop reading, which pushes back on the client), and a client that leaves
    /// (a reset, an error) ends the wait at once: `race` drops it, and with it its timer,
    /// its place in line, its connection to the upstream. A client that only shut its
    /// sending side (end-of-file) may still want its answers: we stop reading, and wait on.
    async fn listening<T>(&mut self, wait: impl Future<Output = T>) -> io::Result<T> {
        let (stream, received) = (&self.stream, &mut self.received);
        let listen = async {
            while received.len() <= MAX_PENDING {
                match stream.read_to(received).await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(error) => return error,
                }
            }
            // Reading no more (too much is queued, or the client half-closed): only the
            // wait, or the client leaving for good (a reset), can end it now.
            stream.departed().await
        };
        match race(wait, listen).await {
            Winner::First(output) => Ok(output),
            Winner::Second(error) => Err(error),
        }
    }
    // ANCHOR_END: listening

    // ANCHOR: send_file
    /// Sends a file's body, `length` bytes, a chunk at a time, each read on the pool once
    /// the last is sent.
    async fn send_file(
        &mut self, mut chunk: Chunk, length: u64, server: &Server,
    ) -> io::Result<()> {
        let mut left = length;
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
            let next = self.listening(server.files.read(chunk.file)).await?;
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
    async fn read_request(
        &mut self, server: &Server, shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> io::Result<()> {
        let config = &server.config;
        let idle = self.received.is_empty();
        let limit =
            if idle && self.kept_alive { config.keep_alive_timeout } else { config.header_timeout };
        let deadline = self.since + limit;
        let read = timeout(
            deadline.saturating_duration_since(Instant::now()),
            self.stream.read_to(&mut self.received),
        );
        let read = if idle {
            match race(read, shutdown).await {
                Winner::First(read) => read,
                Winner::Second(()) => return Err(io::Error::other("shutting down")),
            }
        } else {
            read.await
        };
        let count = match read {
            Ok(read) => read?,
            Err(_elapsed) if idle => return Err(io::ErrorKind::TimedOut.into()),
            Err(_elapsed) => {
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
        while !self.out.is_empty() {
            let write = timeout(server.config.send_timeout, self.stream.write(&self.out));
            let written = write.await.map_err(|_elapsed| io::ErrorKind::TimedOut)??;
            self.out.consume(written); // emptied, it gives its memory back
            sent += written;
        }
        if sent > 0 {
            trace!("fd {}: sent {sent} bytes", self.stream.get_ref().as_raw_fd());
            self.since = Instant::now(); // answered: the clock for its next request starts
            self.kept_alive = true;
        }
        Ok(())
    }

    /// Closes without losing the answer: shut our side, and read until the client closes
    /// its side, or sends too much, or nothing for `LINGER_QUIET`, or in all for longer than
    /// the keep-alive timeout. nginx calls this a lingering close.
    async fn linger(&mut self, server: &Server) {
        let _ = self.stream.get_ref().shutdown(Shutdown::Write);
        let mut discarded = 0;
        let discard = async {
            while discarded <= MAX_DISCARD {
                self.received.clear();
                match timeout(LINGER_QUIET, self.stream.read_to(&mut self.received)).await {
                    Ok(Ok(count)) if count > 0 => discarded += count,
                    _ => return, // closed, failed, or quiet: nothing more is coming
                }
            }
        };
        let _ = timeout(server.config.keep_alive_timeout, discard).await; // at most this long
    }
    // ANCHOR_END: send
}

// ANCHOR: answer
/// Does what the application asked for that must wait: each wait is an `.await`. A file's
/// answer comes with its first chunk and the file's length; the rest follows (`send_file`).
async fn perform(action: Action<'static>, server: &Server) -> (Response, Option<(Chunk, u64)>) {
    match action {
        Action::Respond(response) => (response, None),
        Action::Sleep { ms } => {
            sleep(Duration::from_millis(ms)).await;
            (app::slept(ms), None)
        }
        Action::ReadFile { path } => match server.files.open(path.clone()).await {
            Ok((chunk, length)) => {
                let file = Some((chunk, length)).filter(|_| length > 0);
                (files::streamed_response(&path, length), file)
            }
            Err(response) => (response, None),
        },
        Action::Upstream { address, path_and_query } => {
            (upstream::fetch(address, &path_and_query, &server.upstream_slots).await, None)
        }
    }
}
// ANCHOR_END: answer
