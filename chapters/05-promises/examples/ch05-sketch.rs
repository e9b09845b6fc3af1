//! Sketch of chapter 5: promises. Sketch 4's wait written as a chain: a `Deferred` is
//! settled once, and the `Promise` it handed out runs its next step then, from the loop's
//! ready queue, never inside the call that settled it. `/sleep` is `delay(ms)`, then the
//! step that lets its held answer go.
//!
//! Left out (`chapters/05-promises/src/` has them): a value that comes before its step,
//! errors that skip the rest of a chain, `/upstream/` as a chain; and sketch 4's 408.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::{self, Action, Context, Stats};
use shared::http::{self, Response};
use shared::{args::Config, blocking, buffer::Buffer, listener, trace};

fn main() {
    let config = Config::from_args("ch05-sketch", &[]);
    if config.trace {
        trace::enable();
    }
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
        // Do what is ready, nothing else (an error counts as ready: a read meets it).
        for (connection, events) in connections.iter_mut().zip(ready[1..].iter().copied()) {
            if !events.is_empty() {
                connection.on_events(events, &config, &mut stats, &mut el);
            }
        }
        if ready[0].contains(Interest::POLLIN) {
            listener::accept_all(&listener, |stream, _| connections.push(Connection::new(stream)));
        }
        // New: settle the timers that are due, then run the steps that became ready.
        let now = Instant::now();
        let (due, later): (Vec<_>, _) = el.timers.drain(..).partition(|(at, _)| *at <= now);
        el.timers = later;
        due.into_iter().for_each(|(_, deferred)| deferred.resolve(&mut el, ()));
        while let Some(step) = el.ready.pop_front() {
            step(&mut el, ()); // a step that settles another promise queues the next one
        }
        // Forget the connections that are done: dropping one closes its socket.
        connections.retain(|connection| !connection.done);
        stats.connections_open = connections.len() as u64;
    }
}

/// What a socket waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// What the loop keeps for promises: timers' Deferreds (`delay`), steps ready to run.
struct EventLoop {
    timers: Vec<(Instant, Deferred<()>)>,
    ready: VecDeque<Step<()>>,
}

impl EventLoop {
    /// A promise that is settled once `wait` has passed: a timer's Deferred.
    fn delay(&mut self, wait: Duration) -> Promise<()> {
        let (deferred, promise) = deferred();
        self.timers.push((Instant::now() + wait, deferred));
        promise
    }
}

/// A promise's next step, and where it waits, owned by both its Deferred (which settles it)
/// and its Promise (which says what comes next): `Rc<RefCell<..>>`, borrows checked at run time.
type Step<T> = Box<dyn FnOnce(&mut EventLoop, T)>;
struct Deferred<T>(Rc<RefCell<Option<Step<T>>>>);
struct Promise<T>(Rc<RefCell<Option<Step<T>>>>);

fn deferred<T>() -> (Deferred<T>, Promise<T>) {
    let slot = Rc::new(RefCell::new(None));
    (Deferred(slot.clone()), Promise(slot))
}

impl<T: 'static> Deferred<T> {
    /// Settles it, once (it takes `self`): its step is queued, to run after this call.
    fn resolve(self, el: &mut EventLoop, value: T) {
        if let Some(step) = self.0.take() {
            el.ready.push_back(Box::new(move |el, ()| step(el, value)));
        }
    }
}

impl<T: 'static> Promise<T> {
    /// The next step of a chain: it gets the value on a later turn; what it returns, the
    /// promise `then` returns gets.
    fn then<U: 'static>(self, step: impl FnOnce(&mut EventLoop, T) -> U + 'static) -> Promise<U> {
        let (next, promise) = deferred();
        *self.0.borrow_mut() = Some(Box::new(move |el, value| {
            let value = step(el, value);
            next.resolve(el, value)
        }));
        promise
    }
}

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    done: bool,
    /// Its answer (a `/sleep`'s) is held until a chain lets it go (shared with that chain).
    held: Rc<Cell<bool>>,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out, held) = (Buffer::new(), Buffer::new(), Rc::default());
        Connection { stream, received, out, done: false, held }
    }

    /// Bytes came, or end of file, or an error. One read: if more is waiting, `poll` says
    /// so again next turn.
    fn on_readable(&mut self, config: &Config, stats: &mut Stats, el: &mut EventLoop) {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(count) if count > 0 => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            _ => return self.done = true, // end of file or a reset: the client is gone
        }
        // A whole request: answer it (with `Connection: close`: one request a connection).
        // New: a `/sleep`'s answer is held until its chain lets it go.
        let app = |request: &http::Request| run_app(request, config, stats, el, &self.held);
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
}

/// What the loop calls.
impl Connection {
    /// Read until the request is in, then write until its answer is out: unless the
    /// answer is held, and waits for its chain.
    fn interest(&self) -> Interest {
        match (self.held.get(), self.out.is_empty()) {
            (true, _) => Interest::empty(),
            (false, true) => Interest::POLLIN,
            (false, false) => Interest::POLLOUT,
        }
    }

    fn on_events(
        &mut self, events: Interest, config: &Config, stats: &mut Stats, el: &mut EventLoop,
    ) {
        if events.contains(Interest::POLLOUT) {
            self.on_writable();
        } else {
            self.on_readable(config, stats, el);
        }
    }
}

/// Asks the application what to do. New: `/sleep`'s answer is held, and a chain lets it go:
/// `delay(ms)`, then the step that clears `held`. A slow disk or upstream still blocks.
fn run_app(
    request: &http::Request, config: &Config, stats: &Stats, el: &mut EventLoop,
    held: &Rc<Cell<bool>>,
) -> Response {
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
    match app::handle(request, &context) {
        Action::Sleep { ms } => {
            held.set(true);
            let held = held.clone();
            el.delay(Duration::from_millis(ms)).then(move |_, ()| held.set(false));
            app::slept(ms)
        }
        action => blocking::perform(action, config),
    }
}
