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
//! - an idle client's receive holds 16 KiB: `net.rs` polls first (chapter 11 holds none)
//! - timeouts, a timer linked to each operation: `proactor.rs`, `submit`
//! - `/sleep`, files, `/upstream/`, which here hold up everyone: `time.rs`, `fs.rs`, `upstream.rs`
//! - lingering close (`connection.rs`); signals, shutdown, `EMFILE` (a spin here), loops: `main.rs`

#[cfg(target_os = "linux")]
#[allow(dead_code)] // the chapter's ring has kinds of entry the sketch does not use
#[path = "../src/ring.rs"]
mod ring;

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("this sketch shows Linux's io_uring");
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
use completion_loop::main; // the program starts there (`use` may bring in `main`)

#[cfg(target_os = "linux")]
mod completion_loop {
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::{collections::BTreeMap, net::TcpStream, thread, time::Duration};

    use shared::app::{self, Action, Context, Stats};
    use shared::http::{date, parse, response::write_response, response::Framing, Parse, Response};
    use shared::{args::Config, buffer::Buffer, files, listener, log, upstream};

    use crate::ring::*; // the entries, the completions, and the header's constants

    const LISTENER: u64 = u64::MAX; // the accept's `user_data`: no connection's
    const MISUSED: &str = "the ring's own calls fail only if we misuse it";

    struct Connection {
        stream: TcpStream, // its descriptor is reused only once it is closed
        received: Vec<u8>, // not yet answered; a receive writes into the room past the end
        out: Buffer,       // answers not yet sent: while there are, a send reads them
        closing: bool,     // the last answer is in `out`
    }

    pub fn main() {
        let config = Config::from_args("ch10-sketch", &[]);
        // 256 entries at a time; completions past 4,096 wait in the kernel (see `Ring::reap`).
        let mut ring = Ring::new(256, 4096).unwrap_or_else(|error| {
            log!("ch10-sketch: cannot start a ring: {error}"); // one line, as chapter 10 says it
            std::process::exit(1);
        });
        let listener = listener::listen(&config, false);
        let accept = io_uring_sqe::accept(listener.as_raw_fd(), 0);
        // SAFETY: an accept points at no memory of ours: we ask for no address.
        unsafe { submit(&mut ring, accept, LISTENER) };
        let (mut connections, mut completed) = (BTreeMap::new(), Vec::new());
        loop {
            // The loop's one system call: submits every entry queued, waits for a completion.
            ring.submit_and_wait(None).expect(MISUSED);
            ring.reap(|completion| completed.push(completion)).expect(MISUSED);
            for done in completed.drain(..) {
                if done.user_data == LISTENER {
                    // SAFETY: as the first.
                    unsafe { submit(&mut ring, accept, LISTENER) };
                    // `res`: the client's new descriptor, or `-errno` (it reset before we took it).
                    let Ok(fd) = u64::try_from(done.res) else { continue };
                    // SAFETY: a descriptor the kernel has just made, for us alone.
                    let stream = unsafe { TcpStream::from_raw_fd(done.res) };
                    let new =
                        Connection { stream, received: vec![], out: Buffer::new(), closing: false };
                    connections.entry(fd).or_insert(new).submit_next(&mut ring);
                } else if let Some(connection) = connections.get_mut(&done.user_data) {
                    if !connection.on_completion(done.res, &mut ring, &config) {
                        connections.remove(&done.user_data); // closed: nothing of it in the ring
                    }
                }
            }
        }
    }

    /// Queues `entry`. Unsafe: what it points to must stay put until its completion (`push`).
    unsafe fn submit(ring: &mut Ring, entry: io_uring_sqe, user_data: u64) {
        // SAFETY: the caller's promise.
        unsafe { ring.push(&[io_uring_sqe { user_data, ..entry }]) }.expect(MISUSED);
    }

    impl Connection {
        /// Its operation completed with `res` (a receive if no answer waited, else a send).
        fn on_completion(&mut self, res: i32, ring: &mut Ring, config: &Config) -> bool {
            if res <= 0 {
                return false; // the client left: 0 is a close, `-errno` a reset
            } else if self.out.is_empty() {
                // SAFETY: the kernel wrote `res` bytes into the room past the end.
                unsafe { self.received.set_len(self.received.len() + res as usize) };
            } else {
                self.out.consume(res as usize); // all of it, or a part: the rest goes next
            }
            self.answer(config); // nothing of it is in the ring: `out` may grow
            self.submit_next(ring)
        }

        /// Answers every whole request received, in order, into `out`.
        fn answer(&mut self, config: &Config) {
            let (chapter, upstream) = (config.chapter, config.upstream);
            let context = Context { chapter, upstream, stats: Stats::default() };
            while !self.closing {
                let (response, mut framing, consumed) = match parse(&self.received) {
                    Parse::Complete { request, consumed } => {
                        let response = match app::handle(&request, &context) {
                            Action::Respond(response) => response,
                            Action::Sleep { ms } => {
                                thread::sleep(Duration::from_millis(ms));
                                app::slept(ms)
                            }
                            Action::ReadFile { path } => files::response(
                                &path,
                                files::load(&config.root, &path, config.fs_delay),
                            ),
                            Action::Upstream { address, path_and_query } => {
                                upstream::fetch_blocking(address, &path_and_query)
                            }
                        };
                        (response, Framing::for_request(&request), consumed)
                    }
                    // After a framing error we cannot tell where a next request would begin.
                    Parse::Invalid(error) => {
                        (Response::from_parse_error(error), Framing::CLOSE, self.received.len())
                    }
                    Parse::Incomplete => return,
                };
                self.received.drain(..consumed);
                framing.keep_alive &= !response.close;
                write_response(&mut self.out, &response, &framing, config.chapter, &date::now());
                self.closing = !framing.keep_alive;
            }
        }

        /// Submits its next operation. `false`: it is closed, with nothing in the ring.
        fn submit_next(&mut self, ring: &mut Ring) -> bool {
            let (fd, out) = (self.stream.as_raw_fd(), &self.out);
            let entry = if !out.is_empty() {
                io_uring_sqe::send(fd, out, nix::libc::MSG_NOSIGNAL) // gone: `-EPIPE`, no signal
            } else if self.closing {
                return false;
            } else {
                self.received.reserve(16 * 1024);
                let room = self.received.spare_capacity_mut();
                io_uring_sqe::recv(fd, room, 0)
            };
            // SAFETY: the answers or the room: heap memory, put and untouched until the completion.
            unsafe { submit(ring, entry, fd as u64) };
            true
        }
    }
}
