//! Sketch of chapter 6: a thread pool. `poll` cannot wait for a disk (to the kernel a file
//! is always ready, and then `read` blocks), so the loop hands each file read to a
//! `ThreadPool`: a worker makes the blocking call, sends the result back and rings the
//! loop's doorbell, a self-pipe the loop watches like a socket. A file goes out a piece at
//! a time, the next read only once the last piece is sent.
//!
//! Left out (`chapters/06-thread-pool/src/` has them): a job that panics, a file that fails
//! mid-read, `/sleep` and `/upstream/` off the loop; sketches 4-5's timers and promises.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::{mpsc, Arc, Mutex};
use std::{fs::File, thread};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::http::{self, date, response::write_response, response::Framing};
use shared::{args::Config, blocking, buffer::Buffer, files, listener, self_pipe::SelfPipe, trace};

fn main() {
    let config = Config::from_args("ch06-sketch", &[]);
    if config.trace {
        trace::enable();
    }
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut connections: Vec<Connection> = Vec::new();
    let mut stats = Stats::default();
    let pool = ThreadPool::new(config.workers);
    loop {
        // Say what we wait for: clients on the listener, and what each connection needs;
        // new: finished jobs, on the pool's doorbell.
        let mut fds = vec![PollFd::new(listener.as_fd(), Interest::POLLIN)];
        fds.extend(connections.iter().map(|c| PollFd::new(c.stream.as_fd(), c.interest())));
        fds.push(PollFd::new(pool.doorbell.as_fd(), Interest::POLLIN));
        // Wait until something is ready: the only place the server waits.
        trace!("poll: waiting on {} fds", fds.len());
        let _ = poll(&mut fds, PollTimeout::NONE); // an error (a signal): nothing is ready
        let ready: Vec<_> = fds.iter().map(|f| f.revents().unwrap_or(Interest::empty())).collect();
        stats.loop_turns += 1;
        // Do what is ready, nothing else (an error counts as ready: a read meets it). When
        // the doorbell rang, each connection looks for the piece a worker read for it.
        let rang = ready.last().is_some_and(|e| !e.is_empty()).then(|| pool.doorbell.drain());
        for (connection, events) in connections.iter_mut().zip(ready[1..].iter().copied()) {
            if !events.is_empty() || rang.is_some() {
                connection.on_events(events, &config, &mut stats, &pool);
            }
        }
        if ready[0].contains(Interest::POLLIN) {
            listener::accept_all(&listener, |stream, _| connections.push(Connection::new(stream)));
        }
        // Forget the connections that are done: dropping one closes its socket.
        connections.retain(|connection| !connection.done);
        stats.connections_open = connections.len() as u64;
    }
}

