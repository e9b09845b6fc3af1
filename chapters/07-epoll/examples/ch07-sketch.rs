//! Sketch of chapter 7: epoll. `poll` is handed every socket on every turn and walks them
//! all, so ten thousand idle clients make each turn slow. A `Poller` on epoll keeps the
//! list in the kernel instead: it is told when a registration comes or changes what it
//! waits for, and its wait hands back only what is ready. A turn costs what is ready.
//!
//! Left out (`chapters/07-epoll/src/` has them): `--backend poll`, kqueue for macOS and the
//! BSDs, and what sketches 3-6 show that this one does not need: the graceful stop, the
//! timeouts, errors in a promise chain, a job that panics.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nix::poll::{PollFlags, PollTimeout};
#[cfg(target_os = "linux")]
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};

use shared::app::{self, Action, Context, Stats};
use shared::http::{self, date, response::write_response, response::Framing, Parse, Response};
use shared::{args::Config, buffer::Buffer, files, listener, self_pipe::SelfPipe, trace, upstream};

fn main() {
    if cfg!(not(target_os = "linux")) {
        println!("this sketch shows epoll, Linux's own; on this system run chapter 7 itself");
        std::process::exit(2);
    }
    let config = Config::from_args("ch07-sketch", &[]);
    if config.trace {
        trace::enable();
    }
    let listener = listener::listen(&config, true); // non-blocking: `accept` never waits
    let mut event_loop = EventLoop::new(config);
    event_loop.register(listener, Interest::POLLIN);
    event_loop.register(event_loop.pool.doorbell.clone(), Interest::POLLIN);
    loop {
        event_loop.turn();
    }
}

/// Names one registration (or one timer). Never reused: an old token names nothing.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Token(u64);

/// What a registration waits for: POLLIN (to read without waiting), POLLOUT (to write).
type Interest = PollFlags;

/// What a callback says it waits for next, or `None` once it is done: the loop then drops
/// the handler, which closes its socket.
type Next = Option<Interest>;

/// What the loop calls back. It owns its socket, which it lends to `poll`.
trait Handler: AsFd {
    fn on_readable(&mut self, event_loop: &mut EventLoop, token: Token) -> Next;
    fn on_writable(&mut self, _: &mut EventLoop, _: Token) -> Next {
        None // only a connection ever waits to write,
    }
    fn on_answer(&mut self, _: &mut EventLoop, _: Token, _: Response, _: Option<Piece>) -> Next {
        None // or for an answer to come later,
    }
    fn on_piece(&mut self, _: &mut EventLoop, _: Token, _: io::Result<Piece>) -> Next {
        None // or for the pieces of a file
    }
}

/// Code the loop runs later, with the loop lent to it: a promise's next step.
type Callback = Box<dyn FnOnce(&mut EventLoop)>;

/// The loop, and what its handlers share.
struct EventLoop {
    /// In token order. `dyn Handler`: a listener and connections, as one trait.
    handlers: BTreeMap<Token, (Interest, Box<dyn Handler>)>,
    next_token: u64,
    /// The Deferreds that timers will resolve, soonest first (`delay`).
    timers: BTreeMap<(Instant, Token), Deferred<()>>,
    /// Promises' next steps, to run once this turn's callbacks are over.
    ready: VecDeque<Callback>,
    /// New: the kernel's list of what each registration waits for.
    poller: Poller,
    /// The pool, and the Deferreds its jobs will resolve, by job.
    pool: ThreadPool,
    promised: BTreeMap<Token, Deferred<io::Result<Piece>>>,
    config: Config,
    stats: Stats,
}

impl EventLoop {
    fn new(config: Config) -> EventLoop {
        let (handlers, timers, ready) = (BTreeMap::new(), BTreeMap::new(), VecDeque::new());
        let (pool, promised, stats) =
            (ThreadPool::new(config.workers), BTreeMap::new(), Stats::default());
        let poller = Poller::new();
        EventLoop { handlers, next_token: 0, timers, ready, poller, pool, promised, config, stats }
    }

    fn token(&mut self) -> Token {
        self.next_token += 1;
        Token(self.next_token)
    }

    fn register(&mut self, handler: impl Handler + 'static, interest: Interest) {
        let token = self.token();
        self.poller.add(handler.as_fd(), token, interest);
        self.handlers.insert(token, (interest, Box::new(handler)));
    }

