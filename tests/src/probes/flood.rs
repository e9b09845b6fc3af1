//! The row "a client flooding pipelined requests does not stall the others" (chapter 3
//! on): a connection that always has input gets a bounded share of the loop.
//!
//! - [`pipelined_flood`]: one client that sends requests as fast as it reads the answers.
//!   Its socket is always ready; the others must still get their turns.
//! - [`flood_behind_a_wait`]: one client pipelines a megabyte of requests behind a wait.
//!   Does each answer cost the server the bytes behind it, every time?

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::client::{Client, ReadError};
use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{in_words, leak, rule, secs, size, times, Rule, CONNECTIONS_TOPIC};
use crate::probes::pid;
use crate::probes::{
    broken, check, connect, expect_status, finish_hello, get, measured, needs_own_server, seconds,
    sending, Launch, Outcome, Probed, Stop, Target, PATIENCE,
};
use crate::probes::{probe, Module, Probe};
use crate::resources::{self};
use crate::server::{Options, Server};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module = Module {
    probes: PROBES,
    on_one_loop: &["pipelined_flood", "flood_behind_a_wait"],
    row: Some(row),
    rules,
    quoted,
};

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("pipelined_flood", Capability::Flood, pipelined_flood),
    probe("flood_behind_a_wait", Capability::Flood, flood_behind_a_wait),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::Flood,
            description: "a client flooding pipelined requests does not stall the others",
            chapters: [
                No("ch01 answers one request per connection and closes it, so a client has no \
                    pipeline to flood: its next request needs a new connection, and waits its \
                    turn like everyone else's."),
                No("ch02 still answers one request per connection and closes it, so there is no \
                    pipeline to flood: the requests behind the first are dropped with the \
                    connection."),
                Yes,
                Yes,
                Yes,
                Yes,
                Yes,
                Yes,
                Yes,
                Yes,
                Yes,
            ],
            note: Some(leak(format!(
                "The probe has one client write `GET /hello` after `GET /hello` on one \
                connection for about {} seconds while it reads the answers, and meanwhile \
                sends `GET /hello` {} times from new connections: each must be answered \
                within {} (a loop that gives each connection a bounded share of its turn \
                answers in a millisecond or two), and the flooding client must go on being \
                answered too. Chapter 9 runs with `--threads 1` for it: with two loops, a \
                client that lands on the loop the flood leaves alone is served by luck. \
                `flood_behind_a_wait` has one client pipeline {} of `GET /hello`, {} as it \
                is and {} behind a `GET /sleep?ms={}`, and compares the server's CPU time per \
                request (from `/proc`): behind the wait it may be at most {} as much. A server \
                that moves the piled-up megabyte for every request answered pays four to five \
                times as much in a debug build (the suite's), sixteen to eighteen times in a \
                release build, while everyone else waits; a cost, not the others' wait, because in a debug build a loop \
                that answers the whole megabyte in one turn keeps them waiting almost as long.",
                in_words((FLOOD_OTHERS_EVERY * FLOOD_OTHERS as u32).as_secs() as usize),
                in_words(FLOOD_OTHERS),
                secs(FLOOD_PROMPTLY),
                size(ROUND_BYTES as u64),
                times(ROUNDS_EACH),
                times(ROUNDS_EACH),
                WAIT_IN_FRONT_MS,
                times(COST_BEHIND_A_WAIT_BOUND as usize),
            ))),
    }
}
// ANCHOR_END: row

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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("flood_behind_a_wait", CONNECTIONS_TOPIC, format!(
            "One client pipelines {} of `GET /hello`, twice alone and twice behind a `GET \
             /sleep?ms={}`: a request behind the wait may cost the server at most {} times the \
             CPU time of one without. Consume pipelined requests by an offset: a buffer that \
             moves the bytes behind each request answered costs a megabyte each time. (Started \
             with `--threads 1` where that is accepted.)",
            size(ROUND_BYTES as u64), WAIT_IN_FRONT_MS, COST_BEHIND_A_WAIT_BOUND)),
        rule("pipelined_flood", CONNECTIONS_TOPIC, format!(
            "One client writes pipelined `GET /hello` without pause while it reads the answers. \
             After its first {}, {} other clients each send `GET /hello` on a new connection, \
             {} apart: each is answered within {}, and the flooder gets {} more answers \
             meanwhile, its connection kept. Give each connection a bounded share of a turn. \
             (Started with `--threads 1` where that is accepted.)",
            FLOOD_WARM_UP, FLOOD_OTHERS, secs(FLOOD_OTHERS_EVERY), secs(FLOOD_PROMPTLY), FLOOD_WARM_UP)),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        FLOOD_WARM_UP.to_string(),
        FLOOD_OTHERS.to_string(),
        secs(FLOOD_OTHERS_EVERY),
        secs(FLOOD_PROMPTLY),
        size(ROUND_BYTES as u64),
        WAIT_IN_FRONT_MS.to_string(),
        COST_BEHIND_A_WAIT_BOUND.to_string(),
    ]
}
