//! Sketch of chapter 7: epoll. `poll` is handed every socket each turn and walks them all, so
//! ten thousand idle clients make every turn slow. A `Poller` on epoll keeps the list in the
//! kernel, told when a socket comes or changes; its wait hands back only what is ready.
//!
//! Left out (`chapters/07-epoll/src/` has them): `--backend poll`, kqueue for macOS and the
//! BSDs; and sketches 5-6's promises and pool (a slow disk blocks here): not this idea.

use std::io::{self, Read, Write};
use std::{collections::BTreeMap, net::TcpStream, os::fd::AsFd, os::fd::BorrowedFd};

use nix::poll::PollFlags;
#[cfg(target_os = "linux")]
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};

use shared::{app::Stats, args::Config, blocking, buffer::Buffer, http, listener, trace};

fn main() {
    if cfg!(not(target_os = "linux")) {
        println!("this sketch shows epoll, Linux's own; on this system run chapter 7 itself");
        std::process::exit(2);
    }
    let config = Config::from_args("ch07-sketch", &[]);
    config.trace.then(trace::enable);
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut connections: BTreeMap<Token, Connection> = BTreeMap::new();
    let mut stats = Stats::default();
    // New: the kernel keeps the list of what we wait for; the listener is token 0.
    let (poller, mut next_token) = (Poller::new(), 0);
    poller.add(listener.as_fd(), 0, Interest::POLLIN);
    loop {
        trace!("epoll: waiting");
        let ready = poller.wait(); // what is ready, and nothing else
        stats.loop_turns += 1;
        // Do what is ready (an error counts as ready: a read meets it).
        for (token, events) in ready {
            let Some(connection) = connections.get_mut(&token) else {
                listener::accept_all(&listener, |stream, _| {
                    next_token += 1;
                    poller.add(stream.as_fd(), next_token, Interest::POLLIN);
                    connections.insert(next_token, Connection::new(stream));
                });
                continue;
            };
            let before = connection.interest();
            if events.contains(Interest::POLLOUT) {
                connection.on_writable();
            } else {
                connection.on_readable(&config, &mut stats);
            }
            // Tell the kernel what changed. (A socket that closes leaves its list by itself.)
            if connection.done {
                connections.remove(&token);
            } else if connection.interest() != before {
                poller.modify(connection.stream.as_fd(), token, connection.interest());
            }
        }
        stats.connections_open = connections.len() as u64;
    }
}

type Token = u64; // names one connection; epoll hands it back with each event

/// What a socket waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    done: bool,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        Connection { stream, received: Buffer::new(), out: Buffer::new(), done: false }
    }

    /// Bytes came, or end of file, or an error. One read: if more is waiting, we hear again.
    fn on_readable(&mut self, config: &Config, stats: &mut Stats) {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(count) if count > 0 => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            _ => return self.done = true, // end of file or a reset: the client is gone
        }
        // A whole request: answer it (with `Connection: close`: one request a connection).
        let app = |request: &http::Request| blocking::run_app(request, config, stats);
        if http::answer(&mut self.received, &mut self.out, config.chapter, false, app).is_some() {
            stats.requests_served += 1;
            self.on_writable(); // most answers fit in the socket at once
        }
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest.
    fn on_writable(&mut self) {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break, // the client left
            }
        }
        self.done = true; // all sent: close
    }

    /// Read until the request is in, then write until its answer is out.
    fn interest(&self) -> Interest {
        match self.out.is_empty() {
            true => Interest::POLLIN,
            false => Interest::POLLOUT,
        }
    }
}

/// New in this sketch: epoll, behind the three calls the loop needs. Level-triggered, as
/// `poll` is: a socket with bytes left unread is reported again next turn.
#[cfg(target_os = "linux")]
struct Poller(Epoll);

#[cfg(target_os = "linux")]
impl Poller {
    fn new() -> Poller {
        Poller(Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).expect("an epoll instance"))
    }

    /// The token rides along as the event's data. (`EPOLLIN` is `POLLIN`'s bit, and so on.)
    fn event(token: Token, interest: Interest) -> EpollEvent {
        EpollEvent::new(EpollFlags::from_bits_truncate(i32::from(interest.bits())), token)
    }

    fn add(&self, fd: BorrowedFd, token: Token, interest: Interest) {
        let _ = self.0.add(fd, Poller::event(token, interest)); // fails only out of memory
    }

    fn modify(&self, fd: BorrowedFd, token: Token, interest: Interest) {
        let _ = self.0.modify(fd, &mut Poller::event(token, interest));
    }

    /// Waits until something is ready; what is, by token (an error, a hang-up too).
    fn wait(&self) -> Vec<(Token, Interest)> {
        let mut events = [EpollEvent::empty(); 1024]; // the rest wait for the next turn
        let count = self.0.wait(&mut events, nix::poll::PollTimeout::NONE).unwrap_or(0); // EINTR: 0
        let bits = |event: &EpollEvent| Interest::from_bits_truncate(event.events().bits() as i16);
        events[..count].iter().map(|event| (event.data(), bits(event))).collect()
    }
}

/// Elsewhere there is no epoll: `main` says so and stops before anything needs one.
#[cfg(not(target_os = "linux"))]
struct Poller;
#[cfg(not(target_os = "linux"))]
#[rustfmt::skip] // nothing here runs
impl Poller {
    fn new() -> Poller { Poller }
    fn add(&self, _: BorrowedFd, _: Token, _: Interest) {}
    fn modify(&self, _: BorrowedFd, _: Token, _: Interest) {}
    fn wait(&self) -> Vec<(Token, Interest)> { Vec::new() }
}
