//! Floods: many clients at once, or one greedy client. The contract's promise under
//! attack: bad or greedy clients cost the server bounded work and bounded memory, and a
//! normal client is still served (at the latest once the attackers leave).
//!
//! - [`descriptor_exhaustion`]: more connections than the server has file descriptors.
//!   `accept` fails with EMFILE while the listener stays readable, so a loop that keeps
//!   asking spins at 100% CPU; we measure the server's CPU time to see that it does not.
//! - [`slowloris`]: hundreds of clients that send a request head one byte a second and
//!   never finish it. Only a header timeout (chapter 4 on) frees their descriptors.
//! - [`pipelined_without_reading`]: one client that sends requests as fast as it can and
//!   never reads an answer. The server must push back instead of buffering the answers,
//!   and serve another client meanwhile.
//! - [`ten_thousand_idle`]: 10,000 connections that say nothing: do they fit, in how much
//!   memory, and is everyone else still served?
//! - [`ten_thousand_idle_slowdown`]: and how much slower is a busy client served while
//!   they are there? With `poll(2)`, every turn of the loop walks all of them.
//! - [`big_download_memory`]: four clients download one big file at once. Does each cost
//!   the server the whole file, or a chunk of it?
//! - [`pipelined_flood`]: one client that sends requests as fast as it reads the answers.
//!   Its socket is always ready; the others must still get their turns.
//! - [`idle_buffers_given_back`]: a hundred clients send one big request each and stay,
//!   idle. Do they still cost what their big requests did?
//! - [`memory_after_a_storm`]: two hundred send one big request each, at once, and leave.
//!   Does the memory they took go back to the system, or only to the allocator?
//!
//! These need to watch the server process itself (CPU time, memory, descriptors, via
//! [`crate::resources`]), so they start their own servers and skip for someone else's.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{
    broken, check, connect, dropped_note, exchange, expect_status, finish_hello, get,
    hello_meanwhile, make_site, measured, needs_own_server, receive, seconds, sending, stats_value,
    still_serves, until_accepted, Launch, Meanwhile, Outcome, Probed, Stop, Target, HELLO,
    PATIENCE, PROMPTLY,
};
use crate::client::{show, Client, ReadError};
use crate::kernel;
use crate::manifest::{self, Capability, Expect};
use crate::resources::{self, growth_note, mebibytes};
use crate::server::{Options, Server};

pub(super) fn pid(server: &Server) -> Result<u32, Stop> {
    measured(server.pid(), "needs the process id of a server the suite started and that runs")
}

/// Does this chapter take in every client that comes (non-blocking, chapter 2 on), or
/// one at a time (chapter 1)? A flood looks different to each: only the first kind can
/// run out of descriptors.
fn takes_everyone(server: &Server) -> bool {
    manifest::expectation(Capability::IdleClient, server.chapter) == Expect::Yes
}

/// Fails, saying so, if the server process has ended: its descriptors would count as none,
/// and the message that follows would blame the wrong thing.
fn still_running(server: &mut Server, during: &str) -> Result<(), Stop> {
    match server.exit_status() {
        Some(status) => Err(broken(format!(
            "the server process ended ({status}) during {during}{}",
            server.stderr_note()
        ))),
        None => Ok(()),
    }
}

/// Waits until the server holds at least `count` open descriptors. Returns the most it
/// was seen to hold.
fn wait_for_descriptors(pid: u32, count: usize, timeout: Duration) -> Result<usize, Stop> {
    let deadline = Instant::now() + timeout;
    let mut most = 0;
    loop {
        let open = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
        most = most.max(open);
        if open >= count || Instant::now() >= deadline {
            return Ok(most);
        }
        // The kernel cannot tell us when a descriptor opens; we look again shortly.
        thread::sleep(Duration::from_millis(10));
    }
}

/// Why connecting a flood can fail: the kernel holds only so many connections the server
/// has not accepted yet (the backlog it asked `listen` for; ours ask for 1024), and a
/// server that takes one client at a time, or is out of descriptors, accepts none.
const BACKLOG_NOTE: &str = " (while the server accepts no one, the kernel queues only as many \
     connections as its listen backlog: is that small? ours is 1024)";

/// The server's file descriptor limit during [`descriptor_exhaustion`].
pub(super) const FLOOD_FD_LIMIT: u32 = 64;
/// How many connections flood it: well over the limit.
pub(super) const FLOOD_CLIENTS: usize = 200;
/// How long we watch the CPU clock of a flooded server, and the most it may use in that
/// time. A server that spins uses all of it; one that waits, next to nothing.
pub(super) const CPU_WINDOW: Duration = Duration::from_secs(1);
pub(super) const MAX_CPU_WHILE_FLOODED: Duration = Duration::from_millis(300);
/// How many more descriptors than at rest a server may keep after a flood has left.
pub(super) const LAZY_DESCRIPTORS: usize = 4;

// ANCHOR: descriptor_exhaustion
/// EMFILE: more clients than descriptors. The server must neither spin nor stay stuck:
/// while flooded it uses almost no CPU, and once the flood leaves, a normal client is
/// served and every descriptor is given back.
///
/// Chapter 1 takes one client at a time, so it never runs out: the flood waits in the
/// kernel's backlog while it sits on the first connection. The probe holds it to the same
/// promise (no spinning, serves again afterwards), which it keeps in its own way.
pub fn descriptor_exhaustion(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server =
        target.start(Options { fd_limit: Some(FLOOD_FD_LIMIT), ..Options::default() })?;
    let pid = pid(&server)?;
    let at_rest = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;

    let mut flood = Vec::with_capacity(FLOOD_CLIENTS);
    for _ in 0..FLOOD_CLIENTS {
        let client = match connect(&server) {
            Ok(client) => client,
            Err(stop) => {
                still_running(&mut server, &format!("a flood of {FLOOD_CLIENTS} connections"))?;
                return Err(match stop {
                    // The kernel's queue is full: the backlog is the likely cause.
                    Stop::Broken(what) if what.contains("timed out") => broken(format!(
                        "flood client {} of {FLOOD_CLIENTS}: {what}{BACKLOG_NOTE}",
                        flood.len() + 1
                    )),
                    Stop::Broken(what) => broken(format!(
                        "flood client {} of {FLOOD_CLIENTS}: {what}",
                        flood.len() + 1
                    )),
                    skipped => skipped,
                });
            }
        };
        flood.push(client);
    }
    let limit = FLOOD_FD_LIMIT as usize;
    if takes_everyone(&server) {
        let most = wait_for_descriptors(pid, limit, PATIENCE)?;
        still_running(&mut server, &format!("a flood of {FLOOD_CLIENTS} connections"))?;
        check!(
            most >= limit,
            "with {FLOOD_CLIENTS} clients connected, the server held at most {most} of its \
             {limit} descriptors: it stopped accepting before it ran out"
        );
    }

    // ANCHOR: cpu_window
    // Out of descriptors now: `accept` fails with EMFILE, and the listener stays readable
    // because the rest of the flood is still waiting. Watch the CPU clock for a while.
    let before = measured(resources::cpu_time(pid), resources::NO_CPU_TIME)?;
    let started = Instant::now();
    thread::sleep(CPU_WINDOW); // the measurement window, not a wait for something
    let used = measured(resources::cpu_time(pid), resources::NO_CPU_TIME)?.saturating_sub(before);
    check!(
        used <= MAX_CPU_WHILE_FLOODED,
        "flooded with {FLOOD_CLIENTS} connections at a limit of {limit} descriptors, the \
         server used {} of CPU in {}: a busy loop (is it polling a listener it cannot accept \
         from?)",
        seconds(used),
        seconds(started.elapsed())
    );
    // ANCHOR_END: cpu_window

    // Shown with `cargo test -p suite descriptor_exhaustion -- --nocapture`.
    println!(
        "{}: flooded with {FLOOD_CLIENTS} connections at a limit of {limit} descriptors: {} \
         of CPU in {}",
        server.label,
        seconds(used),
        seconds(started.elapsed())
    );
    drop(flood);
    still_serves(&mut server, "a flood of connections that ran it out of descriptors")?;
    // Every connection is gone, so every descriptor must come back. A few may stay: a
    // chapter may open one lazily, on its first request (a thread pool's waker, say),
    // while a leak of the flood's connections would be dozens.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let open = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
        if open <= at_rest + LAZY_DESCRIPTORS {
            return Ok(Outcome::Works);
        }
        if Instant::now() >= deadline {
            return Err(broken(format!(
                "{} s after the flood left, the server still has {open} descriptors open, \
                 {at_rest} at rest: a leak",
                PATIENCE.as_secs()
            )));
        }
        thread::sleep(Duration::from_millis(10));
    }
}
// ANCHOR_END: descriptor_exhaustion

/// The attackers, and the server's descriptors during [`slowloris`]: more attackers
/// than descriptors, so without a timeout they take them all.
pub(super) const SLOWLORIS_CLIENTS: usize = 300;
pub(super) const SLOWLORIS_FD_LIMIT: u32 = 256;
/// `--header-timeout` for the chapters that have it: 1 s.
pub(super) const SLOWLORIS_HEADER_TIMEOUT: &str = "1";
/// How long the normal client may wait for its answer: the header timeout, then time to
/// close the attackers' connections and accept the queue behind them.
pub(super) const SLOWLORIS_PATIENCE: Duration = Duration::from_secs(5);

