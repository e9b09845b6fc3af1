//! Sketch of chapter 6: a thread pool. `poll` cannot wait for a disk (a file is always ready,
//! and then `read` blocks), so `run` gives each blocking call to a worker thread and returns a
//! promise of its result, which the loop resolves when the worker rings its doorbell.
//!
//! Left out (`chapters/06-thread-pool/src/` has them): a job that panics; a download in bounded
//! memory, a piece at a time: chapter 6's `connection/download.rs` (here a worker reads a whole
//! file); sketch 5's timers and chapter 5's upstream chain (here they block a worker).

use std::io::{self, Read, Write};
use std::{cell::RefCell, collections::VecDeque, net::TcpStream, os::fd::AsFd, rc::Rc};
use std::{sync::mpsc, sync::Arc, sync::Mutex, thread};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::http::{self, date, response::write_response, response::Framing, Response};
use shared::{args::Config, blocking, buffer::Buffer, listener, self_pipe, trace};

fn main() {
    let config = Config::from_args("ch06-sketch", &[]);
    config.trace.then(trace::enable);
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut connections: Vec<Connection> = Vec::new();
    let mut stats = Stats::default();
    // New: the workers, as the Rust Book's `ThreadPool`, each ringing the doorbell after a job.
    let doorbell = Arc::new(self_pipe::SelfPipe::new().expect("a socket pair for the doorbell"));
    let (jobs, waiting) = mpsc::channel::<Job>();
    let waiting = Arc::new(Mutex::new(waiting));
    for _ in 0..config.workers {
        let (waiting, doorbell) = (waiting.clone(), doorbell.clone());
        thread::spawn(move || loop {
            let Ok(job) = waiting.lock().unwrap().recv() else { return }; // the loop is gone
            job(); // (the lock was let go at the end of the line before)
            doorbell.wake();
        });
    }
    let mut el = EventLoop { jobs, running: Vec::new(), ready: VecDeque::new() };
    loop {
        // Say what we wait for: clients on the listener, and what each connection needs.
        let mut fds = vec![PollFd::new(listener.as_fd(), Interest::POLLIN)];
        fds.extend(connections.iter().map(|c| PollFd::new(c.stream.as_fd(), c.interest())));
        fds.push(PollFd::new(doorbell.as_fd(), Interest::POLLIN)); // new: the workers' doorbell
        trace!("poll: waiting on {} fds", fds.len());
        let _ = poll(&mut fds, PollTimeout::NONE); // an error (a signal): nothing is ready
        let ready: Vec<_> = fds.iter().map(|f| f.revents().unwrap_or(Interest::empty())).collect();
        stats.loop_turns += 1;
        // Do what is ready (an error counts as ready: a read meets it).
        for (connection, events) in connections.iter_mut().zip(ready[1..].iter().copied()) {
            if events.contains(Interest::POLLOUT) {
                connection.on_writable();
            } else if !events.is_empty() {
                connection.on_readable(&config, &mut stats, &mut el);
            }
        }
        if ready[0].contains(Interest::POLLIN) {
            listener::accept_all(&listener, |stream, _| connections.push(Connection::new(stream)));
        }
        // New: settle the jobs that are done, then run the steps that became ready.
        doorbell.drain(); // (a job done after this rings again)
        for (result, deferred) in std::mem::take(&mut el.running) {
            match result.try_recv() {
                Ok(response) => deferred.resolve(response, &mut el),
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

/// What the loop keeps for promises: new, the jobs' Deferreds, and the steps to run.
struct EventLoop {
    jobs: mpsc::Sender<Job>, // to the workers
    running: Vec<(mpsc::Receiver<Response>, Deferred<Response>)>,
    ready: VecDeque<Step<()>>,
}

/// New: a promise that a worker settles with what `job` returns (sketch 5's `delay`, for a disk).
fn run(el: &mut EventLoop, job: impl FnOnce() -> Response + Send + 'static) -> Promise<Response> {
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
        let Some(step) = self.0.take() else { return }; // no next step: the chain's end
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

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Rc<RefCell<Buffer>>, // new: shared with the step that writes the answer into it
    done: bool,
    waiting: bool, // new: for a worker to make the answer
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out) = (Buffer::new(), Rc::default());
        Connection { stream, received, out, done: false, waiting: false }
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
        // New: a worker does what it asks, and the step after it writes the answer.
        let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
        let app = |request: &http::Request| app::handle(request, &context).into_owned();
        let Some(taken) = http::take_request(&mut self.received, app) else { return };
        let (action, framing) = taken.unwrap_or_else(|bad| (Action::Respond(bad), Framing::CLOSE));
        let framing = Framing { keep_alive: false, ..framing };
        stats.requests_served += 1;
        self.waiting = true;
        let (server, config, out) = (config.chapter, config.clone(), self.out.clone());
        run(el, move || blocking::perform(action, &config)).then(move |_, response| {
            write_response(&mut *out.borrow_mut(), &response, &framing, server, &date::now());
        });
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest.
    fn on_writable(&mut self) {
        let mut out = self.out.borrow_mut();
        while !out.is_empty() {
            match self.stream.write(&out) {
                Ok(count) => out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break, // the client left
            }
        }
        self.done = true; // all sent: close
    }

    /// Read until the request is in, then wait for its answer, then write until it is out.
    fn interest(&self) -> Interest {
        match (self.waiting, self.out.borrow().is_empty()) {
            (_, false) => Interest::POLLOUT,
            (false, true) => Interest::POLLIN,
            (true, true) => Interest::empty(), // a worker is making the answer
        }
    }
}

/// What a worker runs: a blocking call, and the sending of its result.
type Job = Box<dyn FnOnce() + Send>;
