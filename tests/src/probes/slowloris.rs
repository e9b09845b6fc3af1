//! The row "slowloris does not deny service" (chapter 4 on).
//!
//! - [`slowloris`]: hundreds of clients that send a request head one byte a second and
//!   never finish it. Only a header timeout frees their descriptors.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::client::ReadError;
use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::Applies::With;
use crate::probes::checklist::{rule, rule_if, secs, Rule, FLOODS, TIMEOUTS};
use crate::probes::{
    broken, check, connect, dropped_note, expect_status, finish_hello, get, needs_own_server,
    seconds, sending, Outcome, Probed, Target, PATIENCE,
};
use crate::probes::{pid, still_running, takes_everyone, wait_for_descriptors, BACKLOG_NOTE};
use crate::probes::{probe, Module, Probe};
use crate::server::Options;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("slowloris", Capability::Slowloris, slowloris),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::Slowloris,
        description: "slowloris does not deny service",
        chapters: [
            No("ch01 serves one client at a time: the first client that trickles its request \
                head holds the accept loop for as long as it keeps trickling."),
            No("ch02 has no timers, so nothing ever closes a client that trickles its head: \
                a few hundred of them hold every file descriptor, and new clients wait in the \
                backlog."),
            No("ch03 has no timers yet: trickling clients keep their descriptors for as long \
                as they like, and once all are taken nobody new is accepted."),
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
        ],
        note: None,
    }
}
// ANCHOR_END: row

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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    vec![
        rule_if(With(IdleClient), "slowloris", FLOODS, format!(
            "Started with at most {} open files, while {} clients trickle request heads, the \
             server accepts until it has them all in use.",
            SLOWLORIS_FD_LIMIT, SLOWLORIS_CLIENTS)),
        rule("slowloris", TIMEOUTS, format!(
            "Started with at most {} open files and `--header-timeout {}`, {} clients each send \
             a head a byte every {}, never finish it, and reconnect when dropped: a `GET /hello` \
             is answered within {}.",
            SLOWLORIS_FD_LIMIT, SLOWLORIS_HEADER_TIMEOUT, SLOWLORIS_CLIENTS, secs(BYTE_EVERY), secs(SLOWLORIS_PATIENCE))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        SLOWLORIS_FD_LIMIT.to_string(),
        SLOWLORIS_HEADER_TIMEOUT.to_string(),
        SLOWLORIS_CLIENTS.to_string(),
        secs(BYTE_EVERY),
        secs(SLOWLORIS_PATIENCE),
    ]
}
