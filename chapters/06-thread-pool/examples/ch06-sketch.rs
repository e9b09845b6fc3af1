//! Sketch of chapter 6: a thread pool. `poll` cannot wait for a disk (a file is always ready,
//! and then `read` blocks), so `run` gives each blocking call to a worker and returns a promise
//! of its result, which the loop resolves when the worker rings its doorbell (a self-pipe).
//!
//! Left out (`chapters/06-thread-pool/src/` has them): a job that panics, a file that fails
//! mid-read; and sketch 5's timers and chapter 5's upstream chain (here they block a worker).

use std::io::{self, Read, Write};
use std::sync::{mpsc, Arc, Mutex};
use std::{cell::Cell, cell::RefCell, collections::VecDeque, net::TcpStream, os::fd::AsFd, rc::Rc};
use std::{fs::File, thread};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::http::{date, response::write_response, response::Framing};
use shared::{args::Config, blocking, buffer::Buffer, files, http, listener, self_pipe, trace};

fn main() {
    let config = Config::from_args("ch06-sketch", &[]);
    config.trace.then(trace::enable);
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut connections: Vec<Connection> = Vec::new();
    let mut stats = Stats::default();
    let doorbell = Arc::new(self_pipe::SelfPipe::new().expect("a socket pair for the doorbell"));
    let jobs = start_workers(config.workers, &doorbell);
    let mut el = EventLoop { jobs, running: Vec::new(), ready: VecDeque::new() };
    loop {
        // Say what we wait for: clients, what each connection needs, new: the workers' doorbell.
        let mut fds = vec![PollFd::new(listener.as_fd(), Interest::POLLIN)];
        fds.extend(connections.iter().map(|c| PollFd::new(c.stream.as_fd(), c.interest())));
        fds.push(PollFd::new(doorbell.as_fd(), Interest::POLLIN));
        trace!("poll: waiting on {} fds", fds.len());
        let _ = poll(&mut fds, PollTimeout::NONE); // an error (a signal): nothing is ready
        let ready: Vec<_> = fds.iter().map(|f| f.revents().unwrap_or(Interest::empty())).collect();
        stats.loop_turns += 1;
        // Do what is ready (an error counts as ready: a read meets it).
        for (connection, events) in connections.iter_mut().zip(ready[1..].iter().copied()) {
            if events.contains(Interest::POLLOUT) {
                connection.on_writable(&config, &mut el);
            } else if !events.is_empty() {
                connection.on_readable(&config, &mut stats, &mut el);
            }
        }
        if ready[0].contains(Interest::POLLIN) {
            listener::accept_all(&listener, |stream, _| connections.push(Connection::new(stream)));
        }
        // New: settle the jobs that are done, then run the steps that became ready.
        doorbell.drain();
        for (result, deferred) in std::mem::take(&mut el.running) {
            match result.try_recv() {
                Ok(piece) => deferred.resolve(piece, &mut el),
                Err(_) => el.running.push((result, deferred)), // not done yet
            }
        }
        while let Some(step) = el.ready.pop_front() {
            step(&mut el, ()); // a step that settles the next promise queues the next step
        }
        // Forget the connections that are done: dropping one closes its socket.
        connections.retain(|connection| !connection.done);
        stats.connections_open = connections.len() as u64;
    }
}

/// What a socket waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// What the loop keeps for promises: the jobs' Deferreds (new), and the steps to run.
struct EventLoop {
    jobs: mpsc::Sender<Job>, // to the workers
    running: Vec<(mpsc::Receiver<Piece>, Deferred<Piece>)>,
    ready: VecDeque<Step<()>>,
}

/// New: a promise that a worker settles with what `job` returns (sketch 5's `delay`, for a disk).
fn run(el: &mut EventLoop, job: impl FnOnce() -> Piece + Send + 'static) -> Promise<Piece> {
    let ((deferred, promise), (result, receiver)) = (deferred(), mpsc::channel());
    let _ = el.jobs.send(Box::new(move || drop(result.send(job()))));
    el.running.push((receiver, deferred));
    promise
}

/// A promise's next step. Its Deferred (which settles it) and Promise share it: `Rc<RefCell<_>>`.
type Step<T> = Box<dyn FnOnce(&mut EventLoop, T)>;
struct Deferred<T>(Rc<RefCell<Option<Step<T>>>>);
struct Promise<T>(Rc<RefCell<Option<Step<T>>>>);

fn deferred<T>() -> (Deferred<T>, Promise<T>) {
    let step = Rc::new(RefCell::new(None));
    (Deferred(step.clone()), Promise(step))
}

impl<T: 'static> Deferred<T> {
    /// Settles it, once (it takes `self`): its step is queued, to run after this call.
    fn resolve(self, value: T, el: &mut EventLoop) {
        let Some(step) = self.0.take() else { return }; // nothing follows: the chain's end
        el.ready.push_back(Box::new(move |el, ()| step(el, value)));
    }
}

