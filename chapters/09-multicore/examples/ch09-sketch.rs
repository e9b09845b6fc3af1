//! Chapter 9's idea: chapter 8's loop, once per core. Each of `--threads N` threads runs one
//! (its executor and reactor are thread-locals already) with a listener of its own on the one
//! port (`SO_REUSEPORT`), and the kernel hands each new client to one of them. The loops share
//! only what `/stats` shows. Left out: sketch 8's list, and, in `chapters/09-multicore/src/`:
//! - `/sleep` (501 here; sketch 8 has it): `time.rs`; a port in use, padded counters: `main.rs`

use std::sync::{atomic::AtomicBool, atomic::AtomicU64, atomic::Ordering::Relaxed, Arc, OnceLock};
use std::{cell::Cell, cell::RefCell, future::poll_fn, future::Future, pin::Pin, rc::Rc, thread};
use std::{io, io::Read, io::Write, task::Context, task::Poll, task::Wake, task::Waker};
use std::{net::TcpListener, net::TcpStream, os::fd::AsFd};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use shared::http::{self, date, response::write_response, response::Framing, Parse, Request};
use shared::{app, args::Config, args::Extra, buffer::Buffer, http::Response, listener};

/// A task: its future, boxed and pinned (`dyn`: each `async fn` has a type of its own; `Pin`:
/// once polled, it may point into itself), and its waker, a flag (atomic: a `Waker` is `Send`).
type Task = (Pin<Box<dyn Future<Output = io::Result<()>>>>, Arc<TaskWaker>);
struct TaskWaker(AtomicBool);

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Relaxed);
    }
}

type Waits<T> = RefCell<Vec<(T, Waker)>>;

thread_local! {
    // One of each for the loop's thread, reached by a task from wherever it is polled: the
    // tasks not yet over; what they wait for, with the waker that ends each wait; which loop.
    static EXECUTOR: RefCell<Vec<Task>> = const { RefCell::new(Vec::new()) };
    static REACTOR: Waits<(Rc<dyn AsFd>, PollFlags)> = const { RefCell::new(Vec::new()) };
    static LOOP: Cell<usize> = const { Cell::new(0) };
}

/// What the loops share: how many requests each has served (atomics: any loop may read).
static SERVED: OnceLock<Vec<AtomicU64>> = OnceLock::new();

fn spawn(future: impl Future<Output = io::Result<()>> + 'static) {
    let task = (Box::pin(future) as _, Arc::new(TaskWaker(true.into()))); // woken: to start
    EXECUTOR.with_borrow_mut(|tasks| tasks.push(task));
}

/// The one future written by hand, under each `.await` that waits. Polled, it `leave`s the
/// task's waker where the wake will come from; polled again (so woken: it is over), `Ready`.
fn until_woken(leave: impl FnOnce(Waker)) -> impl Future<Output = ()> {
    let mut leave = Some(leave);
    poll_fn(move |cx| {
        let Some(leave) = leave.take() else { return Poll::Ready(()) };
        leave(cx.waker().clone());
        Poll::Pending
    })
}

/// Waits until `socket` is ready to read (`POLLIN`) or to write (`POLLOUT`).
async fn ready(socket: Rc<dyn AsFd>, events: PollFlags) {
    until_woken(|waker| REACTOR.with_borrow_mut(|list| list.push(((socket, events), waker)))).await
}

/// One turn of the loop: the reactor's wait in `poll(2)`, its wakes, the executor's polls.
fn turn() {
    let (mut tasks, sockets) = (EXECUTOR.take(), REACTOR.take());
    let woken = tasks.iter().any(|(_, woken)| woken.0.load(Relaxed)); // then only look
    let timeout = if woken { PollTimeout::ZERO } else { PollTimeout::NONE };
    let mut fds: Vec<_> =
        sockets.iter().map(|((socket, events), _)| PollFd::new(socket.as_fd(), *events)).collect();
    let _ = poll(&mut fds, timeout); // an error (a signal, say): as if nothing was ready

    // Any event (ready, hung up, failed) ends a socket's wait; `over` has one `bool` per socket.
    let mut over = fds.iter().map(|fd| fd.any() != Some(false)).collect::<Vec<_>>().into_iter();
    let (ready, waiting): (Vec<_>, _) = sockets.into_iter().partition(|_| over.next().unwrap());
    REACTOR.set(waiting);
    ready.into_iter().for_each(|(_, waker)| waker.wake());
    tasks.retain_mut(|(future, woken)| {
        let waker = Waker::from(woken.clone()); // not woken: it waits on, and is kept
        !woken.0.swap(false, Relaxed)
            || future.as_mut().poll(&mut Context::from_waker(&waker)).is_pending()
    });
    EXECUTOR.with_borrow_mut(|spawned| spawned.append(&mut tasks)); // and those spawned since
}

