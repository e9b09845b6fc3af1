//! Sketch of chapter 11: the ring made to pay. A connection's one multishot receive stays armed
//! for its whole life, and completes whenever bytes come, into a buffer the kernel picks then
//! from a ring we provide: an idle client holds none. One multishot accept brings every client.
//! An entry whose completion lacks `IORING_CQE_F_MORE` has ended: only then do we arm it again.
//!
//! Left out (with all that sketch 10 leaves out), and where `chapters/11-multishot/src/` has it:
//! - pausing a client that reads no answers: `proactor.rs`; with no buffer left, a `recv`: `net.rs`
//! - sends that try first, a slab of slots: `net.rs`, `proactor.rs`; downloads by `splice`: `fs.rs`

#[allow(dead_code)] // the chapter's ring has kinds of entry the sketch does not use
#[path = "../src/ring.rs"]
mod ring;

use std::os::fd::{AsRawFd, FromRawFd};
use std::{collections::BTreeMap, io, net::Shutdown, net::TcpStream, thread, time::Duration};

use ring::*; // the chapter's own: the rings we share with the kernel, their entries, its constants
use shared::http::{date, parse, response::write_response, response::Framing, Parse, Response};
use shared::{app, app::Action, args::Config, buffer::Buffer, files, listener};

const LISTENER: u64 = u64::MAX; // the accept's `user_data`; a connection's is its descriptor
const RECEIVE: u64 = 1 << 32; // above the descriptor: the connection's receive, not its send

/// The buffer ring (a page of entries, which we write and the kernel takes), and 256 buffers.
#[repr(C, align(4096))]
struct Provided {
    ring: [io_uring_buf; 256], // entries: the kernel takes them at the head; we add at the tail
    buffers: [[u8; 4096]; 256],
}

struct Connection {
    stream: TcpStream, // its descriptor is reused only once it is closed
    received: Buffer,  // not yet answered: copied out of the provided buffers
    out: Buffer,       // answers not yet sent: while there are, a send reads them
    closing: bool,     // the last answer is in `out`, or the client left
    receiving: bool,   // its receive is armed: it will complete again
}

fn main() -> io::Result<()> {
    shared::system::needs_linux(11, "io_uring"); // elsewhere: one line, and exit status 2
    let config = Config::from_args("ch11-sketch", &[]);
    let mut ring = Ring::new(256, 4096)?; // room for 256 entries, and 4,096 completions
    let listener = listener::listen(&config, false);
    let provided = Provided { ring: [Default::default(); 256], buffers: [[0; 4096]; 256] };
    let provided = Box::into_raw(Box::new(provided)); // never freed; used by raw pointer only
    (0..256).for_each(|id| give_back(provided, id));
    // SAFETY: page-aligned, and never moved nor freed. Group 0: the receives name it.
    unsafe { ring.register_buffers(&raw mut (*provided).ring, 0)? };
    let accept = io_uring_sqe::multishot_accept(listener.as_raw_fd(), 0);
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
                accepting = done.flags & IORING_CQE_F_MORE != 0; // else it ended: ask again
                let Ok(fd) = u32::try_from(done.res) else { continue };
                // SAFETY: a descriptor just made, for us alone (a failed accept was skipped above).
                let stream = unsafe { TcpStream::from_raw_fd(done.res) };
                let (received, out) = (Buffer::new(), Buffer::new());
                let new = Connection { stream, received, out, closing: false, receiving: false };
                connections.entry(fd).or_insert(new).submit_next(&mut ring);
            } else if let Some(connection) = connections.get_mut(&(done.user_data as u32)) {
                if !connection.on_completion(done, provided, &mut ring, &config) {
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

/// Hands buffer `id` (back) to the kernel, at the tail of the buffer ring.
fn give_back(provided: *mut Provided, id: usize) {
    // SAFETY: the ring stays put, for good; buffer `id` is ours to lend (again).
    unsafe {
        provide_buffer(&raw mut (*provided).ring, &raw mut (*provided).buffers[id], id as u16)
    };
}

impl Connection {
    /// One of its operations completed: its receive (`RECEIVE`), or its send.
    fn on_completion(
        &mut self, done: io_uring_cqe, provided: *mut Provided, ring: &mut Ring, config: &Config,
    ) -> bool {
        if done.flags & IORING_CQE_F_BUFFER != 0 {
            let (id, len) = (done.flags as usize >> IORING_CQE_BUFFER_SHIFT, done.res as usize);
            // SAFETY: buffer `id` alone: the kernel wrote it, and no more until it is back.
            self.received.extend_from_slice(unsafe { &(&(*provided).buffers[id])[..len] });
            give_back(provided, id); // a buffer comes to us once, and goes back once
        }
        if done.user_data & RECEIVE == 0 {
            self.closing |= done.res < 0; // the client left (`EPIPE`, say): all answers go
            self.out.consume(usize::try_from(done.res).unwrap_or(self.out.len()));
        } else {
            self.receiving = done.flags & IORING_CQE_F_MORE != 0; // else it ended
            self.closing |= done.res <= 0 && done.res != -nix::libc::ENOBUFS; // the client left
            if !self.out.is_empty() {
                return true; // a send reads `out`: new answers wait for its completion
            }
        }
        self.answer(config); // no send is in the ring: `out` may grow
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
            self.received.consume(consumed);
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
            let _ = self.stream.shutdown(Shutdown::Both); // ends the receive: 0, no `F_MORE`
            return self.receiving; // closed once it has ended
        } else if !self.receiving {
            self.receiving = true;
            // SAFETY: it points at no memory of ours: the kernel picks a buffer, of group 0.
            unsafe { submit(ring, io_uring_sqe::recv_multishot(fd, 0), fd as u64 | RECEIVE) };
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
