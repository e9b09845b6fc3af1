//! Chapter 9's idea: chapter 8's sketch (an `async fn` per client, on an executor and a
//! reactor), once per core. Each of `--threads N` threads runs a loop of its own (the
//! executor and the reactor are thread-locals already) with a listening socket of its own on
//! the same port (`SO_REUSEPORT`), and the kernel hands each new client to one of them. The
//! loops share nothing but what `/stats` shows: what each has served. Left out, in
//! `chapters/09-multicore/src/`:
//! - refusing a port in use, which `SO_REUSEPORT` would share with another server: `main.rs`
//! - epoll, a run queue (each turn here looks at all waits and tasks): `reactor.rs`, `executor.rs`
//! - trying a read or write before waiting (here each waits first: a turn more, but no task
//!   can hog the loop; the chapter tries first, and so needs a budget per poll): `net.rs`
//! - timeouts (header, keep-alive, send; the upstream's 504): `time.rs`, `connection.rs`
//! - a client who leaves mid-wait ends the wait at once: `connection.rs`, `listening`
//! - files on a thread pool, one for all loops (here read blocking: every task waits): `fs.rs`
//! - shutdown (on every loop), lingering close, `EMFILE`, panics, `/stats`' other counts: `main.rs`

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};
use std::{cell::Cell, cell::RefCell, future::Future, os::fd::AsFd, pin::Pin, rc::Rc, thread};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use shared::args::{Config, Extra};
use shared::http::{self, date, response::write_response, response::Framing, Parse, Response};
use shared::{app, app::Action, buffer::Buffer, files, listener, trace, upstream};

/// A task: its future (any future, so `dyn`; boxed and pinned, `Pin`, as an `async fn`'s
/// state may point into itself once polled, so it must not move), and its waker.
type Task = (Pin<Box<dyn Future<Output = io::Result<()>>>>, Arc<TaskWaker>);

/// A task's `Waker` marks it woken (an atomic in an `Arc`: a `Waker` may go to any thread).
struct TaskWaker(AtomicBool);

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Relaxed);
    }
}

/// The one future written by hand: what a task waits for. Polled, it leaves the task's
/// waker with the reactor and says `Pending`; polled again (so woken: it is over), `Ready`.
enum Wait {
    /// A socket to be ready: `POLLIN` to read, `POLLOUT` to write. (`Rc`: the reactor holds
    /// a share of it, so it stays open while `poll` looks.)
    Ready(Rc<dyn AsFd>, PollFlags),
    Time(Instant),
    Registered,
}

impl Future for Wait {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context) -> Poll<()> {
        match std::mem::replace(&mut *self, Wait::Registered) {
            Wait::Registered => Poll::Ready(()),
            wait => {
                REACTOR.with_borrow_mut(|reactor| reactor.push((wait, cx.waker().clone())));
                Poll::Pending
            }
        }
    }
}

thread_local! {
    /// The reactor: this thread's waits, each with the waker that ends it; and the tasks
    /// spawned, not yet taken in. A task reaches both from wherever it is polled.
    static REACTOR: RefCell<Vec<(Wait, Waker)>> = const { RefCell::new(Vec::new()) };
    static SPAWNED: RefCell<Vec<Task>> = const { RefCell::new(Vec::new()) };
    /// Which loop this thread runs: its place in `SERVED`.
    static LOOP: Cell<usize> = const { Cell::new(0) };
}

/// What the loops share: how many requests each has served. One for the whole program, a
/// `static`, filled in once before the loops start (`OnceLock`); atomics, as each loop's
/// thread adds to its own count while any loop may read them all.
static SERVED: OnceLock<Vec<AtomicU64>> = OnceLock::new();

fn spawn(future: impl Future<Output = io::Result<()>> + 'static) {
    let task = (Box::pin(future) as _, Arc::new(TaskWaker(true.into()))); // woken: to start
    SPAWNED.with_borrow_mut(|spawned| spawned.push(task));
}

/// The executor: every task not yet over.
struct Executor(Vec<Task>);