fn main() -> io::Result<()> {
    let config = Config::from_args("ch09-sketch", &[Extra::Threads]);
    // A listener per loop, on the port the first picks (`--port 0`). Linux spreads clients by
    // a hash of their addresses (FreeBSD needs `SO_REUSEPORT_LB`; macOS does not spread them).
    let bind = |port| listener::bind_with(&config.host, port, |socket| socket.set_reuse_port(true));
    let first = bind(config.port)?;
    let port = first.local_addr()?.port();
    let others: Vec<_> = (1..config.threads).map(|_| bind(port)).collect::<io::Result<_>>()?;
    SERVED.get_or_init(|| (0..config.threads).map(|_| AtomicU64::new(0)).collect());
    listener::announce(&config, port);
    for (index, listener) in (1..).zip(others) {
        let config = config.clone();
        thread::spawn(move || run_loop(index, listener, config));
    }
    run_loop(0, first, config) // loop 0 on the main thread
}

/// One loop: chapter 8's `main`.
fn run_loop(index: usize, listener: TcpListener, config: Config) -> ! {
    LOOP.set(index);
    listener.set_nonblocking(true).expect("a listening socket can be");
    spawn(accept(Rc::new(listener), Rc::new(config)));
    loop {
        turn();
    }
}

/// The listener's task: waits until clients are there, and starts a task for each.
async fn accept(listener: Rc<TcpListener>, config: Rc<Config>) -> io::Result<()> {
    loop {
        ready(listener.clone(), PollFlags::POLLIN).await;
        listener::accept_all(&listener, |stream, _| spawn(serve(Rc::new(stream), config.clone())));
    }
}

/// One client, one task: read a request, answer it, and again, until the client leaves or
/// an answer says `Connection: close`. Pipelined requests are answered in order.
async fn serve(stream: Rc<TcpStream>, config: Rc<Config>) -> io::Result<()> {
    let mut received = Buffer::new();
    loop {
        let (response, framing, consumed) = match http::parse(&received) {
            Parse::Complete { request, consumed } => {
                (answer(&request, &config).await, Framing::for_request(&request), consumed)
            }
            // After a bad request, where a next one would begin is unknown: answer, and close.
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE, 0),
            Parse::Incomplete => {
                ready(stream.clone(), PollFlags::POLLIN).await; // now a read will not block
                let mut chunk = [0; 4096]; // made after the `.await`: no waiting task keeps one
                match (&*stream).read(&mut chunk)? {
                    0 => return Ok(()), // the client closed
                    count => received.extend_from_slice(&chunk[..count]),
                }
                continue;
            }
        };
        let mut out = Vec::new();
        write_response(&mut out, &response, &framing, config.chapter, &date::now());
        while !out.is_empty() {
            ready(stream.clone(), PollFlags::POLLOUT).await; // room in the send buffer
            out.drain(..(&*stream).write(&out)?);
        }
        if !framing.keep_alive {
            return Ok(());
        }
        received.consume(consumed);
    }
}

async fn answer(request: &Request<'_>, config: &Config) -> Response {
    let (chapter, upstream, stats) = (config.chapter, config.upstream, <_>::default());
    let counts: Vec<u64> = SERVED.wait().iter().map(|count| count.load(Relaxed)).collect();
    let stats = app::Stats { requests_served: counts.iter().sum(), ..stats };
    let mut response = match app::handle(request, &app::Context { chapter, upstream, stats }) {
        app::Action::Respond(response) => response,
        _ => Response::error(501, "/sleep, files, /upstream/: see chapter 9, not its sketch"),
    };
    if let (http::Body::Owned(body), "/stats") = (&mut response.body, request.path) {
        for (index, count) in counts.iter().enumerate() {
            body.extend(format!("thread {index} requests_served {count}\n").bytes());
        }
    }
    SERVED.wait()[LOOP.get()].fetch_add(1, Relaxed); // this loop's count: only it adds to it
    response
}