    /// A promise that resolves once `wait` has passed: a timer's Deferred.
    fn delay(&mut self, wait: Duration) -> Promise<()> {
        let (deferred, promise) = deferred();
        let token = self.token();
        self.timers.insert((Instant::now() + wait, token), deferred);
        promise
    }

    /// A promise of what `job` returns, run on the pool.
    fn run(
        &mut self, job: impl FnOnce() -> io::Result<Piece> + Send + 'static,
    ) -> Promise<io::Result<Piece>> {
        let (deferred, promise) = deferred();
        let job_id = self.token();
        self.promised.insert(job_id, deferred);
        let (results, doorbell) = (self.pool.results.0.clone(), self.pool.doorbell.clone());
        let _ = self.pool.jobs.send(Box::new(move || {
            let _ = results.send((job_id, job()));
            doorbell.wake();
        }));
        promise
    }

    /// One turn: wait until some registered socket is ready or the first timer is due, then
    /// call back each that is, resolve the due timers, and run the steps that became ready.
    fn turn(&mut self) {
        // No longer than until the first timer, in whole milliseconds rounded up: rounded
        // down, the loop would wake just before it is due, find nothing to do, and spin.
        let first =
            self.timers.keys().next().map(|(at, _)| at.saturating_duration_since(Instant::now()));
        let ms = first.map(|wait| wait.as_nanos().div_ceil(1_000_000));
        let timeout = ms.map_or(PollTimeout::NONE, |ms| ms.try_into().unwrap_or(PollTimeout::MAX));
        trace!("epoll: waiting, timeout {ms:?} ms");
        let ready = self.poller.wait(timeout); // what is ready, and nothing else
        self.stats.loop_turns += 1;
        for (token, events) in ready.into_iter().filter(|(_, events)| !events.is_empty()) {
            self.call(token, |handler, event_loop| match events {
                Interest::POLLOUT => handler.on_writable(event_loop, token),
                _ => handler.on_readable(event_loop, token), // or an error: a read meets it
            });
        }
        let now = Instant::now();
        while let Some(entry) = self.timers.first_entry().filter(|entry| entry.key().0 <= now) {
            entry.remove().resolve(self, ());
        }
        while let Some(step) = self.ready.pop_front() {
            step(self); // a step that settles another promise queues the next one
        }
    }

    /// Calls back `token`'s handler, out of the loop while it runs so that it may change the
    /// loop (the listener registers clients); kept after, unless it says it is done.
    fn call(&mut self, token: Token, callback: impl FnOnce(&mut dyn Handler, &mut Self) -> Next) {
        let Some((was, mut handler)) = self.handlers.remove(&token) else { return }; // closed
        if let Some(interest) = callback(handler.as_mut(), self) {
            if interest != was {
                self.poller.modify(handler.as_fd(), token, interest); // new: tell the kernel
            }
            self.handlers.insert(token, (interest, handler));
        } // else dropped: a socket that closes leaves epoll's list by itself
    }
}

/// What a promise's next step gets: the loop, and the value.
type Step<T> = Box<dyn FnOnce(&mut EventLoop, T)>;

/// Where a Deferred and its Promise meet: the value, or the step waiting for it; whichever
/// comes second sends the pair to the ready queue. Both halves own it and may change it:
/// `Rc<RefCell<..>>`, shared ownership with its borrow rules checked at run time.
struct Slot<T> {
    value: Option<T>,
    step: Option<Step<T>>,
}

/// The producer's half: resolve it once (`resolve` takes it by value).
struct Deferred<T>(Rc<RefCell<Slot<T>>>);

/// The consumer's half: a value that will be there on some later turn.
struct Promise<T>(Rc<RefCell<Slot<T>>>);

fn deferred<T>() -> (Deferred<T>, Promise<T>) {
    let slot = Rc::new(RefCell::new(Slot { value: None, step: None }));
    (Deferred(slot.clone()), Promise(slot))
}

impl<T: 'static> Deferred<T> {
    fn resolve(self, event_loop: &mut EventLoop, value: T) {
        let mut slot = self.0.borrow_mut();
        match slot.step.take() {
            Some(step) => event_loop.ready.push_back(Box::new(move |el| step(el, value))),
            None => slot.value = Some(value), // for the step to find when it comes
        }
    }
}

