//! Sketch of chapter 5: promises. Sketch 4's timer as a chain: `delay(ms)` returns a `Promise`
//! that the timer's `Deferred` settles once, and `then` attaches the next step, which the
//! loop runs from its ready queue, never inside the call that settled it.
//!
//! Left out (`chapters/05-promises/src/` has them): a value that comes before its step,
//! errors that skip the rest of a chain, `/upstream/` as a chain; and sketch 4's 408.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};
use std::{cell::Cell, cell::RefCell, collections::VecDeque, net::TcpStream, os::fd::AsFd, rc::Rc};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::{args::Config, blocking, buffer::Buffer, http, listener, trace};

fn main() {
    let config = Config::from_args("ch05-sketch", &[]);
    config.trace.then(trace::enable);
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut connections: Vec<Connection> = Vec::new();
    let mut stats = Stats::default();
    let mut el = EventLoop { timers: Vec::new(), ready: VecDeque::new() };
    loop {
        // Say what we wait for: clients on the listener, and what each connection needs.
        let mut fds = vec![PollFd::new(listener.as_fd(), Interest::POLLIN)];
        fds.extend(connections.iter().map(|c| PollFd::new(c.stream.as_fd(), c.interest())));
        // And for how long: until the soonest timer, in whole milliseconds rounded up.
        // Rounded down, the loop would wake just before it is due, find nothing, and spin.
        let soonest = el.timers.iter().map(|(at, _)| *at).min();
        let wait = soonest.map(|at| at.saturating_duration_since(Instant::now()));
        let ms = wait.map(|wait| wait.as_nanos().div_ceil(1_000_000));
        let timeout = ms.map_or(PollTimeout::NONE, |ms| ms.try_into().unwrap_or(PollTimeout::MAX));
        trace!("poll: waiting on {} fds, timeout {ms:?} ms", fds.len());
        let _ = poll(&mut fds, timeout); // an error (a signal): nothing is ready
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
        // New: settle the timers that are due, then run the steps that became ready.
        while let Some(due) = el.timers.iter().position(|(at, _)| *at <= Instant::now()) {
            el.timers.swap_remove(due).1.resolve((), &mut el);
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

/// New: what the loop keeps for promises: the timers' Deferreds, and the steps to run.
struct EventLoop {
    timers: Vec<(Instant, Deferred<()>)>,
    ready: VecDeque<Step<()>>,
}

/// A promise that its timer settles once `wait` has passed (the chapter: `promise::delay`).
fn delay(el: &mut EventLoop, wait: Duration) -> Promise<()> {
    let (deferred, promise) = deferred();
    el.timers.push((Instant::now() + wait, deferred));
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
    out: Buffer,
    done: bool,
    held: Rc<Cell<bool>>, // new: its answer is held until a chain lets it go (shared with it)
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out, held) = (Buffer::new(), Buffer::new(), Rc::default());
        Connection { stream, received, out, done: false, held }
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
        // New: the answer to a `/sleep` is held until its chain, `delay` then a step, lets it go.
        let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
        let app = |request: &http::Request| match app::handle(request, &context) {
            Action::Sleep { ms } => {
                let held = self.held.clone();
                held.set(true);
                delay(el, Duration::from_millis(ms)).then(move |_, ()| held.set(false));
                app::slept(ms)
            }
            action => blocking::perform(action, config), // a slow disk or upstream still blocks
        };
        if http::answer(&mut self.received, &mut self.out, config.chapter, false, app).is_some() {
            stats.requests_served += 1;
            self.on_writable(); // most answers fit in the socket at once
        }
    }

    /// There is room to write: send what the kernel takes now, and `poll` for the rest.
    fn on_writable(&mut self) {
        while !self.held.get() && !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break, // the client left
            }
        }
        self.done = !self.held.get(); // all sent: close
    }

    /// Read until the request is in, then write until its answer is out, unless it is held.
    fn interest(&self) -> Interest {
        match (self.held.get(), self.out.is_empty()) {
            (true, _) => Interest::empty(),
            (false, true) => Interest::POLLIN,
            (false, false) => Interest::POLLOUT,
        }
    }
}