impl<T: 'static> Promise<T> {
    /// The next link: `step` gets the value on a later turn, the promise returned what it returns.
    fn then<U: 'static>(self, step: impl FnOnce(&mut EventLoop, T) -> U + 'static) -> Promise<U> {
        let (next, promise) = deferred();
        *self.0.borrow_mut() = Some(Box::new(|el, value| next.resolve(step(el, value), el)));
        promise
    }
}

/// New: a piece of an answer, made on a worker: bytes to send, and the file if more may come.
type Piece = (Vec<u8>, Option<File>);

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    done: bool,
    held: Rc<Cell<bool>>, // while a worker makes its next piece, which a chain leaves here
    piece: Rc<RefCell<Option<Piece>>>,
    file: Option<File>, // new: a file being sent, between two pieces
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out, held, piece) =
            (Buffer::new(), Buffer::new(), Rc::default(), Rc::default());
        Connection { stream, received, out, done: false, held, piece, file: None }
    }

    /// Bytes came, or end of file, or an error. One read: if more is waiting, we hear again.
    fn on_readable(&mut self, config: &Config, stats: &mut Stats, el: &mut EventLoop) {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(count) if count > 0 => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            _ => return self.done = true, // end of file or a reset: the client is gone
        }
        // A whole request: answer it (with `Connection: close`: one request a connection).
        // New: a worker makes the answer's head, opening the file a `/files/` sends.
        let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
        let app = |request: &http::Request| app::handle(request, &context).into_owned();
        let Some(taken) = http::take_request(&mut self.received, app) else { return };
        let rejected = |response| (Action::Respond(response), Framing::CLOSE); // bad bytes
        let (action, framing) = taken.unwrap_or_else(rejected);
        stats.requests_served += 1;
        let (framing, config) = (Framing { keep_alive: false, ..framing }, config.clone());
        self.wait_for(el, move || head(action, framing, &config));
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest.
    fn on_writable(&mut self, config: &Config, el: &mut EventLoop) {
        if let Some((bytes, file)) = self.piece.take() {
            self.out.extend_from_slice(&bytes);
            self.file = file.filter(|_| !bytes.is_empty()); // an empty piece: the end
        }
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => return self.done = true, // the client left
            }
        }
        // All sent. New: the file's next piece, read on a worker; or, with none, close.
        let Some(mut file) = self.file.take() else { return self.done = true };
        let delay = config.fs_delay; // (a read that fails sends nothing: the answer ends)
        self.wait_for(el, move || {
            (files::read_chunk(&mut file, delay).unwrap_or_default(), Some(file))
        });
    }

    /// New: runs `job` on a worker; the chain that follows leaves its piece for `on_writable`.
    fn wait_for(&mut self, el: &mut EventLoop, job: impl FnOnce() -> Piece + Send + 'static) {
        let (held, piece) = (self.held.clone(), self.piece.clone());
        held.set(true);
        run(el, job).then(move |_, made| (piece.replace(Some(made)), held.set(false)));
    }

    /// Read until the request is in, then write until its answer is out, unless it is held.
    fn interest(&self) -> Interest {
        match (self.held.get(), self.out.is_empty() && self.piece.borrow().is_none()) {
            (true, _) => Interest::empty(),
            (false, true) => Interest::POLLIN,
            (false, false) => Interest::POLLOUT,
        }
    }
}

/// New, on a worker: the answer's head, and the file to send after it, if any.
fn head(action: Action, framing: Framing, config: &Config) -> Piece {
    let (response, file) = match action {
        Action::ReadFile { path } => match files::open(&config.root, &path, config.fs_delay) {
            Ok((file, length)) => (files::streamed_response(&path, length), Some(file)),
            Err(error) => (files::error_response(&error), None), // 404, or 500
        },
        action => (blocking::perform(action, config), None),
    };
    let mut head = Vec::new();
    write_response(&mut head, &response, &framing, config.chapter, &date::now());
    (head, file.filter(|_| !framing.head_only))
}

/// What a worker runs: a blocking call, and the sending of its result.
type Job = Box<dyn FnOnce() + Send>;

/// Threads for the calls the loop must not make, as the Rust Book's `ThreadPool`: workers take
/// jobs from one channel, each its turn at the `Mutex`, and ring the loop's doorbell after each.
fn start_workers(workers: usize, doorbell: &Arc<self_pipe::SelfPipe>) -> mpsc::Sender<Job> {
    let (jobs, waiting) = mpsc::channel::<Job>();
    let waiting = Arc::new(Mutex::new(waiting));
    for _ in 0..workers {
        let (waiting, doorbell) = (waiting.clone(), doorbell.clone());
        thread::spawn(move || loop {
            let Ok(job) = waiting.lock().unwrap().recv() else { return }; // the loop is gone
            job(); // (the lock was let go at the end of the line before)
            doorbell.wake();
        });
    }
    jobs
}
