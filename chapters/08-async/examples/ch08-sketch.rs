//! Chapter 8's idea: each client is an `async fn`, written as if it blocked. A task is a
//! future; polling it runs it to its next wait, which leaves the task's `Waker` with the
//! reactor (for a socket to be ready, or a time to come). The loop waits in the kernel until
//! one is, wakes the tasks whose wait is over, and polls them again. The reactor uses
//! `poll(2)`, not chapter 7's epoll: the lesson is async, not the backend. Left out, in
//! `chapters/08-async/src/`:
//! - epoll, a run queue (each turn here looks at all waits and tasks): `reactor.rs`, `executor.rs`
//! - trying a read or write before waiting (here each waits first: a turn more, but no task
//!   can hog the loop; the chapter tries first, and so needs a budget per poll): `net.rs`
//! - timeouts (header, keep-alive, send; the upstream's 504): `time.rs`, `connection.rs`
//! - a client who leaves mid-wait ends the wait at once: `connection.rs`, `listening`
//! - files on a thread pool (here a file is read blocking: every task waits): `fs.rs`
//! - shutdown, lingering close, `EMFILE`, panics, `/stats`' counts: `main.rs`, `connection.rs`

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{atomic::AtomicBool, atomic::Ordering::Relaxed, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};
use std::{cell::RefCell, future::Future, os::fd::AsFd, pin::Pin, rc::Rc};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use shared::http::{self, date, response::write_response, response::Framing, Parse, Response};
use shared::{app, app::Action, args::Config, buffer::Buffer, files, listener, trace, upstream};

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
}

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

fn main() {
    let config = Rc::new(Config::from_args("ch08-sketch", &[]));
    if config.trace {
        trace::enable();
    }
    spawn(accept(Rc::new(listener::listen(&config, true)), config));
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
    let (upstream, stats, mut received) = (config.upstream, app::Stats::default(), Buffer::new());
    let context = app::Context { chapter: config.chapter, upstream, stats };
    loop {
        let (response, framing, consumed) = match http::parse(&received) {
            Parse::Complete { request, consumed } => {
                let response = answer(app::handle(&request, &context), &config).await;
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