impl<T: 'static> Promise<T> {
    /// The last step of a chain: it gets the value, on a later turn.
    fn on_resolved(
        self, event_loop: &mut EventLoop, step: impl FnOnce(&mut EventLoop, T) + 'static,
    ) {
        let mut slot = self.0.borrow_mut();
        match slot.value.take() {
            Some(value) => event_loop.ready.push_back(Box::new(move |el| step(el, value))),
            None => slot.step = Some(Box::new(step)),
        }
    }

    /// A step in a chain: from the value, the next one, of which this is the promise.
    fn then<U: 'static>(
        self, event_loop: &mut EventLoop, step: impl FnOnce(&mut EventLoop, T) -> U + 'static,
    ) -> Promise<U> {
        let (next, promise) = deferred();
        self.on_resolved(event_loop, move |el, value| {
            let value = step(el, value);
            next.resolve(el, value)
        });
        promise
    }
}

/// The listener: readable means clients are waiting to be accepted.
impl Handler for TcpListener {
    fn on_readable(&mut self, event_loop: &mut EventLoop, _: Token) -> Next {
        listener::accept_all(self, |stream, _| {
            event_loop.register(Connection::new(stream), Interest::POLLIN);
            event_loop.stats.connections_open += 1;
        });
        Some(Interest::POLLIN)
    }
}

/// A client that sends faster than we answer fills this much of our memory, no more.
const MAX_RECEIVED: usize = 2 << 20; // more than the longest request the parser takes

/// One client, remembered between turns: what it has sent so far, what we still owe it.
struct Connection {
    stream: TcpStream,
    received: Buffer,
    out: Buffer,
    /// The client shut its side (end of file): read no more, answer what came.
    peer_closed: bool,
    /// Our last answer said `Connection: close`: answer no more, close once it is sent.
    last: bool,
    /// `received` may hold a whole request that is not answered yet.
    pending: bool,
    /// A request whose answer a promise brings later (`on_answer`): how to frame it.
    waiting: Option<Framing>,
    /// A file being sent: how much of it is still to come, and the file, unless a worker
    /// has it, reading the next piece.
    left: u64,
    file: Option<File>,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        let (received, out) = (Buffer::new(), Buffer::new());
        let (peer_closed, last, pending, waiting, file) = (false, false, false, None, None);
        Connection { stream, received, out, peer_closed, last, pending, waiting, left: 0, file }
    }

    /// Answers the next whole request received, if there is one.
    fn answer_next(&mut self, event_loop: &mut EventLoop, token: Token) {
        let (response, framing) = match http::parse(&self.received) {
            Parse::Complete { request, consumed } => {
                let (reply, framing) =
                    (run_app(&request, event_loop), Framing::for_request(&request));
                self.received.consume(consumed); // answered, or under way: forget it
                match reply {
                    Reply::Now(response) => (response, framing),
                    Reply::Later(answer) => {
                        self.waiting = Some(framing);
                        // The chain's last step hands the answer to this connection, if it
                        // is still open; those behind it wait until then.
                        return answer.on_resolved(
                            event_loop,
                            move |event_loop, (response, piece)| {
                                event_loop
                                    .call(token, |h, el| h.on_answer(el, token, response, piece))
                            },
                        );
                    }
                }
            }
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE),
            Parse::Incomplete => return self.pending = false, // wait for the rest
        };
        self.respond(response, framing, event_loop);
    }

    fn respond(&mut self, response: Response, mut framing: Framing, event_loop: &mut EventLoop) {
        framing.keep_alive &= !response.close; // keep it if the client asks, the answer allows
        self.last = !framing.keep_alive;
        let chapter = event_loop.config.chapter;
        write_response(&mut self.out, &response, &framing, chapter, &date::now());
        event_loop.stats.requests_served += 1;
    }

    /// A piece of a file into the output; and what is left of the file, to read next.
    fn take(&mut self, piece: Piece) {
        self.out.extend_from_slice(&piece.bytes);
        self.left = piece.left;
        self.file = (piece.left > 0).then_some(piece.file);
    }

    fn close(&mut self, event_loop: &mut EventLoop) -> Next {
        event_loop.stats.connections_open -= 1;
        None // done: the loop drops it, which closes the socket
    }
}