// ANCHOR: slowloris
/// Slowloris: 300 clients each send a request head one byte a second, never finish it,
/// and reconnect whenever the server gets rid of them. The server is started with 256
/// descriptors. A normal `GET /hello` must be answered all the same: in chapter 4 on, the
/// header timeout answers each attacker 408 and frees its descriptor. Without one, the
/// attackers hold every descriptor for as long as they like, and the normal client waits
/// in the kernel's backlog until they leave.
pub fn slowloris(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server = target.start(Options {
        fd_limit: Some(SLOWLORIS_FD_LIMIT),
        if_supported: vec![("--header-timeout", SLOWLORIS_HEADER_TIMEOUT.into())],
        ..Options::default()
    })?;
    let pid = pid(&server)?;
    let attack = Slowloris::start(server.address, SLOWLORIS_CLIENTS);
    let connected = attack.wait_until_connected(SLOWLORIS_CLIENTS, Instant::now() + PATIENCE);
    still_running(&mut server, "a slowloris attack")?;
    check!(
        connected,
        "could connect only {} of {SLOWLORIS_CLIENTS} slowloris clients within {} \
         s{BACKLOG_NOTE}",
        attack.connected.load(Ordering::Relaxed),
        PATIENCE.as_secs()
    );
    let limit = SLOWLORIS_FD_LIMIT as usize;
    if takes_everyone(&server) {
        // The attack proves something only if it ran the server out of descriptors.
        let most = wait_for_descriptors(pid, limit, PATIENCE)?;
        still_running(&mut server, "a slowloris attack")?;
        check!(
            most >= limit,
            "{SLOWLORIS_CLIENTS} slowloris clients took at most {most} of the server's \
             {limit} descriptors: the attack never filled them"
        );
    }

    let mut client = connect(&server)?;
    sending(&mut client, &get("/hello"), "GET /hello during a slowloris attack")?;
    let sent = Instant::now();
    match client.read_response(sent + SLOWLORIS_PATIENCE, false) {
        Ok(response) => {
            let waited = sent.elapsed();
            expect_status(&response, &[200], "GET /hello during a slowloris attack")?;
            let tally = attack.stop();
            // Shown with `cargo test -p suite slowloris -- --nocapture`.
            println!(
                "{}: GET /hello answered after {} during a slowloris attack ({} attacker \
                 connections, {} answered (408) and {} closed by the server)",
                server.label,
                seconds(waited),
                tally.connections,
                tally.answered,
                tally.closed
            );
            Ok(Outcome::Works)
        }
        Err(ReadError::TimedOut { .. }) => {
            let tally = attack.stop();
            let left = Instant::now();
            finish_hello(&server, client, sent)?;
            Ok(Outcome::Lacks(format!(
                "GET /hello got no answer within {} while {SLOWLORIS_CLIENTS} clients sent \
                 request heads a byte a second ({} connections, {} of them answered or \
                 closed by the server){}; it was answered {} after they left",
                seconds(SLOWLORIS_PATIENCE),
                tally.connections,
                tally.answered + tally.closed,
                dropped_note(&server),
                seconds(left.elapsed())
            )))
        }
        Err(error) => Err(broken(format!(
            "GET /hello during a slowloris attack: {error}{}",
            server.stderr_note()
        ))),
    }
}
// ANCHOR_END: slowloris

/// What the attack saw.
#[derive(Debug, Default)]
struct Tally {
    /// Connections made (the first of each attacker, and every reconnect).
    connections: usize,
    /// The server answered (with a 408, say) before the head was done.
    answered: usize,
    /// The server closed or reset the connection without an answer.
    closed: usize,
}

/// A slowloris attack running on a thread of its own, stopped (and every connection
/// closed) when this is dropped or [`Slowloris::stop`]ped.
struct Slowloris {
    /// Dropping it tells the thread to stop.
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<Tally>>,
    /// How many connections the attack has made so far.
    connected: Arc<AtomicUsize>,
}

/// How often the attack thread looks at its connections, and how often each sends a byte.
const TICK: Duration = Duration::from_millis(100);
pub(super) const BYTE_EVERY: Duration = Duration::from_secs(1);
/// How each attacker's head begins; a byte of `X-Slow`'s value follows every second.
const HEAD_START: &[u8] = b"GET /hello HTTP/1.1\r\nHost: suite\r\nX-Slow: ";