impl Executor {
    /// One turn of the loop: wait until a wait is over (with new tasks, only look), take
    /// them in, and poll each task woken. One that is over is dropped, its socket with it.
    fn turn(&mut self) {
        wait(SPAWNED.with_borrow(Vec::is_empty));
        self.0.append(&mut SPAWNED.take());
        self.0.retain_mut(|(future, woken)| {
            if !woken.0.swap(false, Relaxed) {
                return true; // not woken: it waits on
            }
            let waker = Waker::from(woken.clone());
            future.as_mut().poll(&mut Context::from_waker(&waker)).is_pending()
        });
    }
}

/// The loop's wait, in `poll(2)`: until a socket a task waits for is ready or the nearest
/// timer is due. Then it wakes the tasks whose wait is over; the other waits stay.
fn wait(may_sleep: bool) {
    let (waits, now) = (REACTOR.take(), Instant::now());
    // In whole milliseconds, rounded up: rounded down, `poll` would return just before the
    // timer is due, find nothing to do, and go round again at once: a spin.
    let left = |at: &Instant| at.saturating_duration_since(now).as_nanos().div_ceil(1_000_000);
    let (mut fds, mut ms) = (Vec::new(), if may_sleep { None } else { Some(0) });
    for (wait, _) in &waits {
        match wait {
            Wait::Ready(socket, interest) => fds.push(PollFd::new(socket.as_fd(), *interest)),
            Wait::Time(at) => ms = Some(ms.map_or(left(at), |ms| left(at).min(ms))),
            Wait::Registered => {}
        }
    }
    let timeout = ms.map_or(PollTimeout::NONE, |ms| ms.try_into().unwrap_or(PollTimeout::MAX));
    trace!("poll: {} sockets, timeout {timeout:?}", fds.len());
    let _ = poll(&mut fds, timeout); // an error (interrupted, say): as if nothing was ready
                                     // Any event on a socket (ready, hung up, failed) ends its wait: the next call meets it.
    let mut ready = fds.iter().map(|fd| fd.any() != Some(false)).collect::<Vec<_>>().into_iter();
    let now = Instant::now();
    let (over, waiting): (Vec<_>, _) = waits.into_iter().partition(|(wait, _)| match wait {
        Wait::Ready(..) => ready.next() == Some(true),
        Wait::Time(at) => *at <= now,
        Wait::Registered => true,
    });
    REACTOR.set(waiting);
    over.into_iter().for_each(|(_, waker)| waker.wake());
}

/// Reads what has arrived onto the end of `buffer` (0: the peer has closed), once `poll`
/// says there is something. It says so while it lasts (it is level-triggered), and only
/// this task reads this socket: the read does not block.
async fn read_to(stream: &Rc<TcpStream>, buffer: &mut Buffer) -> io::Result<usize> {
    Wait::Ready(stream.clone(), PollFlags::POLLIN).await;
    let mut chunk = [0; 4096];
    let count = (&**stream).read(&mut chunk)?;
    buffer.extend_from_slice(&chunk[..count]);
    Ok(count)
}

async fn write_all(stream: &Rc<TcpStream>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        Wait::Ready(stream.clone(), PollFlags::POLLOUT).await; // room in the send buffer
        bytes = &bytes[(&**stream).write(bytes)?..];
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let config = Config::from_args("ch09-sketch", &[Extra::Threads]);
    if config.trace {
        trace::enable();
    }
    // One listener per loop, on the port the first one picks (`--port 0`). Linux and FreeBSD
    // spread new clients over them by a hash of their addresses; macOS gives each to the
    // listener bound last, so there one loop serves them all (and the others wait).
    let bind = |port| {
        listener::bind_with(&config.host, port, |socket| {
            socket.set_reuse_port(true)?;
            #[cfg(target_os = "freebsd")] // where only this option spreads them
            socket.set_reuse_port_lb(true)?;
            socket.set_nonblocking(true)
        })
    };
    let mut listeners = vec![bind(config.port)?];
    let port = listeners[0].local_addr()?.port();
    for _ in 1..config.threads {
        listeners.push(bind(port)?);
    }
    SERVED.get_or_init(|| listeners.iter().map(|_| AtomicU64::new(0)).collect());
    listener::announce(&config, port);
    let mut loops = Vec::new();
    for (index, listener) in listeners.into_iter().enumerate() {
        let (config, thread) =
            (config.clone(), thread::Builder::new().name(format!("loop-{index}")));
        loops.push(thread.spawn(move || run_loop(index, listener, config))?);
    }
    loops.into_iter().for_each(|thread| thread.join().expect("a loop panicked"));
    Ok(())
}

