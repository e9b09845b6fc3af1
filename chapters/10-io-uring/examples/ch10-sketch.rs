//! Sketch of chapter 10: completion instead of readiness. The loop no longer asks which
//! sockets it may read: it hands the kernel whole operations on the submission ring (accept a
//! client, receive into this room, send these bytes), and the kernel says on the completion
//! ring when each is done, and how. One `io_uring_enter` a turn submits them, and waits.
//!
//! A plain completion loop, without futures, so that what we lend the kernel stays in sight:
//! a connection has one operation in the ring at a time, marked with its descriptor (the
//! `user_data` that its completion brings back), and leaves what it lent alone until then.
//!
//! Left out, and where chapter 10 has it (in `chapters/10-io-uring/src/`):
//! - operations as futures that tasks await, and their cancels: `proactor.rs`, `Op`
//! - a receive that waits on an idle client holds 16 KiB: `net.rs` polls for bytes first
//! - timeouts, a timer linked to each operation: `proactor.rs`, `submit`
//! - `/upstream/` (501 here): `upstream.rs`; files, `/sleep` holding up no one: `fs.rs`, `time.rs`
//! - lingering close: `connection.rs`; signals, shutdown, a loop per core, `EMFILE`: `main.rs`

#[allow(dead_code)] // the chapter's ring has kinds of entry the sketch does not use
#[path = "../src/ring.rs"]
mod ring;

use std::os::fd::{AsRawFd, FromRawFd};
use std::{collections::BTreeMap, io, net::TcpStream, thread, time::Duration};

use ring::*; // the chapter's own: the rings we share with the kernel, their entries, its constants
use shared::http::{date, parse, response::write_response, response::Framing, Parse, Response};
use shared::{app, app::Action, args::Config, buffer::Buffer, files, listener};

const LISTENER: u64 = u64::MAX; // the accept's `user_data`; a connection's is its descriptor

struct Connection {
    stream: TcpStream, // its descriptor is reused only once it is closed
    received: Vec<u8>, // not yet answered; a receive writes into the room past the end
    out: Buffer,       // answers not yet sent: while there are, a send reads them
    closing: bool,     // the last answer is in `out`
}

fn main() -> io::Result<()> {
    shared::system::needs_linux(10, "io_uring"); // elsewhere: one line, and exit status 2
    let config = Config::from_args("ch10-sketch", &[]);
    let mut ring = Ring::new(256, 4096)?; // room for 256 entries, and 4,096 completions
    let listener = listener::listen(&config, false);
    let accept = io_uring_sqe::accept(listener.as_raw_fd(), 0);
    let (mut connections, mut completed, mut accepting) = (BTreeMap::new(), Vec::new(), false);
    loop {
        if !accepting {
            // SAFETY: an accept points at no memory of ours: we ask for no address.
            unsafe { submit(&mut ring, accept, LISTENER) };
            accepting = true;
        }
        ring.submit_and_wait(None)?; // the loop's one system call: submits all, waits for one
        ring.reap(|completion| completed.push(completion))?;
        for done in completed.drain(..) {
            if done.user_data == LISTENER {
                accepting = false; // one accept, one client: the next turn asks for the next
                let Ok(fd) = u32::try_from(done.res) else { continue };
                // SAFETY: a descriptor just made, for us alone (a failed accept was skipped above).
                let stream = unsafe { TcpStream::from_raw_fd(done.res) };
                let new =
                    Connection { stream, received: vec![], out: Buffer::new(), closing: false };
                connections.entry(fd).or_insert(new).submit_next(&mut ring);
            } else if let Some(connection) = connections.get_mut(&(done.user_data as u32)) {
                if !connection.on_completion(done, &mut ring, &config) {
                    connections.remove(&(done.user_data as u32)); // nothing of it in the ring
                }
            }
        }
    }
}

/// Queues `entry` with `user_data`. Unsafe: what it points to must stay put till it completes.
unsafe fn submit(ring: &mut Ring, entry: io_uring_sqe, user_data: u64) {
    // SAFETY: the caller's promise.
    unsafe { ring.push(&[io_uring_sqe { user_data, ..entry }]) }.expect("room for one more");
}

impl Connection {
    /// Its operation completed: a send if answers waited, else a receive.
    fn on_completion(&mut self, done: io_uring_cqe, ring: &mut Ring, config: &Config) -> bool {
        if done.res <= 0 {
            return false; // the client left: 0 is a close, `-errno` a reset (`EPIPE`: no signal)
        } else if !self.out.is_empty() {
            self.out.consume(done.res as usize); // all of it, or a part: the rest goes next
        } else {
            // SAFETY: the kernel wrote `res` bytes into the room past the end.
            unsafe { self.received.set_len(self.received.len() + done.res as usize) };
        }
        self.answer(config); // nothing of it is in the ring: `out` may grow
        self.submit_next(ring)
    }

    /// Answers every whole request received, in order, into `out`.
    fn answer(&mut self, config: &Config) {
        while !self.closing {
            let (response, framing, consumed) = match parse(&self.received) {
                Parse::Complete { request, consumed } => {
                    (perform(&request, config), Framing::for_request(&request), consumed)
                }
                // After a bad request, where a next one would begin is unknown: answer, and close.
                Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE, 0),
                Parse::Incomplete => return,
            };
            self.received.drain(..consumed);
            write_response(&mut self.out, &response, &framing, config.chapter, &date::now());
            self.closing = !framing.keep_alive;
        }
    }

    /// Submits its next operation. `false`: it is closed, with nothing in the ring.
    fn submit_next(&mut self, ring: &mut Ring) -> bool {
        let fd = self.stream.as_raw_fd();
        if !self.out.is_empty() {
            // SAFETY: the answers, in the heap, stay put and untouched until the completion.
            unsafe { submit(ring, io_uring_sqe::send(fd, &self.out, 0), fd as u64) };
        } else if self.closing {
            return false;
        } else {
            // Into the room past `received`'s end: spare capacity, memory not written yet
            // (`MaybeUninit`), which the kernel fills and `on_completion` then counts in.
            self.received.reserve(16 * 1024);
            let room = self.received.spare_capacity_mut();
            // SAFETY: as the answers: the room past the end.
            unsafe { submit(ring, io_uring_sqe::recv(fd, room, 0), fd as u64) };
        }
        true
    }
}

/// Does what the application asks for `request`, here and now: a `/sleep` holds up everyone.
fn perform(request: &shared::http::Request, config: &Config) -> Response {
    let Config { chapter, upstream, ref root, fs_delay, .. } = *config;
    match app::handle(request, &app::Context { chapter, upstream, stats: Default::default() }) {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            thread::sleep(Duration::from_millis(ms));
            app::slept(ms)
        }
        Action::ReadFile { path } => files::response(&path, files::load(root, &path, fs_delay)),
        _ => Response::error(501, "/upstream/: see the chapter, not its sketch"),
    }
}