impl Slowloris {
    fn start(address: SocketAddr, clients: usize) -> Slowloris {
        let (stop, stopped) = mpsc::channel();
        let connected = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&connected);
        let thread = thread::spawn(move || trickle(address, clients, &stopped, &counter));
        Slowloris { stop: Some(stop), thread: Some(thread), connected }
    }

    /// Waits until the attack has made `count` connections, or `deadline` passes.
    fn wait_until_connected(&self, count: usize, deadline: Instant) -> bool {
        loop {
            if self.connected.load(Ordering::Relaxed) >= count {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Ends the attack: every attacker's connection is closed when this returns.
    fn stop(mut self) -> Tally {
        self.finish()
    }

    fn finish(&mut self) -> Tally {
        drop(self.stop.take());
        self.thread.take().and_then(|thread| thread.join().ok()).unwrap_or_default()
    }
}

impl Drop for Slowloris {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The attack thread: one non-blocking connection per attacker, looked at every tick.
fn trickle(
    address: SocketAddr, clients: usize, stopped: &Receiver<()>, connected: &AtomicUsize,
) -> Tally {
    let mut tally = Tally::default();
    let mut attackers: Vec<Option<Attacker>> = (0..clients).map(|_| None).collect();
    loop {
        let now = Instant::now();
        // Once a connect fails (it waits up to a second), the server's backlog is full:
        // the rest wait for the next tick. Trying each in turn would keep this thread from
        // seeing the stop for minutes, with hundreds of attackers shut out.
        let mut backlog_full = false;
        for slot in &mut attackers {
            if slot.is_none() && !backlog_full {
                *slot = Attacker::connect(address, now);
                if slot.is_some() {
                    tally.connections += 1;
                    connected.fetch_add(1, Ordering::Relaxed);
                } else {
                    backlog_full = true;
                }
            }
            let Some(attacker) = slot else { continue };
            match attacker.poke(now) {
                Poke::Waiting => {}
                Poke::Answered => {
                    tally.answered += 1;
                    *slot = None; // reconnect on the next tick
                }
                Poke::Closed => {
                    tally.closed += 1;
                    *slot = None;
                }
            }
        }
        match stopped.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            // Told to stop (or the handle is gone): dropping `attackers` closes them all.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return tally,
        }
    }
}

struct Attacker {
    stream: TcpStream,
    next_byte: Instant,
}

enum Poke {
    Waiting,
    Answered,
    Closed,
}

impl Attacker {
    fn connect(address: SocketAddr, now: Instant) -> Option<Attacker> {
        let stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
        stream.set_nodelay(true).ok()?;
        stream.set_nonblocking(true).ok()?;
        // A fresh socket's buffer takes these few bytes whole.
        (&stream).write_all(HEAD_START).ok()?;
        Some(Attacker { stream, next_byte: now + BYTE_EVERY })
    }

    // ANCHOR: poke
    /// Has the server answered or closed? If not, and it is time, one more byte.
    fn poke(&mut self, now: Instant) -> Poke {
        let mut answer = [0u8; 512];
        match (&self.stream).read(&mut answer) {
            Ok(0) => return Poke::Closed,
            Ok(_) => return Poke::Answered,
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return Poke::Closed,
        }
        if now >= self.next_byte {
            match (&self.stream).write(b"a") {
                Ok(_) => self.next_byte = now + BYTE_EVERY,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return Poke::Closed,
            }
        }
        Poke::Waiting
    }
    // ANCHOR_END: poke
}

/// How much a client pipelines without reading, and how much more memory that may cost
/// the server at its peak.
pub(super) const PIPELINE_BYTES: usize = 20 << 20;
pub(super) const PIPELINE_GROWTH_BOUND: u64 = 10 << 20;
/// A write that makes no progress for this long means the server pushed back.
pub(super) const PUSHED_BACK_AFTER: Duration = Duration::from_millis(500);

// ANCHOR: pipelined_without_reading
/// One client sends `GET /hello` after `GET /hello`, 20 MiB of them, and never reads an
/// answer. Each answer is four times the size of its request, so a server that read
/// every request and kept every answer would grow by 80 MiB. It must push back instead:
/// stop reading while answers pile up, so that TCP makes the client wait. (Chapters 1 and
/// 2 answer one request and close, which bounds it too.)
///
/// A server with more than one loop runs one (`--threads 1`): the others' turn is that
/// loop's.
pub fn pipelined_without_reading(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server = target
        .start(Options { if_supported: vec![("--threads", "1".into())], ..Options::default() })?;
    let pid = pid(&server)?;
    expect_status(&exchange(&server, &get("/hello"))?, &[200], "GET /hello")?;
    let at_rest = measured(resources::memory(pid), resources::NO_MEMORY)?;
    measured(at_rest.peak, resources::NO_PEAK_MEMORY)?;

    let client = connect(&server)?;
    let request = get("/hello");
    let requests = request.repeat((64 * 1024) / request.len());
    let stream = client.stream();
    stream
        .set_write_timeout(Some(PUSHED_BACK_AFTER))
        .map_err(|error| broken(format!("cannot set a write timeout: {error}")))?;
    let mut sent = 0;
    let mut ending = "the server took all of it";
    'sending: while sent < PIPELINE_BYTES {
        let mut offset = 0;
        while offset < requests.len() {
            match (&*stream).write(&requests[offset..]) {
                Ok(0) => {
                    ending = "the server closed the connection";
                    break 'sending;
                }
                Ok(count) => {
                    offset += count;
                    sent += count;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    ending = "the server pushed back";
                    break 'sending;
                }
                Err(_) => {
                    ending = "the server closed the connection";
                    break 'sending;
                }
            }
        }
    }
    let loaded = measured(resources::memory(pid), resources::NO_MEMORY)?;
    let growth = measured(loaded.peak, resources::NO_PEAK_MEMORY)?.saturating_sub(at_rest.resident);
    check!(
        growth < PIPELINE_GROWTH_BOUND,
        "a client pipelined {} of requests without reading ({ending}), and the server's \
         memory grew by {} at its peak {}: answers buffered without limit?",
        mebibytes(sent as u64),
        mebibytes(growth),
        growth_note(at_rest.resident, PIPELINE_GROWTH_BOUND)
    );
    // Shown with `cargo test -p suite pipelined -- --nocapture`: the measurement itself.
    println!(
        "{}: pipelined {} without reading ({ending}); peak memory {} over {} at rest",
        server.label,
        mebibytes(sent as u64),
        mebibytes(growth),
        mebibytes(at_rest.resident)
    );
    // A second one pipelines in small pieces, and keeps on while the server waits to send
    // to it: each piece arrives on its own. Neither may cost the others their turn: a
    // server whose loop shares its receive buffers among clients (chapter 11) must not
    // let a client that is not being read keep them.
    let trickler = trickle_without_reading(&server)?;
    let (answered, stalled) = match hello_meanwhile(&server)? {
        Meanwhile::Answered => (true, None),
        Meanwhile::Waiting { client, sent } => (false, Some((client, sent))),
    };
    drop((client, trickler));
    let waited = stalled.map(|(other, sent)| finish_hello(&server, other, sent)).transpose()?;
    check!(
        answered,
        "while two clients sat on their pipelines without reading ({} in one go, and {} \
         in pieces of {} requests), `GET /hello` from another client got no answer within \
         {}; once they had left, it was answered {} after it was sent: what they sent holds \
         what the others need?",
        mebibytes(sent as u64),
        seconds(TRICKLE_FOR),
        TRICKLE_PIECE,
        seconds(PROMPTLY),
        seconds(waited.unwrap_or_default())
    );
    still_serves(&mut server, "clients that pipelined without reading")?;
    Ok(Outcome::Works)
}
// ANCHOR_END: pipelined_without_reading

/// How long the second client of [`pipelined_without_reading`] sends its small pieces (of
/// this many requests each, one every half millisecond), with a small receive buffer, so
/// that the server soon waits to send to it.
pub(super) const TRICKLE_FOR: Duration = Duration::from_millis(500);
pub(super) const TRICKLE_PIECE: usize = 100;

/// Sends `GET /hello` in pieces for [`TRICKLE_FOR`], reading nothing; while the socket is
/// full (the server pushes back) it waits, and a piece written in part is finished before
/// the next, so that every request arrives whole. Gives back the client, still connected.
fn trickle_without_reading(server: &Server) -> Result<Client, Stop> {
    let client = connect(server)?;
    let socket = socket2::SockRef::from(client.stream());
    let set_up = (socket.set_recv_buffer_size(4096))
        .and_then(|()| socket.set_tcp_nodelay(true))
        .and_then(|()| socket.set_nonblocking(true));
    set_up.map_err(|error| broken(format!("cannot set up the trickling client: {error}")))?;
    let piece = get("/hello").repeat(TRICKLE_PIECE);
    let (mut unsent, started) = (&piece[..], Instant::now());
    while started.elapsed() < TRICKLE_FOR {
        if unsent.is_empty() {
            unsent = &piece;
        }
        match client.stream().write(unsent) {
            Ok(written) => unsent = &unsent[written..],
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break, // closed: a chapter that answers one request and closes
        }
        thread::sleep(Duration::from_micros(500)); // a pace, so that pieces arrive apart
    }
    Ok(client)
}

/// How many idle connections [`ten_thousand_idle`] and [`ten_thousand_idle_slowdown`]
/// open, and the most memory the server may then use in all.
pub(super) const IDLE_CLIENTS: usize = 10_000;
pub(super) const IDLE_MEMORY_BOUND: u64 = 64 << 20;
/// How many they open before they check that others are still served: enough for a
/// one-at-a-time chapter to show, few enough to find out quickly.
pub(super) const IDLE_FIRST: usize = 100;
/// How many they open before they wait for the server to take them in: the kernel queues
/// only 1024 connections the server has not accepted yet.
pub(super) const IDLE_BATCH: usize = 1000;

/// This process needs 10,000 descriptors for each of those two probes, and the usual limit
/// is 20,000: two at once would not fit beside the other tests. So they take turns.
static TEN_THOUSAND: Mutex<()> = Mutex::new(());

/// Waits for this probe's turn to open 10,000 connections, or skips, loudly, where this
/// process may not open that many.
fn ten_thousand_turn() -> Result<MutexGuard<'static, ()>, Stop> {
    if resources::own_descriptor_limits()
        .is_some_and(|limits| limits.soft < 2 * IDLE_CLIENTS as u64)
    {
        return Err(Stop::Skipped(
            "needs `ulimit -n` of 20000: 10,000 connections, and the other tests' own",
        ));
    }
    Ok(TEN_THOUSAND.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The header and keep-alive timeouts of a server for 10,000 idle connections: longer
/// than the probe, because chapter 4 on would otherwise close the idle clients while we
/// count them.
pub(super) const TEN_THOUSAND_TIMEOUTS: Duration = Duration::from_secs(60);

/// A server for 10,000 idle connections, with `extra` flags if the chapter knows them, and
/// no timeout that could close them while we count ([`TEN_THOUSAND_TIMEOUTS`]).
fn ten_thousand_server(target: &Target, extra: &[(&'static str, &str)]) -> Result<Server, Stop> {
    let long = super::concurrency::flag_seconds(TEN_THOUSAND_TIMEOUTS);
    let mut if_supported = vec![("--header-timeout", long.clone()), ("--keep-alive-timeout", long)];
    if_supported.extend(extra.iter().map(|(flag, value)| (*flag, value.to_string())));
    target.start(Options { if_supported, ..Options::default() })
}

/// What became of 10,000 clients that connected and said nothing.
enum Crowd {
    /// The server took in every one of them (and `/stats` counts them); they stay
    /// connected until this is dropped.
    Held(Vec<TcpStream>),
    /// With the first [`IDLE_FIRST`] of them connected, a `GET /hello` from another client
    /// went unanswered (it was answered once they left): what was seen.
    Stuck(String),
}

/// What the kernel says of the connections the server has not taken, for a message: still
/// queued (the server stopped calling `accept`), half done (its queue overflowed), or none
/// (it accepted them all, and closed some).
fn not_accepted_note(server: &Server) -> String {
    match kernel::not_accepted(server.address) {
        Some((queued, half_open)) => format!(
            " (the kernel holds {queued} connections waiting for `accept` and {half_open} \
             handshakes not finished)"
        ),
        None => String::new(),
    }
}

/// Connects [`IDLE_CLIENTS`] clients that say nothing to `server` (process `pid`, which
/// held `at_rest` descriptors before anyone connected), and waits until it has accepted
/// them all.
fn crowd(server: &Server, pid: u32, at_rest: usize) -> Result<Crowd, Stop> {
    let mut idle = Vec::with_capacity(IDLE_CLIENTS);
    let open_idle = |idle: &mut Vec<TcpStream>| -> Result<(), Stop> {
        let stream = TcpStream::connect_timeout(&server.address, Duration::from_secs(2)).map_err(
            |error| broken(format!("connecting idle client number {}: {error}", idle.len() + 1)),
        )?;
        idle.push(stream);
        Ok(())
    };
    for _ in 0..IDLE_FIRST {
        open_idle(&mut idle)?;
    }
    if let Meanwhile::Waiting { client, sent } = hello_meanwhile(server)? {
        let left = Instant::now();
        drop(idle);
        finish_hello(server, client, sent)?;
        return Ok(Crowd::Stuck(format!(
            "with {IDLE_FIRST} idle clients connected, GET /hello got no answer within {}; \
             it was answered {} after they left",
            seconds(PROMPTLY),
            seconds(left.elapsed())
        )));
    }
    while idle.len() < IDLE_CLIENTS {
        let batch = (IDLE_CLIENTS - idle.len()).min(IDLE_BATCH);
        for _ in 0..batch {
            open_idle(&mut idle)?;
        }
        // Let the server take them in before the next thousand, or the kernel's queue of
        // connections not yet accepted overflows and connecting fails.
        let wanted = at_rest + idle.len();
        let most = wait_for_descriptors(pid, wanted, PATIENCE)?;
        check!(
            most >= wanted,
            "with {} idle clients connected, the server held only {} descriptors ({at_rest} \
             at rest): it stopped accepting{}",
            idle.len(),
            most,
            not_accepted_note(server)
        );
    }
    // The count of descriptors may include a few that are not idle clients (a busy
    // client's, one closed but not yet let go): the kernel's queue says whether any of
    // the idle ones still waits to be accepted.
    until_accepted(server, &format!("the last of {IDLE_CLIENTS} idle connections"))?;
    let stats = exchange(server, &get("/stats"))?;
    let open = stats_value(&stats, "connections_open");
    check!(
        open.is_some_and(|open| open >= IDLE_CLIENTS as u64),
        "with {IDLE_CLIENTS} idle clients connected, /stats says connections_open {open:?}"
    );
    Ok(Crowd::Held(idle))
}

// ANCHOR: ten_thousand_idle
/// 10,000 clients connect and say nothing. The server must hold them all (at a few
/// hundred bytes each, not kilobytes: 64 MiB for all of them is generous) and still
/// answer a `GET /hello` at once. Chapter 1 holds one connection at a time: with the
/// first hundred connected it is stuck already.
pub fn ten_thousand_idle(target: &Target) -> Probed {
    needs_own_server(target)?;
    let _turn = ten_thousand_turn()?;
    let server = ten_thousand_server(target, &[])?;
    let pid = pid(&server)?;
    // Counted before any client has connected: a closed connection's descriptor may
    // linger in the server for a moment after the client has gone.
    let at_rest = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
    // Memory after one request, so that what the first request allocates counts as rest.
    expect_status(&exchange(&server, &get("/hello"))?, &[200], "GET /hello")?;
    let at_rest_memory = measured(resources::memory(pid), resources::NO_MEMORY)?;

    // Held to the end of the probe: the memory below is measured with them connected.
    let _idle = match crowd(&server, pid, at_rest)? {
        Crowd::Held(idle) => idle,
        Crowd::Stuck(seen) => return Ok(Outcome::Lacks(seen)),
    };
    if let Meanwhile::Waiting { .. } = hello_meanwhile(&server)? {
        return Err(broken(format!(
            "with {IDLE_CLIENTS} idle clients connected, GET /hello got no answer within {}",
            seconds(PROMPTLY)
        )));
    }
    let loaded = measured(resources::memory(pid), resources::NO_MEMORY)?;
    let per_connection =
        loaded.resident.saturating_sub(at_rest_memory.resident) / IDLE_CLIENTS as u64;
    check!(
        loaded.resident < IDLE_MEMORY_BOUND,
        "with {IDLE_CLIENTS} idle clients connected, the server uses {} ({} at rest, about \
         {per_connection} bytes per connection); the bound is {}",
        mebibytes(loaded.resident),
        mebibytes(at_rest_memory.resident),
        mebibytes(IDLE_MEMORY_BOUND)
    );
    // Shown with `cargo test -p suite ten_thousand -- --nocapture`: the measurement.
    println!(
        "{}: {IDLE_CLIENTS} idle connections: {} resident ({} at rest, about \
         {per_connection} bytes per connection)",
        server.label,
        mebibytes(loaded.resident),
        mebibytes(at_rest_memory.resident)
    );
    Ok(Outcome::Works)
}
// ANCHOR_END: ten_thousand_idle

/// One timed round of [`ten_thousand_idle_slowdown`]: this many `GET /hello` in a row,
/// after [`BUSY_WARM_UP`] that are not timed. The fastest round counts: at least
/// [`BUSY_ROUNDS`] of them, and more while [`BUSY_TIME`] lasts (up to [`BUSY_MAX_ROUNDS`]),
/// so that a moment when other work holds the machine is not all the probe sees.
pub(super) const BUSY_ROUND: usize = 100;
const BUSY_WARM_UP: usize = 20;
const BUSY_ROUNDS: usize = 3;
const BUSY_TIME: Duration = Duration::from_millis(500);
const BUSY_MAX_ROUNDS: usize = 50;
/// The longest a round may take; one that has not ended by then is cut short, and counted
/// at the pace it kept.
const ROUND_LIMIT: Duration = PATIENCE;
/// How much slower a round may be with 10,000 idle connections open than with none.
/// Measured on debug builds: 1x to 2.5x where the loop waits with epoll, a hundred times
/// and more where it waits with `poll(2)`. The bound sits well away from both, and a
/// ratio of two rounds on one machine stays put when a busy machine slows both.
pub(super) const SLOWDOWN_BOUND: f64 = 12.0;

/// The busy client of [`ten_thousand_idle_slowdown`]: `GET /hello` after `GET /hello`, on
/// one keep-alive connection (on a new one whenever the server closes it: chapters 1 and
/// 2 answer one request per connection).
struct Busy<'a> {
    server: &'a Server,
    connection: Option<Client>,
}

impl Busy<'_> {
    /// One `GET /hello`, answered in full and checked.
    fn hello(&mut self) -> Result<(), Stop> {
        let what = "GET /hello from the busy client";
        let mut client = match self.connection.take() {
            Some(client) => client,
            None => connect(self.server)?,
        };
        sending(&mut client, &get("/hello"), what)?;
        let response = receive(&mut client, self.server, false, what)?;
        expect_status(&response, &[200], what)?;
        check!(response.body == HELLO, "{what}: the body is {}", show(&response.body));
        if !response.says_close() {
            self.connection = Some(client);
        }
        Ok(())
    }

    /// Warms up, then times rounds: the fastest, and how many there were. Other work on
    /// the machine can only make a round slower, so the fastest is the truest.
    fn fastest_round(&mut self) -> Result<Timed, Stop> {
        for _ in 0..BUSY_WARM_UP {
            self.hello()?;
        }
        let began = Instant::now();
        let mut timed = Timed { fastest: Duration::MAX, rounds: 0 };
        while timed.rounds < BUSY_ROUNDS
            || (began.elapsed() < BUSY_TIME && timed.rounds < BUSY_MAX_ROUNDS)
        {
            let started = Instant::now();
            let mut done = 0;
            while done < BUSY_ROUND && (done == 0 || started.elapsed() < ROUND_LIMIT) {
                self.hello()?;
                done += 1;
            }
            // `done` is at least 1 and at most BUSY_ROUND, so neither cast can truncate.
            let took = started.elapsed() * BUSY_ROUND as u32 / done as u32;
            timed = Timed { fastest: timed.fastest.min(took), rounds: timed.rounds + 1 };
        }
        Ok(timed)
    }
}

/// The fastest of `rounds` rounds of [`BUSY_ROUND`] requests.
#[derive(Clone, Copy)]
struct Timed {
    fastest: Duration,
    rounds: usize,
}

/// What one server of [`ten_thousand_idle_slowdown`] showed.
enum Slowdown {
    /// The rounds without idle connections (`quiet`), and with 10,000 (`crowded`).
    Measured { quiet: Timed, crowded: Timed },
    /// The busy client could not be served at all while idle clients were connected.
    Stuck(String),
}

impl Slowdown {
    /// The rounds on `server`: without idle connections, then with 10,000 of them.
    fn measure(server: &Server) -> Result<Slowdown, Stop> {
        let pid = pid(server)?;
        // Before any client connects, as in `ten_thousand_idle`.
        let at_rest = measured(resources::open_descriptors(pid), resources::NO_DESCRIPTORS)?;
        let mut busy = Busy { server, connection: None };
        let quiet = busy.fastest_round()?;
        let idle = match crowd(server, pid, at_rest)? {
            Crowd::Held(idle) => idle,
            Crowd::Stuck(seen) => return Ok(Slowdown::Stuck(seen)),
        };
        let crowded = busy.fastest_round()?;
        drop(idle);
        Ok(Slowdown::Measured { quiet, crowded })
    }
}

/// How much slower the fastest crowded round was than the fastest quiet one.
fn ratio(quiet: Timed, crowded: Timed) -> f64 {
    crowded.fastest.as_secs_f64() / quiet.fastest.as_secs_f64().max(1e-9)
}

/// "100 GET /hello in a row took 3.5 ms with no idle connections open, 7.0 ms with
/// 10000 (the fastest of 50 and of 50 rounds): 2.0x", for messages.
fn rounds(quiet: Timed, crowded: Timed) -> String {
    let ms = |timed: Timed| format!("{:.1} ms", timed.fastest.as_secs_f64() * 1000.0);
    format!(
        "{BUSY_ROUND} GET /hello in a row took {} with no idle connections open, {} with \
         {IDLE_CLIENTS} (the fastest of {} and of {} rounds): {:.1}x",
        ms(quiet),
        ms(crowded),
        quiet.rounds,
        crowded.rounds,
        ratio(quiet, crowded)
    )
}

// ANCHOR: ten_thousand_idle_slowdown
/// Does a busy client pay for the idle ones? It sends `GET /hello` after `GET /hello`,
/// timed, first with no other client connected and then with 10,000 that say nothing.
/// A loop that waits with `poll(2)` hands the kernel the whole list of descriptors on
/// every turn, and the kernel walks all of it, so every turn, and every request, costs time
/// in proportion to the connections open. epoll keeps the list in the kernel and hands
/// back only the ready ones: the second run must take at most [`SLOWDOWN_BOUND`] times
/// the first. A ratio, not a time, so that a slow machine does not decide.
///
/// A chapter that can also wait with `poll(2)` (chapter 7's `--backend poll`) is then
/// measured that way too, and must be slowed down past the bound: otherwise this probe
/// could not tell the two apart, and the chapter's pass would prove nothing.
pub fn ten_thousand_idle_slowdown(target: &Target) -> Probed {
    needs_own_server(target)?;
    let _turn = ten_thousand_turn()?;
    let server = ten_thousand_server(target, &[])?;
    let (quiet, crowded) = match Slowdown::measure(&server)? {
        Slowdown::Measured { quiet, crowded } => (quiet, crowded),
        Slowdown::Stuck(seen) => {
            return Ok(Outcome::Lacks(format!(
                "the busy client could not be served at all: {seen}"
            )))
        }
    };
    let measured = rounds(quiet, crowded);
    if ratio(quiet, crowded) > SLOWDOWN_BOUND {
        return Ok(Outcome::Lacks(format!("{measured}; the bound is {SLOWDOWN_BOUND}x")));
    }
    // One server of 10,000 connections at a time.
    drop(server);

    let poll = ten_thousand_server(target, &[("--backend", "poll")])?;
    if poll.dropped_flags.contains(&"--backend") {
        // Shown with `cargo test -p suite ten_thousand -- --nocapture`: the measurement.
        println!("{}: {measured} (it has no --backend flag)", poll.label);
        return Ok(Outcome::Works);
    }
    let stats = exchange(&poll, &get("/stats"))?;
    let text = stats.text();
    let backend = text.lines().find(|line| line.starts_with("backend "));
    check!(
        backend.is_none_or(|line| line.trim_end() == "backend poll"),
        "started with --backend poll, /stats says {backend:?}"
    );
    let (quiet, crowded) = match Slowdown::measure(&poll)? {
        Slowdown::Measured { quiet, crowded } => (quiet, crowded),
        Slowdown::Stuck(seen) => {
            return Err(broken(format!(
                "with --backend poll, the busy client could not be served at all: {seen}"
            )))
        }
    };
    let measured_on_poll = rounds(quiet, crowded);
    if ratio(quiet, crowded) <= SLOWDOWN_BOUND {
        return Err(broken(format!(
            "with the default backend, {measured}; but with --backend poll too, \
             {measured_on_poll}, within the bound of {SLOWDOWN_BOUND}x: poll(2) should be \
             far slower, so the probe cannot tell the backends apart"
        )));
    }
    println!("{}: default backend: {measured}; --backend poll: {measured_on_poll}", poll.label);
    Ok(Outcome::Works)
}
// ANCHOR_END: ten_thousand_idle_slowdown

/// The file [`big_download_memory`] serves, how many clients fetch it at once, and how much
/// more memory that may cost the server at its peak. Read whole, it would cost 96 MiB per
/// client (384 MiB); a chunk at a time (256 KiB), a chunk per client plus what the kernel
/// buffers, a few MiB. The bound sits far from both.
pub(super) const DOWNLOAD_BYTES: usize = 96 << 20;
pub(super) const DOWNLOADERS: usize = 4;
pub(super) const DOWNLOAD_GROWTH_BOUND: u64 = 64 << 20;
/// How long each turn of [`big_download_memory`] waits on one client before it moves on.
const TURN: Duration = Duration::from_millis(10);

/// One client of [`big_download_memory`].
struct Download {
    client: Client,
    /// The body's length, once the head has come.
    length: Option<usize>,
    received: usize,
}

impl Download {
    fn done(&self) -> bool {
        self.length == Some(self.received)
    }
}

// ANCHOR: big_download_memory
/// Four clients download one 96 MiB file at once, each taking a little in turn, so that
/// all four are in flight from the first byte to the last. A server that reads the file
/// whole before sending it holds it once per client; one that sends it a chunk at a time
/// holds a chunk per client. Its peak memory tells which: the growth must stay under 64
/// MiB, and every download must arrive whole (its byte count; the file is all zeros, made
/// in an instant as a sparse file).
///
/// Chapters that read files whole refuse one this big (a 500, from shared's
/// `files::MAX_FILE`), rather than take 96 MiB per request: that refusal is their
/// limitation too.
pub fn big_download_memory(target: &Target) -> Probed {
    needs_own_server(target)?;
    let site = make_site(0)?;
    std::fs::File::create(site.root.join("huge.bin"))
        .and_then(|file| file.set_len(DOWNLOAD_BYTES as u64))
        .map_err(|error| broken(format!("cannot make huge.bin: {error}")))?;
    let mut server =
        target.start(Options { root: Some(site.root.clone()), ..Options::default() })?;
    let pid = pid(&server)?;
    // At rest after a file was served, so that what the first file costs once (a thread
    // pool's first jobs, say) counts as rest.
    expect_status(&exchange(&server, &get("/files/hello.txt"))?, &[200], "GET /files/hello.txt")?;
    let at_rest = measured(resources::memory(pid), resources::NO_MEMORY)?;
    measured(at_rest.peak, resources::NO_PEAK_MEMORY)?;

    let what = format!("GET /files/huge.bin ({} MiB)", DOWNLOAD_BYTES >> 20);
    let mut downloads = Vec::with_capacity(DOWNLOADERS);
    for _ in 0..DOWNLOADERS {
        let mut client = connect(&server)?;
        sending(&mut client, &get("/files/huge.bin"), &what)?;
        downloads.push(Download { client, length: None, received: 0 });
    }
    let started = Instant::now();
    let mut progress_at = started;
    while !downloads.iter().all(Download::done) {
        for (index, download) in downloads.iter_mut().enumerate() {
            let what = format!("{what}, client {} of {DOWNLOADERS}", index + 1);
            let turn_ends = Instant::now() + TURN;
            let Some(length) = download.length else {
                // Not every chapter answers all four at once (chapter 1 takes one client at
                // a time), so a head that is not here yet is waited for in later turns.
                let head = match download.client.read_head(turn_ends, false) {
                    Ok(head) => head,
                    Err(ReadError::TimedOut { .. }) => continue,
                    Err(error) => return Err(broken(format!("{what}: {error}"))),
                };
                progress_at = Instant::now();
                let status = head.response.status;
                if (500..600).contains(&status) {
                    let mut refusal = head.response;
                    refusal.body = download
                        .client
                        .read_body(head.body_length, Instant::now() + PATIENCE)
                        .map_err(|error| broken(format!("{what}: {error}")))?;
                    return Ok(Outcome::Lacks(format!(
                        "{what} was refused with {}, rather than sent",
                        refusal.summary()
                    )));
                }
                expect_status(&head.response, &[200], &what)?;
                check!(
                    head.body_length == DOWNLOAD_BYTES,
                    "{what}: Content-Length {}, expected {DOWNLOAD_BYTES}",
                    head.body_length
                );
                download.length = Some(head.body_length);
                continue;
            };
            if download.received == length {
                continue;
            }
            // Read for the whole turn, not once: a server that sends one download at a
            // time (chapter 1) would otherwise take minutes, 64 KiB a turn.
            while download.received < length {
                match download.client.read_some(length - download.received, turn_ends) {
                    Ok(bytes) => {
                        download.received += bytes.len();
                        progress_at = Instant::now();
                    }
                    Err(ReadError::TimedOut { .. }) => break,
                    Err(error) => {
                        return Err(broken(format!(
                            "{what}: {error} ({} of {length} body bytes had come)",
                            download.received
                        )))
                    }
                }
            }
        }
        if progress_at.elapsed() > PATIENCE {
            let received: Vec<String> =
                downloads.iter().map(|download| mebibytes(download.received as u64)).collect();
            return Err(broken(format!(
                "{what} by {DOWNLOADERS} clients at once: no progress for {} s (each had {})",
                PATIENCE.as_secs(),
                received.join(", ")
            )));
        }
    }
    let took = started.elapsed();
    let loaded = measured(resources::memory(pid), resources::NO_MEMORY)?;
    let growth = measured(loaded.peak, resources::NO_PEAK_MEMORY)?.saturating_sub(at_rest.resident);
    // Shown with `cargo test -p suite big_download -- --nocapture`: the measurement.
    println!(
        "{}: {DOWNLOADERS} downloads of {} at once in {}: peak memory {} over {} at rest",
        server.label,
        mebibytes(DOWNLOAD_BYTES as u64),
        seconds(took),
        mebibytes(growth),
        mebibytes(at_rest.resident)
    );
    drop(downloads);
    still_serves(&mut server, "four big downloads at once")?;
    if growth >= DOWNLOAD_GROWTH_BOUND {
        return Ok(Outcome::Lacks(format!(
            "{DOWNLOADERS} clients downloading a {} file at once grew the server's memory by \
             {} at its peak {}: each holds much of the file",
            mebibytes(DOWNLOAD_BYTES as u64),
            mebibytes(growth),
            growth_note(at_rest.resident, DOWNLOAD_GROWTH_BOUND)
        )));
    }
    Ok(Outcome::Works)
}
// ANCHOR_END: big_download_memory

/// How many answers the flooding client of [`pipelined_flood`] must have had before the
/// others ask: then the flood is under way. While the others are served, it must get at
/// least as many again: a loop that shares its turns still serves the flooder too.
pub(super) const FLOOD_WARM_UP: usize = 50;
/// How many `GET /hello` the other clients of [`pipelined_flood`] send (each on a new
/// connection), how far apart, and how soon each must be answered. A loop that gives each
/// connection a bounded share of its turn answers in a millisecond or two; one that lets
/// the flooder have the whole turn never answers while the flood lasts. A second leaves a
/// wide margin for a busy machine, and keeps the probe short when it fails.
pub(super) const FLOOD_OTHERS: usize = 8;
pub(super) const FLOOD_OTHERS_EVERY: Duration = Duration::from_millis(250);
pub(super) const FLOOD_PROMPTLY: Duration = Duration::from_secs(1);
/// How many requests the flooding client writes at once: 64 KiB of them, so that the
/// server's side of the connection never runs dry between two writes.
const FLOOD_BATCH: usize = 1700;
/// How often the flood's threads look up from a read or write that waits, to see whether
/// they should stop.
const FLOOD_TICK: Duration = Duration::from_millis(50);

// ANCHOR: pipelined_flood
/// One client floods its connection with pipelined `GET /hello`: a thread writes them
/// without pause while another reads and counts the answers, so the server always has
/// more to read from it and is never made to wait by TCP for long. Its socket is ready
/// every time the loop looks. Meanwhile other clients send `GET /hello` eight times, each
/// on a new connection, and each must be answered within [`FLOOD_PROMPTLY`]; the flooder
/// must go on being answered too (pipelining under a flood still works).
///
/// A loop that serves a ready socket until it has nothing more to read never gets to the
/// others: the flooder's socket is never empty. The answer is a budget: a connection gets
/// a bounded share of each turn, then the others get theirs (Tokio's cooperative budget,
/// the same idea). Chapters 1 and 2 answer one request and close, so the flood ends after
/// one answer: there is no pipeline to flood.
///
/// A server with more than one loop (chapter 9) is started with `--threads 1`: the promise
/// is about one loop's turns, and with two, a client that lands on the loop the flood does
/// not hold would be served by luck.
pub fn pipelined_flood(target: &Target) -> Probed {
    let server = match target.launch {
        Launch::Start { .. } => target.start(Options {
            if_supported: vec![("--threads", "1".into())],
            ..Options::default()
        })?,
        // Someone else's server, as they started it.
        Launch::External { .. } => target.server()?,
    };
    let flood = Flood::start(server.address)
        .map_err(|error| broken(format!("cannot start the flooding client: {error}")))?;
    let warm = flood.wait_for_answers(FLOOD_WARM_UP, Instant::now() + PATIENCE);
    if let Some(how) = flood.ended() {
        let answers = flood.answers();
        let said_close = flood.first_answer_said_close();
        drop(flood);
        check!(
            answers <= 1 && said_close,
            "the server ended the connection of a client that pipelined GET /hello after \
             {answers} answers ({how}){}",
            server.stderr_note()
        );
        return Ok(Outcome::Lacks(format!(
            "a client that pipelined GET /hello got {answers} answer, which said Connection: \
             close, and then its connection ended ({how}): with one request per connection, \
             there is no pipeline to flood"
        )));
    }
    check!(
        warm,
        "a client that pipelined GET /hello got only {} answers in {} s",
        flood.answers(),
        PATIENCE.as_secs()
    );

    let before = flood.answers();
    let began = Instant::now();
    let mut slowest = Duration::ZERO;
    for number in 1..=FLOOD_OTHERS {
        if number > 1 {
            // Spread over the flood, not a wait for anything: each asks afresh.
            thread::sleep(FLOOD_OTHERS_EVERY);
        }
        let what = format!("GET /hello from another client ({number} of {FLOOD_OTHERS})");
        let mut client = connect(&server)?;
        sending(&mut client, &get("/hello"), &what)?;
        let sent = Instant::now();
        match client.read_response(sent + FLOOD_PROMPTLY, false) {
            Ok(response) => {
                expect_status(&response, &[200], &what)?;
                slowest = slowest.max(sent.elapsed());
            }
            Err(ReadError::TimedOut { .. }) => {
                let answers = flood.answers();
                drop(flood); // stops the flood, and resets its connection
                let stopped = Instant::now();
                finish_hello(&server, client, sent)?;
                return Ok(Outcome::Lacks(format!(
                    "while one client kept its connection full of pipelined GET /hello \
                     ({answers} answered by then), {what}, on a new connection, got no answer \
                     within {}; it was answered {} after the flood stopped",
                    seconds(FLOOD_PROMPTLY),
                    seconds(stopped.elapsed())
                )));
            }
            Err(error) => return Err(broken(format!("{what}: {error}{}", server.stderr_note()))),
        }
    }
    let during = flood.answers() - before;
    let took = began.elapsed();
    if let Some(how) = flood.ended() {
        return Err(broken(format!(
            "the server ended the connection of a client that pipelined GET /hello after {} \
             answers ({how}){}",
            flood.answers(),
            server.stderr_note()
        )));
    }
    drop(flood);
    check!(
        during >= FLOOD_WARM_UP,
        "the others were served, but the client that pipelined GET /hello got only {during} \
         answers in the {} they took: a fair share for it too is far more",
        seconds(took)
    );
    // Shown with `cargo test -p suite pipelined_flood -- --nocapture`: the measurement.
    println!(
        "{}: {FLOOD_OTHERS} GET /hello from other clients answered during a pipelined flood, \
         the slowest in {:.1} ms; the flooding client had {during} answers in those {}",
        server.label,
        slowest.as_secs_f64() * 1000.0,
        seconds(took)
    );
    Ok(Outcome::Works)
}
// ANCHOR_END: pipelined_flood

/// The flooding client of [`pipelined_flood`]: a writer thread and a reader thread on one
/// connection. Dropping it stops both and resets the connection, on every path.
struct Flood {
    stream: TcpStream,
    stop: Arc<AtomicBool>,
    /// The answers read so far.
    answers: Arc<AtomicUsize>,
    /// How the connection ended, once it has (the server closed it, reset it).
    ended: Arc<Mutex<Option<String>>>,
    /// The first bytes received, to see what the first answer said.
    first_bytes: Arc<Mutex<Vec<u8>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Flood {
    fn start(address: SocketAddr) -> io::Result<Flood> {
        let stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
        stream.set_nodelay(true)?;
        // Reads and writes that wait give up after a tick, so the threads can see `stop`.
        stream.set_read_timeout(Some(FLOOD_TICK))?;
        stream.set_write_timeout(Some(FLOOD_TICK))?;
        let mut flood = Flood {
            stream,
            stop: Arc::default(),
            answers: Arc::default(),
            ended: Arc::default(),
            first_bytes: Arc::default(),
            threads: Vec::new(),
        };
        let writing = flood.stream.try_clone()?;
        let stop = Arc::clone(&flood.stop);
        flood.threads.push(thread::spawn(move || write_flood(&writing, &stop)));
        let reading = flood.stream.try_clone()?;
        let (stop, answers) = (Arc::clone(&flood.stop), Arc::clone(&flood.answers));
        let (ended, first_bytes) = (Arc::clone(&flood.ended), Arc::clone(&flood.first_bytes));
        flood.threads.push(thread::spawn(move || {
            let how = read_flood(&reading, &stop, &answers, &first_bytes);
            *ended.lock().unwrap_or_else(PoisonError::into_inner) = how;
        }));
        Ok(flood)
    }

    fn answers(&self) -> usize {
        self.answers.load(Ordering::Relaxed)
    }

    fn ended(&self) -> Option<String> {
        self.ended.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn first_answer_said_close(&self) -> bool {
        let first = self.first_bytes.lock().unwrap_or_else(PoisonError::into_inner);
        let text = String::from_utf8_lossy(&first).to_ascii_lowercase();
        let head = text.split("\r\n\r\n").next().unwrap_or_default();
        head.lines().any(|line| line.starts_with("connection:") && line.contains("close"))
    }

    /// Waits until `count` answers have come, or the connection ended, or `deadline`.
    fn wait_for_answers(&self, count: usize, deadline: Instant) -> bool {
        loop {
            if self.answers() >= count {
                return true;
            }
            if self.ended().is_some() || Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // A reset, not a goodbye: the server drops the requests still queued at once.
        let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The flood's writer: `GET /hello`, [`FLOOD_BATCH`] at a time, until told to stop or the
/// connection ends (the reader says how).
fn write_flood(mut stream: &TcpStream, stop: &AtomicBool) {
    let batch = get("/hello").repeat(FLOOD_BATCH);
    let mut offset = 0; // where in the batch the next write starts: no request is cut
    while !stop.load(Ordering::Relaxed) {
        match stream.write(&batch[offset..]) {
            Ok(0) => return,
            Ok(count) => offset = (offset + count) % batch.len(),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

/// The flood's reader: counts answers until told to stop, or the connection ends: then
/// says how. It must keep up, or the server's writes wait, and a server that waits to
/// write lets the others in: no flood. So it counts the cheapest way there is: each
/// answer's body is `Hello, world!\n`, and its `!` is the only one in the answer.
fn read_flood(
    mut stream: &TcpStream, stop: &AtomicBool, answers: &AtomicUsize, first_bytes: &Mutex<Vec<u8>>,
) -> Option<String> {
    let mut chunk = vec![0u8; 256 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let count = match stream.read(&mut chunk) {
            Ok(0) => return Some("the server closed it".into()),
            Ok(count) => count,
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(error) => return Some(format!("reading: {error}")),
        };
        {
            let mut first = first_bytes.lock().unwrap_or_else(PoisonError::into_inner);
            let room = 1024usize.saturating_sub(first.len()).min(count);
            first.extend_from_slice(&chunk[..room]);
        }
        let found = chunk[..count].iter().filter(|&&byte| byte == b'!').count();
        answers.fetch_add(found, Ordering::Relaxed);
    }
    None
}

/// [`idle_buffers_given_back`]: how many clients, how big a body each sends, and how much
/// more memory the server may hold once they are all idle. A server that keeps each
/// connection's buffers as its big request grew them holds a megabyte and more per client:
/// +48 to +110 MiB for the 100, as our chapters once did. One that gives them back may
/// still keep a little of each for the next request: two buffers of 64 KiB for 100 clients
/// is 12.5 MiB, measured at +16 to +17 MiB with what the allocator keeps besides (nginx:
/// +1.3 MiB for 500 such clients; our chapters keep none now, see `shared::buffer`). The
/// bound sits between the two kinds.
pub(super) const ECHO_CLIENTS: usize = 100;
pub(super) const ECHO_BODY: usize = 1 << 20;
pub(super) const ECHO_GROWTH_BOUND: u64 = 24 << 20;

// ANCHOR: idle_buffers_given_back
/// A request's buffers are given back once it is answered (the contract): an idle
/// kept-alive connection costs the same whatever it sent before. 100 clients each send one
/// `POST /echo` with a 1 MiB body, read the answer, and stay connected, idle. The server's
/// resident memory must then be within [`ECHO_GROWTH_BOUND`] of what it was before they
/// came. A server that keeps the receive buffer a big request grew (or the output buffer
/// of its answer) holds a megabyte or two per idle client, for as long as it stays.
/// Chapters 1 and 2 close every connection after its answer, and so give everything back.
pub fn idle_buffers_given_back(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server = target.server()?;
    let pid = pid(&server)?;
    // At rest after a first echo, so that what the first request costs once counts as rest.
    let warm = exchange(&server, &super::post("/echo", b"warm"))?;
    expect_status(&warm, &[200], "POST /echo")?;
    let at_rest = measured(resources::memory(pid), resources::NO_MEMORY)?;

    let body = crate::site::pattern(ECHO_BODY);
    let request = super::post("/echo", &body);
    let mut idle = Vec::with_capacity(ECHO_CLIENTS);
    for number in 1..=ECHO_CLIENTS {
        let what = format!("a 1 MiB POST /echo from client {number} of {ECHO_CLIENTS}");
        let mut client = connect(&server)?;
        sending(&mut client, &request, &what)?;
        let response = receive(&mut client, &server, false, &what)?;
        expect_status(&response, &[200], &what)?;
        check!(response.body == body, "{what}: the body that came back differs");
        // Connected and idle from now on. One the server has closed goes: a server that
        // lingers until its client hangs up (chapter 1) would otherwise wait for us.
        if !response.says_close() {
            idle.push(client);
        }
    }
    let loaded = measured(resources::memory(pid), resources::NO_MEMORY)?;
    let growth = loaded.resident.saturating_sub(at_rest.resident);
    // Shown with `cargo test -p suite idle_buffers -- --nocapture`: the measurement.
    println!(
        "{}: {ECHO_CLIENTS} idle clients after a 1 MiB POST /echo each: resident memory {} \
         over {} at rest",
        server.label,
        mebibytes(growth),
        mebibytes(at_rest.resident)
    );
    check!(
        growth <= ECHO_GROWTH_BOUND,
        "{ECHO_CLIENTS} clients each sent a 1 MiB POST /echo, read the answer and stayed \
         connected, idle; the server's resident memory grew by {} {}: each idle \
         connection keeps the buffers its big request grew",
        mebibytes(growth),
        growth_note(at_rest.resident, ECHO_GROWTH_BOUND)
    );
    drop(idle);
    still_serves(&mut server, "100 idle clients that had each sent 1 MiB")?;
    Ok(Outcome::Works)
}
// ANCHOR_END: idle_buffers_given_back

/// [`idle_after_a_burst`]: how many clients, how big a body each sends, and how much more
/// memory the server may hold once they are all idle again: about 2 KiB a client. nginx
/// frees a connection's buffers when it falls idle: 0.3 MiB more for the 2,000 (the
/// contract), 160 bytes a client. A server that keeps a receive or send buffer per idle
/// connection holds 8 to 20 KiB a client (our chapters before they gave them back: +16 to
/// +39 MiB).
pub(super) const BURST_CLIENTS: usize = 2000;
pub(super) const BURST_BODY: usize = 12 * 1024;
pub(super) const BURST_GROWTH_BOUND: u64 = 4 << 20;
/// How many of them connect before they wait for their first answers: well within the
/// kernel's queue of connections the server has not accepted yet (ours ask for 1024).
const BURST_BATCH: usize = 500;
/// How soon after the last answer the memory must be back down: a server gives a buffer
/// back when it has sent the answer, before the client reads it; the margin is for a busy
/// machine.
pub(super) const GIVEN_BACK_WITHIN: Duration = Duration::from_secs(1);

/// An idle kept-alive connection holds no receive or send buffer at all (the contract),
/// however many clients were busy at once. 2,000 clients each ask `GET /hello` and fall
/// idle, kept alive: the server's resident memory then is the baseline. The server is
/// stopped (SIGSTOP), each client sends one `POST /echo` with a 12 KiB body, and the
/// server goes on (SIGCONT): it finds all 2,000 requests waiting at once, and a server that
/// gives each busy connection buffers of its own gives them all at the same time. Every
/// client reads its whole answer and falls idle again. Within [`GIVEN_BACK_WITHIN`], the
/// memory must be back within [`BURST_GROWTH_BOUND`] (about 2 KiB a client) of the
/// baseline. A server that keeps each connection's buffers (or every buffer it ever made,
/// in a pool) holds the burst's megabytes for as long as the idle clients stay.
///
/// Chapters 1 and 2 close every connection after its answer, so no client of theirs is
/// ever idle: the first answer says `Connection: close`, and there is nothing more to
/// measure.
pub fn idle_after_a_burst(target: &Target) -> Probed {
    needs_own_server(target)?;
    // No timeouts while the clients sit idle: chapter 4 on would close them after 5 s.
    let mut server = ten_thousand_server(target, &[])?;
    let pid = pid(&server)?;
    let mut first = connect(&server)?;
    sending(&mut first, &get("/hello"), "GET /hello")?;
    let response = receive(&mut first, &server, false, "GET /hello")?;
    expect_status(&response, &[200], "GET /hello")?;
    if response.says_close() {
        // Shown with `cargo test -p suite idle_after -- --nocapture`.
        println!(
            "{}: closes every connection after its answer: no client is ever idle",
            server.label
        );
        return Ok(Outcome::Works);
    }
    let mut idle = vec![first];
    while idle.len() < BURST_CLIENTS {
        let begun = idle.len();
        for _ in begun..(begun + BURST_BATCH).min(BURST_CLIENTS) {
            let mut client = connect(&server)?;
            sending(&mut client, &get("/hello"), "GET /hello")?;
            idle.push(client);
        }
        for (index, client) in idle.iter_mut().enumerate().skip(begun) {
            let what = format!("GET /hello from client {} of {BURST_CLIENTS}", index + 1);
            let response = receive(client, &server, false, &what)?;
            expect_status(&response, &[200], &what)?;
            check!(
                !response.says_close(),
                "{what}: the answer says Connection: close, where the first client's kept \
                 its connection"
            );
        }
    }
    let at_rest = measured(resources::memory(pid), resources::NO_MEMORY)?;

    let body = crate::site::pattern(BURST_BODY);
    let request = super::post("/echo", &body);
    let posted = format!("a {} KiB POST /echo", BURST_BODY / 1024);
    server.signal("STOP").map_err(broken)?;
    for (index, client) in idle.iter_mut().enumerate() {
        let what = format!("{posted} from client {} of {BURST_CLIENTS}", index + 1);
        sending(client, &request, &what)?;
    }
    server.signal("CONT").map_err(broken)?;
    for (index, client) in idle.iter_mut().enumerate() {
        let what = format!("{posted} from client {} of {BURST_CLIENTS}", index + 1);
        let response = receive(client, &server, false, &what)?;
        expect_status(&response, &[200], &what)?;
        check!(response.body == body, "{what}: the body that came back differs");
    }
    let answered = Instant::now();
    let growth = loop {
        let now = measured(resources::memory(pid), resources::NO_MEMORY)?;
        let growth = now.resident.saturating_sub(at_rest.resident);
        if growth <= BURST_GROWTH_BOUND || answered.elapsed() >= GIVEN_BACK_WITHIN {
            break growth;
        }
        // The kernel cannot tell us when memory is given back; we look again shortly.
        thread::sleep(Duration::from_millis(20));
    };
    // Shown with `cargo test -p suite idle_after -- --nocapture`: the measurement.
    println!(
        "{}: {BURST_CLIENTS} idle clients after {posted} each, all at once: resident memory \
         {} over {} with them idle before",
        server.label,
        mebibytes(growth),
        mebibytes(at_rest.resident)
    );
    check!(
        growth <= BURST_GROWTH_BOUND,
        "{BURST_CLIENTS} kept-alive clients, idle, each sent {posted} while the server was \
         stopped (SIGSTOP), so that it found them all at once, read its answer, and fell \
         idle again; {} later the server's resident memory was {} over what it was with them \
         idle before {}: idle connections keep the buffers the burst made them",
        seconds(GIVEN_BACK_WITHIN),
        mebibytes(growth),
        growth_note(at_rest.resident, BURST_GROWTH_BOUND)
    );
    drop(idle);
    let after = format!("{BURST_CLIENTS} idle clients that had each sent {posted} at once");
    still_serves(&mut server, &after)?;
    Ok(Outcome::Works)
}

/// [`memory_after_a_storm`]: how many clients post at once, how big a body each, how much
/// more the server may keep once they have all gone, and how soon. Measured on our
/// chapters when the allocator kept what they freed: +30 to +95 MiB after such a storm
/// (+110 to +315 MiB after four of 500 clients); +0 to +4 MiB since `shared::memory` asks
/// it to give back what it holds free once the server falls idle.
pub(super) const STORM_CLIENTS: usize = 200;
pub(super) const STORM_BODY: usize = 1 << 20;
pub(super) const STORM_GROWTH_BOUND: u64 = 16 << 20;
pub(super) const STORM_GIVEN_BACK_WITHIN: Duration = Duration::from_secs(5);
/// A server that serves one client at a time (chapter 1) never holds more than one body:
/// its storm is a short queue, so that the clients at its end need not wait minutes.
pub(super) const STORM_CLIENTS_ONE_AT_A_TIME: usize = 20;
/// How long a round may take: a deadline that only ends a wait that has failed. A round
/// moves 400 MiB through the server; on a busy machine, with other servers doing the same,
/// that can take many seconds.
const STORM_PATIENCE: Duration = Duration::from_secs(60);

// ANCHOR: memory_after_a_storm
/// After a burst of big requests, the memory they took goes back to the system within
/// seconds, not only to the server's allocator (the contract). A baseline after a first
/// echo of [`STORM_BODY`], alone; then [`STORM_CLIENTS`] clients
/// ([`STORM_CLIENTS_ONE_AT_A_TIME`] for a server that serves one at a time) connect, and
/// all at once each sends a `POST /echo` of [`STORM_BODY`], reads its answer, and leaves.
/// Within [`STORM_GIVEN_BACK_WITHIN`] of the last answer, the server's resident memory
/// must be back within [`STORM_GROWTH_BOUND`] of the baseline. A server whose allocator
/// keeps what the storm freed shows its peak in `top` for good, and nobody can tell that
/// from a leak.
pub fn memory_after_a_storm(target: &Target) -> Probed {
    needs_own_server(target)?;
    // Long timeouts: on a busy machine, connecting them all may take longer than the
    // header timeout (chapter 4 on), which would answer 408 before anyone has sent.
    let mut server = ten_thousand_server(target, &[])?;
    let pid = pid(&server)?;
    let body = Arc::new(crate::site::pattern(STORM_BODY));
    let request = Arc::new(super::post("/echo", &body));
    let posted = format!("a {} POST /echo", mebibytes(STORM_BODY as u64));
    // One alone first. It matters: glibc's allocator gives a first big buffer a mapping of
    // its own, gives it back when freed, and takes that as a sign to keep later ones in
    // its heap, where a storm's stay after it has gone.
    let warm = exchange(&server, &request)?;
    expect_status(&warm, &[200], &posted)?;
    let at_rest = measured(resources::memory(pid), resources::NO_MEMORY)?;

    let clients = if takes_everyone(&server) { STORM_CLIENTS } else { STORM_CLIENTS_ONE_AT_A_TIME };
    storm(&server, clients, &request, &body, &posted)?;
    let answered = Instant::now();
    let peak = measured(resources::memory(pid), resources::NO_MEMORY)?;
    let growth = loop {
        let now = measured(resources::memory(pid), resources::NO_MEMORY)?;
        let growth = now.resident.saturating_sub(at_rest.resident);
        if growth <= STORM_GROWTH_BOUND || answered.elapsed() >= STORM_GIVEN_BACK_WITHIN {
            break growth;
        }
        // The kernel cannot tell us when memory is given back; we look again shortly.
        thread::sleep(Duration::from_millis(50));
    };
    let storms = format!("{clients} clients each sent {posted} at once");
    // Shown with `cargo test -p suite memory_after -- --nocapture`: the measurement.
    println!(
        "{}: after {storms} and left: resident memory {} over {} at rest, {} after the last answer \
         ({} over at that answer)",
        server.label,
        mebibytes(growth),
        mebibytes(at_rest.resident),
        seconds(answered.elapsed()),
        mebibytes(peak.resident.saturating_sub(at_rest.resident)),
    );
    check!(
        growth <= STORM_GROWTH_BOUND,
        "after {storms} (each read its answer and left), {} after the last answer the \
         server's resident memory was still {} over what it was at rest {}: what the storm \
         freed was kept (by the allocator?), not given back to the system",
        seconds(STORM_GIVEN_BACK_WITHIN),
        mebibytes(growth),
        growth_note(at_rest.resident, STORM_GROWTH_BOUND)
    );
    still_serves(&mut server, &storms)?;
    Ok(Outcome::Works)
}

/// One round of [`memory_after_a_storm`]: `clients` connect; then, all at once, each sends
/// `request`, checks that the answer echoes `body`, and leaves.
fn storm(
    server: &Server, clients: usize, request: &Arc<Vec<u8>>, body: &Arc<Vec<u8>>, what: &str,
) -> Result<(), Stop> {
    // Everyone connects first, then all send at once: the server holds every body and
    // answer at the same time, as in a real storm.
    let start = Arc::new(std::sync::Barrier::new(clients));
    let mut storm = Vec::with_capacity(clients);
    for number in 1..=clients {
        let what = format!("{what}, from client {number} of {clients}, all at once");
        let mut client = connect(server)?;
        let (start, request, body) = (Arc::clone(&start), Arc::clone(request), Arc::clone(body));
        storm.push(thread::spawn(move || -> Result<(), String> {
            start.wait();
            client.send(&request).map_err(|error| format!("{what}: sending failed: {error}"))?;
            let deadline = Instant::now() + STORM_PATIENCE;
            let response = client
                .read_response(deadline, false)
                .map_err(|error| format!("{what}: {error}"))?;
            match (response.status, response.body == *body) {
                (200, true) => Ok(()),
                (200, false) => Err(format!("{what}: the body that came back differs")),
                _ => Err(format!("{what}: expected 200, got {}", response.summary())),
            }
            // The client leaves here: dropped, its connection closes.
        }));
    }
    let mut failed = None;
    for client in storm {
        match client.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => failed = failed.or(Some(error)),
            Err(_) => failed = failed.or(Some(format!("{what}: a client panicked"))),
        }
    }
    match failed {
        Some(error) => Err(broken(format!("{error}{}", server.stderr_note()))),
        None => Ok(()),
    }
}
// ANCHOR_END: memory_after_a_storm

/// [`burst_of_clients`]: how many clients come at once, and in how many turns of its loop
/// the server must have let them all in and answered them. Measured on our chapters: a
/// loop that accepts every client waiting takes 1 to 3 turns (chapters 2-7), one that
/// accepts 32 a turn 8 to 10 (chapters 8 and 9), one that accepts one a turn 204 to 217
/// (chapter 10 before it was fixed).
pub(super) const BURST_OF: usize = 200;
pub(super) const BURST_TURNS_BOUND: u64 = 50;
/// How long a client of the burst waits for its connection: on loopback, the kernel
/// answers at once, unless the listener's queue is full, when it drops the handshake and
/// tries again a second later.
const QUEUED_WITHIN: Duration = Duration::from_millis(250);

/// A burst of clients is let in together, not one a turn. The server is stopped
/// (SIGSTOP), 200 clients connect (the kernel finishes their handshakes and queues them for
/// the listener, as many as its queue holds) and each sends `GET /hello`; the server goes on (SIGCONT), and every
/// client reads its answer. `/stats`' `loop_turns`, asked before and after, must have
/// grown by at most [`BURST_TURNS_BOUND`]. A loop that accepts one client a turn needs 200
/// turns at least, and under load each of them is a turn of everyone else's work too, so
/// the last of a burst waits the longest. A server with more than one loop runs one
/// (`--threads 1`), whose turns these are; one without a loop (chapter 1) counts no turns.
pub fn burst_of_clients(target: &Target) -> Probed {
    needs_own_server(target)?;
    let mut server = target
        .start(Options { if_supported: vec![("--threads", "1".into())], ..Options::default() })?;
    let turns = |server: &Server| super::stat(server, "loop_turns");
    let before = turns(&server)?;
    server.signal("STOP").map_err(broken)?;
    let mut clients = Vec::with_capacity(BURST_OF);
    for number in 1..=BURST_OF {
        let what =
            format!("GET /hello from client {number} of {BURST_OF}, sent while it was stopped");
        // A server that asked `listen` for a short queue (Python's is 128) gets a shorter
        // burst: as many as the kernel will queue for it.
        let mut client = match Client::connect_within(server.address, QUEUED_WITHIN) {
            Ok(client) => client,
            Err(error) if error.kind() == io::ErrorKind::TimedOut => break,
            Err(error) => return Err(broken(format!("{what}: cannot connect: {error}"))),
        };
        sending(&mut client, &get("/hello"), &what)?;
        clients.push((what, client));
    }
    let burst = clients.len();
    server.signal("CONT").map_err(broken)?;
    let mut kept = Vec::with_capacity(BURST_OF);
    for (what, mut client) in clients {
        let response = receive(&mut client, &server, false, &what)?;
        expect_status(&response, &[200], &what)?;
        // Kept until the turns are counted: each that hangs up is a turn more. But a server
        // that takes one client at a time (chapter 1), and lingers until it hangs up, would
        // wait for us before it takes the next.
        if takes_everyone(&server) {
            kept.push(client);
        }
    }
    let used = turns(&server)?.saturating_sub(before);
    // Shown with `cargo test -p suite burst_of -- --nocapture`: the measurement.
    println!(
        "{}: {burst} clients that came at once were let in and answered in {used} turns of \
         its loop",
        server.label
    );
    drop(kept);
    // With fewer clients than the bound, one a turn would pass too: nothing to tell.
    check!(
        used <= BURST_TURNS_BOUND || burst as u64 <= BURST_TURNS_BOUND,
        "{burst} clients connected while the server was stopped (SIGSTOP), each sent GET \
         /hello, and were answered once it went on (SIGCONT); /stats counted {used} turns of \
         its loop in between (the bound is {BURST_TURNS_BOUND}; the two GET /stats included): \
         it lets in one client a turn?"
    );
    still_serves(&mut server, "a burst of clients")?;
    Ok(Outcome::Works)
}

/// [`flood_behind_a_wait`]: how much the flooding client pipelines in one round, how long
/// the wait in front of it lasts, how many rounds of each kind it sends, and how many times
/// what a request costs the server without a wait one behind a wait may cost. Measured on
/// debug builds (the suite's): 0.8 to 1.1 times where input is consumed by an offset
/// (chapters 3-7), 3.7 to 5.5 times where the megabyte behind is moved for each request
/// (chapters 8-10 before they were fixed); on release builds, 1.0 against 16 to 18.
pub(super) const ROUND_BYTES: usize = 1 << 20;
pub(super) const WAIT_IN_FRONT_MS: u64 = 100;
const ROUNDS_EACH: usize = 2;
pub(super) const COST_BEHIND_A_WAIT_BOUND: f64 = 2.0;
/// How long one round may take before the probe gives up on it: it takes a fraction of a
/// second, a few seconds where each request moves a megabyte.
const ROUND_PATIENCE: Duration = Duration::from_secs(20);

/// A wait must not make the bytes behind it cost again and again (the contract: pipelined
/// input is consumed by an offset, not moved per request). One client sends 1 MiB of
/// pipelined `GET /hello` (29,127 requests) and reads every answer, twice; then twice more
/// with a `GET /sleep?ms=100` in front of the megabyte. While the sleep waits, the server
/// reads on, and the requests behind it pile up in its buffer. A server that then takes
/// each request off the front of that buffer by moving the rest (`Vec::drain(..consumed)`)
/// moves half a megabyte, on average, for every one of them, and everyone else waits while
/// it does. The server's CPU time per request behind the wait (all its threads, as the
/// kernel counts them) must be at most [`COST_BEHIND_A_WAIT_BOUND`] times what it is
/// without one: the cheaper of the two rounds of each kind, since other work on the
/// machine can only make a round dearer.
///
/// Why the cost, and not how long another client waits meanwhile: in a release build a
/// request costs the server well under a microsecond, and moving half a megabyte a dozen,
/// so the others wait 0.3 to 0.8 s instead of 0.014 s, a difference no busy machine hides.
/// In a debug build a request costs some three or four microseconds: the moves make it
/// only four or five times as dear, and a loop that answers the piled-up megabyte in one
/// turn (chapters 4-7) keeps the others waiting 0.2 to 0.5 s too, so the others' waits
/// overlap. The cost per
/// request, measured against the server's own, tells the two apart in both builds.
///
/// As for [`pipelined_flood`], a server with more than one loop runs one (`--threads 1`),
/// and chapters 1 and 2 answer one request and close: nothing waits behind anything.
pub fn flood_behind_a_wait(target: &Target) -> Probed {
    needs_own_server(target)?;
    let server = target
        .start(Options { if_supported: vec![("--threads", "1".into())], ..Options::default() })?;
    let pid = pid(&server)?;
    let client = connect(&server)?;
    let hellos = ROUND_BYTES / get("/hello").len();
    let plain = get("/hello").repeat(hellos);
    let mut behind = get(&format!("/sleep?ms={WAIT_IN_FRONT_MS}"));
    behind.extend_from_slice(&plain);
    let (mut without, mut with) = (Duration::MAX, Duration::MAX);
    for _ in 0..ROUNDS_EACH {
        match pipelined_round(&server, &client, &plain, hellos, pid)? {
            Round::Answered(cpu) => without = without.min(cpu),
            Round::Closed(seen) => return Ok(Outcome::Lacks(seen)),
        }
    }
    for _ in 0..ROUNDS_EACH {
        match pipelined_round(&server, &client, &behind, hellos, pid)? {
            Round::Answered(cpu) => with = with.min(cpu),
            Round::Closed(seen) => {
                return Err(broken(format!("with a GET /sleep in front: {seen}")));
            }
        }
    }
    let each = |cpu: Duration| cpu.as_secs_f64() * 1e6 / hellos as f64;
    let ratio = each(with) / each(without).max(1e-3);
    let seen = format!(
        "a client pipelined 1 MiB of GET /hello ({hellos} requests) and read the answers: \
         each cost the server {:.1} µs of CPU; behind a GET /sleep?ms={WAIT_IN_FRONT_MS}, \
         {:.1} µs, {ratio:.1} times as much",
        each(without),
        each(with)
    );
    // Shown with `cargo test -p suite flood_behind -- --nocapture`: the measurement.
    println!("{}: {seen}", server.label);
    if ratio > COST_BEHIND_A_WAIT_BOUND {
        return Ok(Outcome::Lacks(format!(
            "{seen} (the bound is {COST_BEHIND_A_WAIT_BOUND:.0} times): the requests that \
             piled up behind the wait cost again for every one answered, as if the bytes \
             behind each were moved, not consumed by an offset; meanwhile everyone else waits"
        )));
    }
    Ok(Outcome::Works)
}

/// What became of one round of [`flood_behind_a_wait`].
enum Round {
    /// Every answer came; the server's CPU time for the round.
    Answered(Duration),
    /// The server answered the first request, said `Connection: close` and closed: what
    /// was seen.
    Closed(String),
}

/// Sends `round` (pipelined requests, `hellos` of them `GET /hello`) on `client` and reads
/// until every `GET /hello` is answered, measuring the server's CPU time meanwhile. The
/// writing runs on a thread of its own: the server stops reading while its answers wait
/// for us.
fn pipelined_round(
    server: &Server, client: &Client, round: &[u8], hellos: usize, pid: u32,
) -> Result<Round, Stop> {
    let stream = client.stream();
    let what = format!("{} KiB of pipelined requests on one connection", round.len() >> 10);
    for set in [TcpStream::set_read_timeout, TcpStream::set_write_timeout] {
        set(stream, Some(ROUND_PATIENCE))
            .map_err(|error| broken(format!("cannot set a timeout: {error}")))?;
    }
    let cpu = || -> Result<Duration, Stop> {
        let threads = measured(resources::thread_cpu_times(pid), resources::NO_THREAD_TIMES)?;
        Ok(threads.iter().map(|thread| thread.cpu).sum())
    };
    let before = cpu()?;
    let (answers, ending, head) = thread::scope(|scope| {
        scope.spawn(|| (&*stream).write_all(round));
        let mut chunk = vec![0u8; 256 * 1024];
        let mut head = Vec::new(); // the start of the first answer, for messages
        let mut answers = 0;
        let ending = loop {
            if answers >= hellos {
                break None;
            }
            match (&*stream).read(&mut chunk) {
                Ok(0) => break Some("the server closed the connection".to_string()),
                Ok(count) => {
                    let room = 512usize.saturating_sub(head.len()).min(count);
                    head.extend_from_slice(&chunk[..room]);
                    // Each `/hello` answer has one `!`, its body's; the sleep's has none.
                    answers += chunk[..count].iter().filter(|&&byte| byte == b'!').count();
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => break Some(error.to_string()),
            }
        };
        if ending.is_some() {
            // Unblocks the writer, if the server stopped reading without closing.
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        (answers, ending, head)
    });
    let Some(ending) = ending else {
        return Ok(Round::Answered(cpu()?.saturating_sub(before)));
    };
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let first_head = text.split("\r\n\r\n").next().unwrap_or_default();
    let said_close = first_head.lines().any(|line| line == "connection: close");
    check!(
        answers <= 1 && said_close,
        "{what}: {answers} of {hellos} GET /hello were answered, then: {ending}{}",
        server.stderr_note()
    );
    Ok(Round::Closed(format!(
        "a client that pipelined 1 MiB of GET /hello got {answers} answer, which said \
         Connection: close, and then its connection ended ({ending}): with one request per \
         connection, nothing waits behind anything"
    )))
}
