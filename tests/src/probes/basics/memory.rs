//! Probes of what clients cost in memory, and of what a burst of them costs the loop.
//!
//! - [`idle_buffers_given_back`]: a hundred clients send one big request each and stay,
//!   idle. Do they still cost what their big requests did?
//! - [`idle_after_a_burst`]: two thousand idle clients each send a request at once (the
//!   server stopped meanwhile) and fall idle again. Is the memory back?
//! - [`memory_after_a_storm`]: two hundred send one big request each, at once, and leave.
//!   Does the memory they took go back to the system, or only to the allocator?
//! - [`burst_of_clients`]: two hundred new clients at once: in how many turns of its loop
//!   does the server let them in?
//!
//! These watch the server process itself (via [`crate::resources`]), so they start their
//! own servers and skip for someone else's.

use std::io::{self};
use std::sync::Arc;
use std::thread::{self};
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::manifest::Capability;
use crate::probes::checklist::{count, rule, secs, size, Rule, FLOODS};
use crate::probes::ten_thousand_idle::ten_thousand_server;
use crate::probes::{
    broken, check, connect, exchange, expect_status, get, measured, needs_own_server, receive,
    seconds, sending, still_serves, Outcome, Probed, Stop, Target,
};
use crate::probes::{pid, takes_everyone};
use crate::probes::{probe, Module, Probe};
use crate::resources::{self, growth_note, mebibytes};
use crate::server::{Options, Server};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &["burst_of_clients"], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("idle_buffers_given_back", Capability::Basics, idle_buffers_given_back),
    probe("idle_after_a_burst", Capability::Basics, idle_after_a_burst),
    probe("memory_after_a_storm", Capability::Basics, memory_after_a_storm),
    probe("burst_of_clients", Capability::Basics, burst_of_clients),
];