/// What a socket waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// A piece of a file's answer, read on a worker: its bytes, and the file if more may come.
type Piece = (Vec<u8>, Option<File>);

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    done: bool,
    /// A file being sent: where a worker sends the piece it reads, and the file between two.
    pieces: Option<mpsc::Receiver<Piece>>,
    file: Option<File>,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out) = (Buffer::new(), Buffer::new());
        Connection { stream, received, out, done: false, pieces: None, file: None }
    }

    /// Bytes came, or end of file, or an error. One read: if more is waiting, `poll` says
    /// so again next turn.
    fn on_readable(&mut self, config: &Config, stats: &mut Stats, pool: &ThreadPool) {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(count) if count > 0 => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            _ => return self.done = true, // end of file or a reset: the client is gone
        }
        // A whole request: answer it (with `Connection: close`: one request a connection).
        let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
        let app = |request: &http::Request| app::handle(request, &context).into_owned();
        let (action, framing) = match http::take_request(&mut self.received, app) {
            Some(Ok(taken)) => taken,
            Some(Err(rejected)) => (Action::Respond(rejected), Framing::CLOSE),
            None => return, // not all here yet
        };
        let (framing, chapter) = (Framing { keep_alive: false, ..framing }, config.chapter);
        stats.requests_served += 1;
        let Action::ReadFile { path } = action else {
            let response = blocking::perform(action, config);
            write_response(&mut self.out, &response, &framing, chapter, &date::now());
            return self.on_writable(config, pool);
        };
        // New: a file is opened, and its answer's head and first piece made, on a worker.
        let (root, delay) = (config.root.clone(), config.fs_delay);
        self.pieces = Some(pool.run(move || {
            let (opened, mut piece) = (files::open(&root, &path, delay), Vec::new());
            let head = match &opened {
                Ok((_, length)) => files::streamed_response(&path, *length),
                Err(error) => files::error_response(error), // 404, or 500
            };
            write_response(&mut piece, &head, &framing, chapter, &date::now());
            let Some((mut file, _)) = opened.ok().filter(|_| !framing.head_only) else {
                return (piece, None); // the head alone
            };
            piece.extend(files::read_chunk(&mut file, delay).unwrap_or_default());
            (piece, Some(file))
        }));
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest.
    fn on_writable(&mut self, config: &Config, pool: &ThreadPool) {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => return self.done = true, // the client left
            }
        }
        // All sent. New: the file's next piece, read on a worker; or, with none, close.
        if let Some(mut file) = self.file.take() {
            let delay = config.fs_delay;
            // (A read that fails sends nothing: the answer ends there, cut short.)
            self.pieces = Some(pool.run(move || {
                (files::read_chunk(&mut file, delay).unwrap_or_default(), Some(file))
            }));
        }
        self.done = self.pieces.is_none();
    }

    /// The doorbell rang: the piece a worker read for it may be in.
    fn on_piece(&mut self, config: &Config, pool: &ThreadPool) {
        let piece = self.pieces.as_ref().map(mpsc::Receiver::try_recv);
        let Some(Ok((bytes, file))) = piece else { return };
        self.out.extend_from_slice(&bytes);
        (self.pieces, self.file) = (None, file.filter(|_| !bytes.is_empty())); // empty: the end
        self.on_writable(config, pool);
    }
}

/// What the loop calls.
impl Connection {
    /// Read until the request is in, then write until its answer is out; nothing while a
    /// worker reads for it.
    fn interest(&self) -> Interest {
        match (self.pieces.is_some(), self.out.is_empty()) {
            (true, true) => Interest::empty(),
            (false, true) => Interest::POLLIN,
            (_, false) => Interest::POLLOUT,
        }
    }

    fn on_events(
        &mut self, events: Interest, config: &Config, stats: &mut Stats, pool: &ThreadPool,
    ) {
        if events.is_empty() {
            self.on_piece(config, pool);
        } else if events.contains(Interest::POLLOUT) {
            self.on_writable(config, pool);
        } else {
            self.on_readable(config, stats, pool);
        }
    }
}

/// What a worker runs: a blocking call, and the sending of its result.
type Job = Box<dyn FnOnce() + Send>;

/// Threads for the blocking calls the loop must not make, as the Rust Book's `ThreadPool`:
/// workers take jobs from one channel, each its turn at the `Mutex` (`Arc`: shared across
/// threads; `unwrap`: only a panic while it is held could poison it), and ring the doorbell.
struct ThreadPool {
    jobs: mpsc::Sender<Job>,
    doorbell: Arc<SelfPipe>,
}

impl ThreadPool {
    fn new(workers: usize) -> ThreadPool {
        let (jobs, waiting) = mpsc::channel::<Job>();
        let waiting = Arc::new(Mutex::new(waiting));
        let doorbell = Arc::new(SelfPipe::new().expect("a socket pair for the doorbell"));
        for _ in 0..workers {
            let (waiting, doorbell) = (waiting.clone(), doorbell.clone());
            thread::spawn(move || loop {
                let job = waiting.lock().unwrap().recv(); // unlocked again before the job runs
                let Ok(job) = job else { return }; // the loop is gone
                job();
                doorbell.wake();
            });
        }
        ThreadPool { jobs, doorbell }
    }

    /// Runs `read` on a worker; its piece comes back on the channel returned.
    fn run(&self, read: impl FnOnce() -> Piece + Send + 'static) -> mpsc::Receiver<Piece> {
        let (piece, receiver) = mpsc::channel();
        let _ = self.jobs.send(Box::new(move || drop(piece.send(read()))));
        receiver
    }
}