impl Handler for Connection {
    /// Bytes came, or end of file, or an error. One read: if more is waiting, `poll` says
    /// so again next turn.
    fn on_readable(&mut self, event_loop: &mut EventLoop, token: Token) -> Next {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => self.peer_closed = true,
            Ok(count) => self.received.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return self.close(event_loop), // a reset: the client is gone
        }
        self.pending = true;
        self.on_writable(event_loop, token)
    }

    /// Once the last answer is sent, answers the next whole request (one a turn, so that
    /// pipelined requests go in order and other clients get their turns), then sends what
    /// the kernel takes now; `poll` says when it takes more.
    fn on_writable(&mut self, event_loop: &mut EventLoop, token: Token) -> Next {
        let waiting = self.waiting.is_some() || self.left > 0;
        if self.out.is_empty() && self.pending && !self.last && !waiting {
            self.answer_next(event_loop, token);
        }
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(count) => self.out.consume(count),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => return self.close(event_loop), // the client left
            }
        }
        if let Some(mut file) = self.file.take_if(|_| self.out.is_empty()) {
            // The last piece is sent: read the next, on a worker.
            let (left, delay) = (self.left, event_loop.config.fs_delay);
            let piece = event_loop.run(move || {
                let bytes = files::read_chunk(&mut file, delay)?;
                Ok(Piece { left: left.saturating_sub(bytes.len() as u64), bytes, file })
            });
            piece.on_resolved(event_loop, move |event_loop, piece| {
                event_loop.call(token, |handler, el| handler.on_piece(el, token, piece))
            });
        }
        let waiting = self.waiting.is_some() || self.left > 0;
        if self.out.is_empty() && !waiting && (self.last || self.peer_closed && !self.pending) {
            return self.close(event_loop); // nothing more to read, answer or send
        }
        let mut interest = Interest::empty();
        let reading = !self.peer_closed && !self.last && self.received.len() < MAX_RECEIVED;
        interest.set(Interest::POLLIN, reading);
        // Writable again next turn with output left, or if another request may be in.
        interest
            .set(Interest::POLLOUT, !self.out.is_empty() || self.pending && !self.last && !waiting);
        Some(interest) // empty while it waits with its buffer full: `poll` still sees a reset
    }

    /// The answer a promise brought, to the request that waited for it, with the first
    /// piece of its file, if it has one (none for `HEAD`).
    fn on_answer(
        &mut self, event_loop: &mut EventLoop, token: Token, response: Response,
        piece: Option<Piece>,
    ) -> Next {
        if let Some(framing) = self.waiting.take() {
            self.respond(response, framing, event_loop);
            if let (Some(piece), false) = (piece, framing.head_only) {
                self.take(piece);
            }
        }
        self.on_writable(event_loop, token)
    }

    /// The next piece of the file being sent. Without it the answer cannot end: close.
    fn on_piece(
        &mut self, event_loop: &mut EventLoop, token: Token, piece: io::Result<Piece>,
    ) -> Next {
        match piece {
            Ok(piece) => self.take(piece),
            Err(_) => return self.close(event_loop),
        }
        self.on_writable(event_loop, token)
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

/// What the application answered: a response now, or the promise of one (with the first
/// piece of a file, for a file).
enum Reply {
    Now(Response),
    Later(Promise<(Response, Option<Piece>)>),
}

/// Asks the application what to do. `/sleep` is a chain: `delay(ms)`, then its answer. A
/// file (new) is a chain too: open it and read its first piece on the pool, then its answer.
/// A slow upstream still blocks.
fn run_app(request: &http::Request, event_loop: &mut EventLoop) -> Reply {
    let (config, stats) = (&event_loop.config, event_loop.stats);
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats };
    Reply::Now(match app::handle(request, &context) {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            let slept = event_loop.delay(Duration::from_millis(ms));
            return Reply::Later(slept.then(event_loop, move |_, ()| (app::slept(ms), None)));
        }
        Action::ReadFile { path } => {
            let (root, relative, delay) = (config.root.clone(), path.clone(), config.fs_delay);
            let first = event_loop.run(move || {
                let (mut file, length) = files::open(&root, &relative, delay)?;
                let bytes = files::read_chunk(&mut file, delay)?;
                Ok(Piece { left: length.saturating_sub(bytes.len() as u64), bytes, file })
            });
            return Reply::Later(first.then(event_loop, move |_, piece| match piece {
                Ok(piece) => (
                    files::streamed_response(&path, piece.left + piece.bytes.len() as u64),
                    Some(piece),
                ),
                Err(error) => (files::error_response(&error), None),
            }));
        }
        Action::Upstream { address, path_and_query } => {
            upstream::fetch_blocking(address, &path_and_query)
        }
    })
}

