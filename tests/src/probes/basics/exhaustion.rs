//! Probes that try to exhaust the server: the contract's promise under attack is bounded
//! work and bounded memory, and a normal client still served.
//!
//! - [`descriptor_exhaustion`]: more connections than the server has file descriptors.
//!   `accept` fails with EMFILE while the listener stays readable, so a loop that keeps
//!   asking spins at 100% CPU; we measure the server's CPU time to see that it does not.
//! - [`pipelined_without_reading`]: one client that sends requests as fast as it can and
//!   never reads an answer. The server must push back instead of buffering the answers,
//!   and serve another client meanwhile.
//!
//! These watch the server process itself (CPU time, memory, descriptors, via
//! [`crate::resources`]), so they start their own servers and skip for someone else's.

use std::io::{self, Write};
use std::thread::{self};
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::manifest::Capability;
use crate::probes::checklist::Applies::With;
use crate::probes::checklist::{rule, rule_if, secs, size, Rule, FLOODS};
use crate::probes::{
    broken, check, connect, exchange, expect_status, finish_hello, get, hello_meanwhile, measured,
    needs_own_server, seconds, still_serves, Meanwhile, Outcome, Probed, Stop, Target, PATIENCE,
    PROMPTLY,
};
use crate::probes::{pid, still_running, takes_everyone, wait_for_descriptors, BACKLOG_NOTE};
use crate::probes::{probe, Module, Probe};
use crate::resources::{self, growth_note, mebibytes};
use crate::server::{Options, Server};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module = Module {
    probes: PROBES,
    on_one_loop: &["pipelined_without_reading"],
    row: None,
    rules,
    quoted,
};

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("descriptor_exhaustion", Capability::Basics, descriptor_exhaustion),
    probe("pipelined_without_reading", Capability::Basics, pipelined_without_reading),
];

/// The server's file descriptor limit during [`descriptor_exhaustion`].
pub(crate) const FLOOD_FD_LIMIT: u32 = 64;
/// How many connections flood it: well over the limit.
pub(crate) const FLOOD_CLIENTS: usize = 200;
/// How long we watch the CPU clock of a flooded server, and the most it may use in that
/// time. A server that spins uses all of it; one that waits, next to nothing.
pub(crate) const CPU_WINDOW: Duration = Duration::from_secs(1);
pub(crate) const MAX_CPU_WHILE_FLOODED: Duration = Duration::from_millis(300);
/// How many more descriptors than at rest a server may keep after a flood has left.
pub(crate) const LAZY_DESCRIPTORS: usize = 4;

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

/// How much a client pipelines without reading, and how much more memory that may cost
/// the server at its peak.
pub(crate) const PIPELINE_BYTES: usize = 20 << 20;
pub(crate) const PIPELINE_GROWTH_BOUND: u64 = 10 << 20;
/// A write that makes no progress for this long means the server pushed back.
pub(crate) const PUSHED_BACK_AFTER: Duration = Duration::from_millis(500);

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
pub(crate) const TRICKLE_FOR: Duration = Duration::from_millis(500);
pub(crate) const TRICKLE_PIECE: usize = 100;

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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    vec![
        rule("descriptor_exhaustion", FLOODS, format!(
            "Started with at most {} open files (`ulimit -n`) and flooded with {} connections, \
             so that `accept` fails (EMFILE) while more clients wait: the server uses at most {} \
             of CPU time in {} (no busy loop around a listener it cannot accept from), serves \
             `GET /hello` once the flood leaves, and within {} is back to the descriptors it had \
             at rest (or at most {} more).",
            FLOOD_FD_LIMIT, FLOOD_CLIENTS, secs(MAX_CPU_WHILE_FLOODED), secs(CPU_WINDOW), secs(PATIENCE), LAZY_DESCRIPTORS)),
        rule("pipelined_without_reading", FLOODS, format!(
            "A client pipelines {} of `GET /hello` and never reads an answer: the server's peak \
             memory (`VmHWM`) stays less than {} over its resident memory at rest. Stop reading \
             from a client while its answers pile up, or close it: the check's writes then \
             stall, and once one has gone {} without progress, the check stops sending and \
             measures. Then a second client, with a small receive buffer, sends {} requests at a \
             time every half millisecond for {}, reading nothing; both still connected, `GET \
             /hello` from another is answered within {}. What a client you are not reading sends \
             must not hold what others need (receive buffers a loop shares). (Started with \
             `--threads 1` where that is accepted.)",
            size(PIPELINE_BYTES as u64), size(PIPELINE_GROWTH_BOUND), secs(PUSHED_BACK_AFTER),
            TRICKLE_PIECE, secs(TRICKLE_FOR), secs(PROMPTLY))),
        rule_if(With(IdleClient), "descriptor_exhaustion", FLOODS, format!(
            "Flooded at a limit of {} files, the server accepts until it has them all in use: \
             no cap of its own below the system's.",
            FLOOD_FD_LIMIT)),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        FLOOD_FD_LIMIT.to_string(),
        FLOOD_CLIENTS.to_string(),
        secs(MAX_CPU_WHILE_FLOODED),
        secs(CPU_WINDOW),
        LAZY_DESCRIPTORS.to_string(),
        size(PIPELINE_BYTES as u64),
        size(PIPELINE_GROWTH_BOUND),
        secs(PUSHED_BACK_AFTER),
        TRICKLE_PIECE.to_string(),
        secs(TRICKLE_FOR),
    ]
}
