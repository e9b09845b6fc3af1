//! Sketch of chapter 11: the ring made to pay. Sketch 10 lent each receive a room to hold
//! while it waited. Here each connection has one multishot receive, armed for its whole life,
//! which completes whenever bytes arrive, into a buffer the kernel picks just then from a ring
//! of buffers we provide: an idle client holds none. One multishot accept brings every client.
//! A multishot entry ends with a completion that lacks `IORING_CQE_F_MORE`, and only we re-arm
//! it: the loop its accept, and `on_completion` a connection's receive.
//!
//! Left out, and where chapter 11 has it (in `chapters/11-multishot/src/`):
//! - downloads by `splice`, file to pipe to socket inside the kernel: `fs.rs`
//! - pausing a client that reads no answers (here its bytes pile up): `proactor.rs`, `HELD_AT_MOST`
//! - with no buffer left, a plain `recv` (here: armed again): `net.rs`, `receive_without_a_buffer`
//! - sends that try first; operations in a slab of reused slots: `net.rs`, `proactor.rs`
//! - and all that sketch 10 leaves to chapter 10

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
    use std::net::{Shutdown, TcpStream};
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::sync::atomic::{AtomicU16, Ordering::Release};
    use std::{collections::BTreeMap, slice, thread, time::Duration};

    use shared::app::{self, Action, Context, Stats};
    use shared::http::{date, parse, response::write_response, response::Framing, Parse, Response};
    use shared::{args::Config, buffer::Buffer, files, listener, log, upstream};

    use crate::ring::*; // the entries, the completions, and the header's constants

    const LISTENER: u64 = u64::MAX; // the accept's `user_data`: no connection's
    const RECEIVE: u64 = 1 << 32; // in a `user_data`: a connection's receive, not its send
    const MISUSED: &str = "the ring's own calls fail only if we misuse it";
    const COUNT: usize = 256; // provided buffers, of 4 KiB: 1 MiB for all the clients

    /// `<linux/io_uring.h>`'s `io_uring_buf` (addr, len, bid, resv), and `io_uring_buf_reg`
    /// (ring_addr, ring_entries, bgid, flags, resv), which registers a ring of them.
    #[repr(C)]
    struct io_uring_buf(u64, u32, u16, u16);
    #[repr(C)]
    struct io_uring_buf_reg(u64, u32, u16, u16, [u64; 3]);

    /// The buffer ring: entries we write at the tail and the kernel takes (a page of them, as
    /// it asks), and the buffers they name. Only by raw pointer: the kernel writes into it.
    #[repr(C, align(4096))]
    struct Provided {
        entries: [io_uring_buf; COUNT], // the first entry's `resv` is the ring's tail
        buffers: [[u8; 4096]; COUNT],
        tail: u16, // our copy: only we write it
    }

    struct Connection {
        stream: TcpStream, // its descriptor is reused only once it is closed
        received: Buffer,  // not yet answered: copied out of the provided buffers
        out: Buffer,       // answers not yet sent: while there are, a send reads them
        closing: bool,     // the last answer is in `out`
        receiving: bool,   // its receive is armed: it will complete again
    }

    pub fn main() {
        let config = Config::from_args("ch11-sketch", &[]);
        // 256 entries at a time; completions past 4,096 wait in the kernel (see `Ring::reap`).
        let mut ring = Ring::new(256, 4096).unwrap_or_else(|error| {
            log!("ch11-sketch: cannot start a ring: {error}"); // one line, as chapter 11 says it
            std::process::exit(1);
        });
        let entries = [const { io_uring_buf(0, 0, 0, 0) }; COUNT];
        let provided = Box::new(Provided { entries, buffers: [[0; 4096]; COUNT], tail: 0 });
        let provided = Box::into_raw(provided); // never freed: the kernel uses it while we run
        (0..COUNT as u16).for_each(|id| give_back(provided, id));
        let registration = io_uring_buf_reg(provided as u64, COUNT as u32, 0, 0, [0; 3]);
        // SAFETY: the kernel reads `registration` now, and the ring for good. (Linux 6.1, which
        // `Ring::new` needs, has buffer rings: 5.19.)
        unsafe { ring.register(IORING_REGISTER_PBUF_RING, &registration) }.expect(MISUSED);
        let listener = listener::listen(&config, false);
        let accept = io_uring_sqe::multishot_accept(listener.as_raw_fd(), 0);
        // SAFETY: an accept points at no memory of ours: we ask for no address.
        unsafe { submit(&mut ring, accept, LISTENER) };
        let (mut connections, mut completed) = (BTreeMap::new(), Vec::new());
        loop {
            // The loop's one system call: submits every entry queued, waits for a completion.
            ring.submit_and_wait(None).expect(MISUSED);
            ring.reap(|completion| completed.push(completion)).expect(MISUSED);
            for done in completed.drain(..) {
                if done.user_data == LISTENER {
                    if done.flags & IORING_CQE_F_MORE == 0 {
                        // SAFETY: as the first. That one has ended (an error): the loop re-arms.
                        unsafe { submit(&mut ring, accept, LISTENER) };
                    }
                    // `res`: the client's new descriptor, or `-errno` (it reset before we took it).
                    let Ok(fd) = u64::try_from(done.res) else { continue };
                    // SAFETY: a descriptor the kernel has just made, for us alone.
                    let stream = unsafe { TcpStream::from_raw_fd(done.res) };
                    let (received, out) = (Buffer::new(), Buffer::new());
                    let new =
                        Connection { stream, received, out, closing: false, receiving: false };
                    connections.entry(fd).or_insert(new).receive(&mut ring);
                } else if let Some(connection) = connections.get_mut(&(done.user_data & !RECEIVE)) {
                    if !connection.on_completion(done, provided, &mut ring, &config) {
                        connections.remove(&(done.user_data & !RECEIVE)); // nothing in the ring
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

    /// Hands buffer `id` (back) to the kernel: its entry at the tail, then the tail moved.
    fn give_back(provided: *mut Provided, id: u16) {
        // SAFETY: the entry at the tail is ours (the kernel took it, or never had it). The tail
        // the kernel reads is an atomic, stored with `Release` once the entry is written.
        unsafe {
            let tail = (*provided).tail;
            let entry = &raw mut (*provided).entries[usize::from(tail) % COUNT];
            let buffer = &raw mut (*provided).buffers[usize::from(id)];
            ((*entry).0, (*entry).1, (*entry).2) = (buffer as u64, 4096, id);
            (*provided).tail = tail.wrapping_add(1);
            let shared = AtomicU16::from_ptr(&raw mut (*provided).entries[0].3);
            shared.store(tail.wrapping_add(1), Release);
        }
    }

    impl Connection {
        /// One of its operations completed: its receive (`RECEIVE`), or its send.
        fn on_completion(
            &mut self, done: io_uring_cqe, provided: *mut Provided, ring: &mut Ring,
            config: &Config,
        ) -> bool {
            if done.user_data & RECEIVE != 0 {
                if done.flags & IORING_CQE_F_BUFFER != 0 {
                    let id = (done.flags >> IORING_CQE_BUFFER_SHIFT) as u16;
                    // SAFETY: the kernel wrote `res` bytes into buffer `id` before this
                    // completion, and writes there no more until we give it back (once, here).
                    let bytes = unsafe {
                        let buffer = &raw const (*provided).buffers[usize::from(id)];
                        slice::from_raw_parts(buffer.cast(), done.res as usize)
                    };
                    self.received.extend_from_slice(bytes);
                    give_back(provided, id);
                }
                self.receiving = done.flags & IORING_CQE_F_MORE != 0;
                if !self.receiving && (done.res > 0 || done.res == -nix::libc::ENOBUFS) {
                    // Ended, the client still there (no buffer was left, say): we arm it again.
                    // By the next `io_uring_enter` this turn's completions gave every buffer back.
                    self.receive(ring);
                }
                if !self.out.is_empty() {
                    return true; // a send reads `out`: new answers wait for its completion
                }
            } else if done.res > 0 {
                self.out.consume(done.res as usize); // all of it, or a part: the rest goes next
            } else {
                (self.out, self.closing) = (Buffer::new(), true); // the client left (`-errno`)
            }
            self.answer(config); // no send is in the ring: `out` may grow
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
                self.received.consume(consumed);
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
            } else if self.closing || !self.receiving {
                let _ = self.stream.shutdown(Shutdown::Both); // ends the receive: 0, no `F_MORE`
                return self.receiving; // closed once it has ended
            } else {
                return true; // the receive stays armed: nothing to submit
            };
            // SAFETY: the answers: heap memory, put and untouched until the completion.
            unsafe { submit(ring, entry, fd as u64) };
            true
        }

        /// Arms its multishot receive: no room of ours; the kernel picks a buffer as bytes come.
        fn receive(&mut self, ring: &mut Ring) {
            let fd = self.stream.as_raw_fd();
            let entry = io_uring_sqe::recv_multishot(fd, 0);
            self.receiving = true;
            // SAFETY: the entry points at no memory of ours: the kernel picks a buffer, group 0.
            unsafe { submit(ring, entry, fd as u64 | RECEIVE) };
        }
    }
}