/// [`idle_buffers_given_back`]: how many clients, how big a body each sends, and how much
/// more memory the server may hold once they are all idle. A server that keeps each
/// connection's buffers as its big request grew them holds a megabyte and more per client:
/// +48 to +110 MiB for the 100, as our chapters once did. One that gives them back may
/// still keep a little of each for the next request: two buffers of 64 KiB for 100 clients
/// is 12.5 MiB, measured at +16 to +17 MiB with what the allocator keeps besides (nginx:
/// +1.3 MiB for 500 such clients; our chapters keep none now, see `shared::buffer`). The
/// bound sits between the two kinds.
pub(crate) const ECHO_CLIENTS: usize = 100;
pub(crate) const ECHO_BODY: usize = 1 << 20;
pub(crate) const ECHO_GROWTH_BOUND: u64 = 24 << 20;

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
    let warm = exchange(&server, &crate::probes::post("/echo", b"warm"))?;
    expect_status(&warm, &[200], "POST /echo")?;
    let at_rest = measured(resources::memory(pid), resources::NO_MEMORY)?;

    let body = crate::site::pattern(ECHO_BODY);
    let request = crate::probes::post("/echo", &body);
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
pub(crate) const BURST_CLIENTS: usize = 2000;
pub(crate) const BURST_BODY: usize = 12 * 1024;
pub(crate) const BURST_GROWTH_BOUND: u64 = 4 << 20;
/// That bound shared among the clients, in whole KiB, as the checklist says it.
const BURST_PER_CLIENT: u64 = BURST_GROWTH_BOUND / BURST_CLIENTS as u64 / 1024 * 1024;
/// How many of them connect before they wait for their first answers: well within the
/// kernel's queue of connections the server has not accepted yet (ours ask for 1024).
const BURST_BATCH: usize = 500;
/// How soon after the last answer the memory must be back down: a server gives a buffer
/// back when it has sent the answer, before the client reads it; the margin is for a busy
/// machine.
pub(crate) const GIVEN_BACK_WITHIN: Duration = Duration::from_secs(1);

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
    let request = crate::probes::post("/echo", &body);
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
pub(crate) const STORM_CLIENTS: usize = 200;
pub(crate) const STORM_BODY: usize = 1 << 20;
pub(crate) const STORM_GROWTH_BOUND: u64 = 16 << 20;
pub(crate) const STORM_GIVEN_BACK_WITHIN: Duration = Duration::from_secs(5);
/// A server that serves one client at a time (chapter 1) never holds more than one body:
/// its storm is a short queue, so that the clients at its end need not wait minutes.
pub(crate) const STORM_CLIENTS_ONE_AT_A_TIME: usize = 20;
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
    let request = Arc::new(crate::probes::post("/echo", &body));
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
    let cpu_at_answer = resources::cpu_time(pid);
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
    // For a failure's message: a server still busy never looked idle enough to give back.
    let cpu_meanwhile = match (cpu_at_answer, resources::cpu_time(pid)) {
        (Some(before), Some(after)) => {
            format!("; it used {} of CPU meanwhile", seconds(after.saturating_sub(before)))
        }
        _ => String::new(),
    };
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
         freed was kept (by the allocator?), not given back to the system{cpu_meanwhile}",
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
pub(crate) const BURST_OF: usize = 200;
pub(crate) const BURST_TURNS_BOUND: u64 = 50;
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
    let turns = |server: &Server| crate::probes::stat(server, "loop_turns");
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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("memory_after_a_storm", FLOODS, format!(
            "After one `POST /echo` of {}, alone, {} clients connect ({} where a server serves \
             one at a time), then all at once each sends one, reads its answer and leaves. Within {} of the last answer, the server's resident memory is \
             back within {} of what it was at rest: what a burst took goes back to the system, \
             not only to the allocator (glibc keeps what is freed unless asked: \
             `malloc_trim`).",
            size(STORM_BODY as u64), count(STORM_CLIENTS), count(STORM_CLIENTS_ONE_AT_A_TIME),
            secs(STORM_GIVEN_BACK_WITHIN),
            size(STORM_GROWTH_BOUND))),
        rule("idle_after_a_burst", FLOODS, format!(
            "{} clients connect, each asks `GET /hello` and falls idle (the timeouts are long): \
             that is the baseline. The server is stopped (SIGSTOP), each sends a {} `POST /echo`, \
             it goes on (SIGCONT), and all read their answers and fall idle again: within {}, \
             its resident memory is at most {} over the baseline, about {} a client. An idle \
             connection holds no receive or send buffer. (A server without keep-alive has no \
             idle clients, and passes at once.)",
            count(BURST_CLIENTS), size(BURST_BODY as u64), secs(GIVEN_BACK_WITHIN), size(BURST_GROWTH_BOUND),
            size(BURST_PER_CLIENT))),
        rule("burst_of_clients", FLOODS, format!(
            "The server is stopped (SIGSTOP), {} clients connect and send `GET /hello`, and it \
             goes on: all are answered, and `/stats`' `loop_turns` (0 where there is no loop) \
             grows by at most {} meanwhile: accept the clients a turn finds waiting, not one a \
             turn. (Started with `--threads 1` where that is accepted.)",
            BURST_OF, BURST_TURNS_BOUND)),
        rule("idle_buffers_given_back", FLOODS, format!(
            "{} clients each send a {} `POST /echo`, read the answer, and stay connected, idle: \
             the server's resident memory (`VmRSS`) then grows by at most {} in all, over what it \
             was before they came. Give a connection's buffers back once its request is \
             answered.",
            ECHO_CLIENTS, size(ECHO_BODY as u64), size(ECHO_GROWTH_BOUND))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        size(STORM_BODY as u64),
        count(STORM_CLIENTS),
        count(STORM_CLIENTS_ONE_AT_A_TIME),
        secs(STORM_GIVEN_BACK_WITHIN),
        size(STORM_GROWTH_BOUND),
        count(BURST_CLIENTS),
        size(BURST_BODY as u64),
        secs(GIVEN_BACK_WITHIN),
        size(BURST_GROWTH_BOUND),
        size(BURST_PER_CLIENT),
        BURST_OF.to_string(),
        BURST_TURNS_BOUND.to_string(),
        ECHO_CLIENTS.to_string(),
        size(ECHO_BODY as u64),
        size(ECHO_GROWTH_BOUND),
    ]
}