/// One loop, on a thread of its own: chapter 8's `main`.
fn run_loop(index: usize, listener: TcpListener, config: Config) {
    LOOP.set(index);
    spawn(accept(Rc::new(listener), Rc::new(config)));
    let mut executor = Executor(Vec::new());
    loop {
        executor.turn();
    }
}

/// The listener's task: waits until clients are there, and starts a task for each.
async fn accept(listener: Rc<TcpListener>, config: Rc<Config>) -> io::Result<()> {
    loop {
        Wait::Ready(listener.clone(), PollFlags::POLLIN).await;
        listener::accept_all(&listener, |stream, _| spawn(serve(Rc::new(stream), config.clone())));
    }
}

/// One client, one task: read a request, answer it, and again (pipelined requests in order),
/// until the client leaves or an answer says `Connection: close`.
async fn serve(stream: Rc<TcpStream>, config: Rc<Config>) -> io::Result<()> {
    let (served, mut received) =
        (SERVED.get().expect("filled in before the loops start"), Buffer::new());
    loop {
        let (response, framing, consumed) = match http::parse(&received) {
            Parse::Complete { request, consumed } => {
                let counts: Vec<u64> = served.iter().map(|count| count.load(Relaxed)).collect();
                let stats =
                    app::Stats { requests_served: counts.iter().sum(), ..Default::default() };
                let context =
                    app::Context { chapter: config.chapter, upstream: config.upstream, stats };
                let mut response = answer(app::handle(&request, &context), &config).await;
                // `/stats` says what each loop served, a line each: `thread 1 requests_served 12`.
                let stats = (&mut response.body, request.path, response.status);
                if let (http::Body::Owned(body), "/stats", 200) = stats {
                    for (index, count) in counts.iter().enumerate() {
                        body.extend(format!("thread {index} requests_served {count}\n").bytes());
                    }
                }
                served[LOOP.get()].fetch_add(1, Relaxed); // this loop's count: no other writes it
                (response, Framing::for_request(&request), consumed)
            }
            // After a bad request, where a next one would begin is unknown: answer, and close.
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE, 0),
            Parse::Incomplete => match read_to(&stream, &mut received).await? {
                0 => return Ok(()), // the client closed
                _ => continue,
            },
        };
        let mut out = Vec::new();
        write_response(&mut out, &response, &framing, config.chapter, &date::now());
        write_all(&stream, &out).await?;
        if !framing.keep_alive {
            return Ok(());
        }
        received.consume(consumed);
    }
}

/// Does what the application asked for: the waits of chapter 4 are `.await`s, where this
/// task stops and the others run. (A file is read blocking: there, all of them stop.)
async fn answer(action: Action<'_>, config: &Config) -> Response {
    match action {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            Wait::Time(Instant::now() + Duration::from_millis(ms)).await;
            app::slept(ms)
        }
        Action::Upstream { address, path_and_query } => fetch(address, &path_and_query)
            .await
            .unwrap_or_else(|_| upstream::bad_gateway("could not reach the upstream")),
        Action::ReadFile { path } => {
            files::response(&path, files::load(&config.root, &path, config.fs_delay))
        }
    }
}

/// `/upstream/PATH`: connect, send the request, read the answer, each step an `.await`. The
/// connect does not block: the socket is writable once the handshake is over (or has
/// failed, and then the write says why).
async fn fetch(address: SocketAddr, path_and_query: &str) -> io::Result<Response> {
    let stream = Rc::new(upstream::start_connecting(address)?);
    write_all(&stream, &upstream::request(path_and_query, address)).await?;
    let mut received = Buffer::new();
    loop {
        let at_end = read_to(&stream, &mut received).await? == 0;
        match upstream::parse_response(&received, at_end) {
            upstream::UpstreamParse::NeedMore => continue,
            upstream::UpstreamParse::Done(response) => return Ok(response),
            upstream::UpstreamParse::Garbage(reason) => return Ok(upstream::bad_gateway(reason)),
        }
    }
}
