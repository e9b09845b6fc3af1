//! Chapter 8's idea: each client is an `async fn`, written as if it blocked. The compiler
//! makes it a future; each poll runs it to its next wait, which leaves the task's `Waker`
//! with the reactor (for a socket) or the timers (for a time) and says `Pending`. The loop
//! sleeps in `poll(2)` until a wait is over, wakes those tasks, and polls them again.
//! Left out, and where `chapters/08-async/src/` has it:
//! - epoll, a run queue, trying a call before waiting: `reactor.rs`, `executor.rs`, `net.rs`
//! - files and the upstream (a 501 here), as futures: `fs.rs`, `upstream.rs`
//! - timeouts, departures, shutdown, lingering close, `EMFILE`, panics: `connection.rs`

use std::sync::{atomic::AtomicBool, atomic::Ordering::Relaxed, Arc};
use std::{cell::RefCell, future::poll_fn, future::Future, pin::Pin, rc::Rc};
use std::{io, io::Read, io::Write, task::Context, task::Poll, task::Wake, task::Waker};
use std::{net::TcpListener, net::TcpStream, os::fd::AsFd, time::Duration, time::Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use shared::http::{self, date, response::write_response, response::Framing, Parse, Request};
use shared::{app, app::Action, args::Config, buffer::Buffer, http::Response, listener};

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
    // tasks not yet over; what they wait for, with the waker that ends each wait.
    static EXECUTOR: RefCell<Vec<Task>> = const { RefCell::new(Vec::new()) };
    static REACTOR: Waits<(Rc<dyn AsFd>, PollFlags)> = const { RefCell::new(Vec::new()) };
    static TIMERS: Waits<Instant> = const { RefCell::new(Vec::new()) };
}

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
    let (mut tasks, sockets, timers) = (EXECUTOR.take(), REACTOR.take(), TIMERS.take());
    // In whole milliseconds, rounded up (rounded down, `poll` would return just before the
    // timer is due, and go round again at once: a spin); 0 while a task is woken already.
    let left = |at: &Instant| at.saturating_duration_since(Instant::now()).as_micros();
    let woken = tasks.iter().any(|(_, woken)| woken.0.load(Relaxed)).then_some(0);
    let ms = timers.iter().map(|(at, _)| left(at).div_ceil(1000)).chain(woken).min();
    let timeout = ms.map_or(PollTimeout::NONE, |ms| ms.try_into().unwrap_or(PollTimeout::MAX));
    let mut fds: Vec<_> =
        sockets.iter().map(|((socket, events), _)| PollFd::new(socket.as_fd(), *events)).collect();
    let _ = poll(&mut fds, timeout); // an error (a signal, say): as if nothing was ready

    // Any event (ready, hung up, failed) ends a socket's wait; `over` has one `bool` per socket.
    let mut over = fds.iter().map(|fd| fd.any() != Some(false)).collect::<Vec<_>>().into_iter();
    let (ready, waiting): (Vec<_>, _) = sockets.into_iter().partition(|_| over.next().unwrap());
    let (due, later): (Vec<_>, _) = timers.into_iter().partition(|(at, _)| left(at) == 0);
    REACTOR.set(waiting);
    TIMERS.set(later);
    ready.into_iter().for_each(|(_, waker)| waker.wake());
    due.into_iter().for_each(|(_, waker)| waker.wake());
    tasks.retain_mut(|(future, woken)| {
        let waker = Waker::from(woken.clone()); // not woken: it waits on, and is kept
        !woken.0.swap(false, Relaxed)
            || future.as_mut().poll(&mut Context::from_waker(&waker)).is_pending()
    });
    EXECUTOR.with_borrow_mut(|spawned| spawned.append(&mut tasks)); // and those spawned since
}

fn main() {
    let config = Config::from_args("ch08-sketch", &[]);
    spawn(accept(Rc::new(listener::listen(&config, true)), Rc::new(config)));
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

/// What the application answers. A `/sleep` is an `.await`: the other tasks run meanwhile.
async fn answer(request: &Request<'_>, config: &Config) -> Response {
    let (chapter, upstream, stats) = (config.chapter, config.upstream, <_>::default());
    match app::handle(request, &app::Context { chapter, upstream, stats }) {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            let at = Instant::now() + Duration::from_millis(ms);
            until_woken(|waker| TIMERS.with_borrow_mut(|list| list.push((at, waker)))).await;
            app::slept(ms)
        }
        _ => Response::error(501, "files and /upstream/: see chapter 8, not its sketch"),
    }
}