/// A piece of a file, read on a worker: its bytes, how much of the file is left after them,
/// and the file itself, to read the next piece from.
struct Piece {
    bytes: Vec<u8>,
    left: u64,
    file: File,
}

/// What a worker runs: a blocking call, and the delivery of its result (`Done`: by the
/// token of the Deferred it resolves).
type Job = Box<dyn FnOnce() + Send>;
type Done = (Token, io::Result<Piece>);

/// Threads for the blocking calls the loop must not make, as the Rust Book's `ThreadPool`:
/// workers take jobs from one channel, each its turn at the `Mutex` (`Arc`: shared
/// ownership across threads; `unwrap`: only a panic while it is held could poison it). A
/// job's result goes back by another channel, and rings the doorbell, which the loop watches.
struct ThreadPool {
    jobs: Sender<Job>,
    results: (Sender<Done>, Receiver<Done>),
    doorbell: Arc<SelfPipe>,
}

impl ThreadPool {
    fn new(workers: usize) -> ThreadPool {
        let (jobs, waiting) = mpsc::channel::<Job>();
        let waiting = Arc::new(Mutex::new(waiting));
        for _ in 0..workers {
            let waiting = waiting.clone();
            thread::spawn(move || loop {
                let job = waiting.lock().unwrap().recv(); // unlocked again before the job runs
                let Ok(job) = job else { return }; // the loop is gone
                job();
            });
        }
        let doorbell = Arc::new(SelfPipe::new().expect("a socket pair for the doorbell"));
        ThreadPool { jobs, results: mpsc::channel(), doorbell }
    }
}

/// The pool's doorbell: readable when jobs have finished. Settles their promises.
impl Handler for Arc<SelfPipe> {
    fn on_readable(&mut self, event_loop: &mut EventLoop, _: Token) -> Next {
        self.drain(); // first: a result that comes after it rings again
        while let Ok((job_id, result)) = event_loop.pool.results.1.try_recv() {
            if let Some(deferred) = event_loop.promised.remove(&job_id) {
                deferred.resolve(event_loop, result);
            }
        }
        Some(Interest::POLLIN)
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

    /// What to ask epoll for. The token rides along as the event's data: epoll hands it
    /// back with the event, so we need no table from sockets to tokens.
    fn event(token: Token, interest: Interest) -> EpollEvent {
        let mut flags = EpollFlags::empty();
        flags.set(EpollFlags::EPOLLIN, interest.contains(Interest::POLLIN));
        flags.set(EpollFlags::EPOLLOUT, interest.contains(Interest::POLLOUT));
        EpollEvent::new(flags, token.0)
    }

    fn add(&self, fd: BorrowedFd, token: Token, interest: Interest) {
        let _ = self.0.add(fd, Poller::event(token, interest)); // fails only out of memory
    }

    fn modify(&self, fd: BorrowedFd, token: Token, interest: Interest) {
        let _ = self.0.modify(fd, &mut Poller::event(token, interest));
    }

    /// Waits until something is ready or `timeout` passes; what is ready, by token. An
    /// error or a hang-up counts as readable, as it did with `poll`: a read meets it.
    fn wait(&self, timeout: PollTimeout) -> Vec<(Token, Interest)> {
        let mut events = [EpollEvent::empty(); 1024]; // the rest wait for the next turn
        let count = self.0.wait(&mut events, timeout).unwrap_or(0); // a signal: none
        let ready = events[..count].iter().map(|event| {
            let (flags, mut ready) = (event.events(), Interest::empty());
            let failed = flags.intersects(EpollFlags::EPOLLERR | EpollFlags::EPOLLHUP);
            ready.set(Interest::POLLIN, failed || flags.contains(EpollFlags::EPOLLIN));
            ready.set(Interest::POLLOUT, flags.contains(EpollFlags::EPOLLOUT));
            (Token(event.data()), ready)
        });
        ready.collect()
    }
}

/// Elsewhere there is no epoll: `main` says so and stops before anything needs one.
#[cfg(not(target_os = "linux"))]
struct Poller;

#[cfg(not(target_os = "linux"))]
impl Poller {
    fn new() -> Poller {
        Poller
    }
    fn add(&self, _: BorrowedFd, _: Token, _: Interest) {}
    fn modify(&self, _: BorrowedFd, _: Token, _: Interest) {}
    fn wait(&self, _: PollTimeout) -> Vec<(Token, Interest)> {
        Vec::new()
    }
}
