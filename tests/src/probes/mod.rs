//! The probes: one function per thing the suite checks, shared by `cargo test` and the
//! runner.
//!
//! A probe only *observes*. It starts a server (or is given one), pokes it, and reports:
//!
//! - `Ok(Outcome::Works)`: the chapter has the capability;
//! - `Ok(Outcome::Lacks(seen))`: it lacks it, *in the way a chapter without it must*:
//!   the `/hello` waited behind the idle client, and was answered the moment that client
//!   left; SIGTERM killed the process instead of letting it exit 0. `seen` says what
//!   happened;
//! - `Err(Stop::Broken(what))`: anything else: a wrong status, a missing header, a crash,
//!   a server that stopped answering. Always a failure, whatever the manifest says;
//! - `Err(Stop::Skipped(why))`: the probe cannot run here (it needs to start the server
//!   itself, and was pointed at someone else's).
//!
//! Whether the outcome is *good* is not the probe's business: the [`harness`]
//! compares it with the manifest.
//!
//! [`harness`]: crate::harness

mod bad_input;
pub mod checklist;
mod concurrency;
mod cores;
mod corpus;
mod departures;
mod faults;
mod floods;
mod routes;

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::chapters::Chapter;
use crate::client::{show, Client, Ending, ReadError, Response, CONNECT_TIMEOUT};
use crate::kernel;
use crate::manifest::Capability::{
    Basics, BoundedDownload, Departure, Flood, GracefulShutdown, IdleClient, KeepAlive,
    MoreThanOneCore, SleepAndUpstream, SlowDisk, SlowReader, Slowloris, TenThousandIdle, Timeouts,
};
use crate::manifest::{self, Capability, Expect};
use crate::server::{Options, Program, Server};
use crate::site::{first_difference, Site};
use crate::upstream::Upstream;

/// What a probe saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Works,
    /// The capability is missing, in the expected way; what was seen.
    Lacks(String),
}

/// Why a probe stopped before it could say [`Outcome`].
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// Something is wrong that no chapter may get wrong.
    Broken(String),
    /// The probe cannot run against this target.
    Skipped(&'static str),
}

pub type Probed = Result<Outcome, Stop>;

/// One check, run against every chapter.
pub struct Probe {
    /// The test's name: `cargo test -p suite hello` runs this probe on every chapter.
    pub name: &'static str,
    /// The manifest row this probe checks.
    pub capability: Capability,
    pub run: fn(&Target) -> Probed,
}

// ANCHOR: probes
/// Every probe, in the order the runner reports them. tests/suite.rs has one test per
/// entry (and a test that checks the two lists agree).
#[rustfmt::skip] // a table: one probe per line
pub const PROBES: &[Probe] = &[
    // The command line, routes and statuses.
    probe("command_line", Basics, routes::command_line),
    probe("ipv6_host", Basics, routes::ipv6_host),
    probe("index_page", Basics, routes::index_page),
    probe("hello", Basics, routes::hello),
    probe("sleep_route", Basics, routes::sleep_route),
    probe("stats_route", Basics, routes::stats_route),
    probe("head_requests", Basics, routes::head_requests),
    probe("not_found", Basics, routes::not_found),
    probe("method_not_allowed", Basics, routes::method_not_allowed),
    probe("unknown_method", Basics, routes::unknown_method),
    probe("echo", Basics, routes::echo),
    probe("echo_needs_length", Basics, routes::echo_needs_length),
    probe("echo_too_large", Basics, routes::echo_too_large),
    probe("files", Basics, routes::files),
    probe("big_file_intact", Basics, routes::big_file_intact),
    probe("path_traversal", Basics, routes::path_traversal),
    probe("fifo_under_root", Basics, routes::fifo_under_root),
    probe("upstream_relay", Basics, routes::upstream_relay),
    probe("upstream_errors", Basics, routes::upstream_errors),
    probe("upstream_timeout", Basics, routes::upstream_timeout),
    // Bad input, odd clients.
    probe("conformance_corpus", Basics, corpus::conformance_corpus),
    probe("trickled_request", Basics, bad_input::trickled_request),
    probe("body_split_across_writes", Basics, bad_input::body_split_across_writes),
    probe("client_resets_mid_response", Basics, bad_input::client_resets_mid_response),
    probe("clients_that_vanish", Basics, bad_input::clients_that_vanish),
    probe("serves_after_abuse", Basics, bad_input::serves_after_abuse),
    // Faults and floods: the contract's promise under attack.
    probe("half_close", Basics, faults::half_close),
    probe("urgent_byte", Basics, faults::urgent_byte),
    probe("file_removed_mid_response", Basics, faults::file_removed_mid_response),
    probe("stray_signals", Basics, faults::stray_signals),
    probe("closed_stderr", Basics, faults::closed_stderr),
    probe("unread_stderr", Basics, faults::unread_stderr),
    probe("descriptor_exhaustion", Basics, floods::descriptor_exhaustion),
    probe("pipelined_without_reading", Basics, floods::pipelined_without_reading),
    probe("idle_buffers_given_back", Basics, floods::idle_buffers_given_back),
    probe("idle_after_a_burst", Basics, floods::idle_after_a_burst),
    probe("memory_after_a_storm", Basics, floods::memory_after_a_storm),
    probe("burst_of_clients", Basics, floods::burst_of_clients),
    // One row each of the capability table.
    probe("idle_client", IdleClient, concurrency::idle_client),
    probe("half_sent_request", IdleClient, concurrency::half_sent_request),
    probe("ten_thousand_idle", IdleClient, floods::ten_thousand_idle),
    probe("slow_reader", SlowReader, concurrency::slow_reader),
    probe("keep_alive", KeepAlive, concurrency::keep_alive),
    probe("pipelining", KeepAlive, concurrency::pipelining),
    probe("pipelined_flood", Flood, floods::pipelined_flood),
    probe("flood_behind_a_wait", Flood, floods::flood_behind_a_wait),
    probe("graceful_shutdown", GracefulShutdown, concurrency::graceful_shutdown),
    probe("prompt_shutdown", GracefulShutdown, concurrency::prompt_shutdown),
    probe("sleep_elsewhere", SleepAndUpstream, concurrency::sleep_elsewhere),
    probe("slow_upstream", SleepAndUpstream, concurrency::slow_upstream),
    probe("answers_as_ready", SleepAndUpstream, concurrency::answers_as_ready),
    probe("departing_clients", Departure, departures::departing_clients),
    probe("header_timeout", Timeouts, concurrency::header_timeout),
    probe("keep_alive_timeout", Timeouts, concurrency::keep_alive_timeout),
    probe("send_timeout", Timeouts, concurrency::send_timeout),
    probe("waits_without_spinning", Timeouts, concurrency::waits_without_spinning),
    probe("slowloris", Slowloris, floods::slowloris),
    probe("slow_disk", SlowDisk, concurrency::slow_disk),
    probe("big_download_memory", BoundedDownload, floods::big_download_memory),
    probe("ten_thousand_idle_slowdown", TenThousandIdle, floods::ten_thousand_idle_slowdown),
    probe("spread_over_loops", MoreThanOneCore, cores::spread_over_loops),
];
// ANCHOR_END: probes

/// The probes that start a server with more than one loop (chapter 9 on) as one loop,
/// `--threads 1`: what they check is how one loop shares its turns, and with two loops a
/// client that lands on the loop the others leave alone is served by luck. The book
/// lists them from here (`facts.rs`); a test checks the list against the probes' code.
pub const ON_ONE_LOOP: &[&str] = &[
    "pipelined_without_reading",
    "burst_of_clients",
    "pipelined_flood",
    "flood_behind_a_wait",
    "departing_clients",
];

const fn probe(name: &'static str, capability: Capability, run: fn(&Target) -> Probed) -> Probe {
    Probe { name, capability, run }
}

/// The probe called `name`.
pub fn find(name: &str) -> Option<&'static Probe> {
    PROBES.iter().find(|probe| probe.name == name)
}

/// Where a probe gets its servers from.
pub enum Launch {
    /// Start the chapter's program (or a reader's, the runner's `--command`), a fresh
    /// process for each server the probe asks for.
    Start { program: Program },
    /// A server someone else started; probes that need their own skip.
    External { address: SocketAddr },
}

/// What a probe runs against: a chapter, and how to get a server of it.
pub struct Target {
    pub chapter: &'static Chapter,
    pub launch: Launch,
}

impl Target {
    /// A server with the default command line: a fresh one of our own, or the external
    /// server.
    pub fn server(&self) -> Result<Server, Stop> {
        self.start(Options::default())
    }

    /// A fresh server started with `options`. Skips for an external server, which was
    /// started with whatever its owner chose.
    pub fn start(&self, options: Options) -> Result<Server, Stop> {
        match &self.launch {
            Launch::Start { program } => {
                Server::start(self.chapter, program, &options).map_err(|error| {
                    // A server that needs what this machine lacks (chapter 10: io_uring,
                    // which some kernels and containers turn off, and only Linux has)
                    // cannot be checked here. That is no failure of the server: every
                    // check says so, and why.
                    let refused = ["io_uring is not available", "needs Linux's io_uring"];
                    if refused.iter().any(|refusal| error.contains(refusal)) {
                        Stop::Skipped(NO_IO_URING)
                    } else {
                        Stop::Broken(error)
                    }
                })
            }
            Launch::External { address } if options.is_default() => {
                Ok(Server::external(self.chapter, *address))
            }
            Launch::External { .. } => Err(Stop::Skipped(NEEDS_OWN_SERVER)),
        }
    }
}

/// Why every check of a chapter that needs io_uring skips on a machine without it.
pub const NO_IO_URING: &str = "the server says io_uring is not available on this machine \
    (turned off, forbidden, too old a kernel, or not Linux): the suite cannot check it here";

/// The runner's note for a probe that cannot use someone else's server.
pub const NEEDS_OWN_SERVER: &str = "needs to start the server";

/// Skips a probe that must start its servers itself (with a `--root` of its own, say,
/// or to signal them) when it is pointed at someone else's.
pub fn needs_own_server(target: &Target) -> Result<(), Stop> {
    match target.launch {
        Launch::Start { .. } => Ok(()),
        Launch::External { .. } => Err(Stop::Skipped(NEEDS_OWN_SERVER)),
    }
}

/// A fresh site for `--root` (see [`Site`]), with a `big.bin` of `big` bytes if not 0.
pub fn make_site(big: usize) -> Result<Site, Stop> {
    Site::create(big).map_err(|error| broken(format!("cannot make a site: {error}")))
}

/// Starts a server on a fresh site (`big` as for [`make_site`]), or skips for an
/// external server.
pub fn with_site(target: &Target, big: usize) -> Result<(Server, Site), Stop> {
    needs_own_server(target)?;
    let site = make_site(big)?;
    let server = target.start(Options { root: Some(site.root.clone()), ..Options::default() })?;
    Ok((server, site))
}

/// Starts a server with `--upstream` pointing at a fresh [`Upstream`], or skips for an
/// external server.
pub fn with_upstream(target: &Target) -> Result<(Server, Upstream), Stop> {
    needs_own_server(target)?;
    let upstream =
        Upstream::start().map_err(|error| broken(format!("cannot start the upstream: {error}")))?;
    let server =
        target.start(Options { upstream: Some(upstream.address), ..Options::default() })?;
    Ok((server, upstream))
}

/// " (it has no --header-timeout flag)" when the chapter rejected the flags we tried.
pub fn dropped_note(server: &Server) -> String {
    if server.dropped_flags.is_empty() {
        String::new()
    } else {
        format!(" (it has no {} flag)", server.dropped_flags.join(" or "))
    }
}

/// Returns `Err(Stop::Broken(...))` from the probe unless `condition` holds.
macro_rules! check {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err($crate::probes::Stop::Broken(format!($($message)+)));
        }
    };
}
use check;

/// `Stop::Broken` with a message, for `map_err` and `ok_or_else`.
pub fn broken(message: impl Into<String>) -> Stop {
    Stop::Broken(message.into())
}

/// How long a probe waits for an answer that should come at once. Generous, because
/// machines running tests are often busy; a deadline only ends a wait that has failed.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// "Served promptly": how long a client may wait while another client holds a
/// connection. Coarse on purpose: a chapter that has the capability answers in a
/// millisecond or two, one that lacks it never answers until the other client lets go.
/// The margin is for machines busy with other work (a parallel build, other tests).
pub const PROMPTLY: Duration = Duration::from_secs(2);

/// How long a big body (a file of many MiB, read at full speed) may take to arrive whole:
/// [`PATIENCE`] four times over, for a busy machine.
pub const WHOLE_BODY_WITHIN: Duration = Duration::from_secs(20);

fn soon() -> Instant {
    Instant::now() + PATIENCE
}

/// The body of `GET /hello`.
pub const HELLO: &[u8] = b"Hello, world!\n";

/// `GET path` as a plain HTTP/1.1 client sends it.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: suite\r\n\r\n").into_bytes()
}

/// A request of any method that asks the server to close afterwards.
pub fn request_and_close(method: &str, path: &str) -> Vec<u8> {
    format!("{method} {path} HTTP/1.1\r\nHost: suite\r\nConnection: close\r\n\r\n").into_bytes()
}

/// `POST path` with `body` and its `Content-Length`.
pub fn post(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request =
        format!("POST {path} HTTP/1.1\r\nHost: suite\r\nContent-Length: {}\r\n\r\n", body.len())
            .into_bytes();
    request.extend_from_slice(body);
    request
}

/// The first line of a request, to name it in messages.
pub fn first_line(request: &[u8]) -> String {
    let end =
        request.iter().position(|&byte| byte == b'\r' || byte == b'\n').unwrap_or(request.len());
    show(&request[..end.min(100)])
}

/// A new connection to `server`.
pub fn connect(server: &Server) -> Result<Client, Stop> {
    Client::connect(server.address).map_err(|error| {
        // How long it waited, where it gave up waiting: "connection timed out after 2 s".
        let after = match error.kind() {
            io::ErrorKind::TimedOut => format!(" after {} s", CONNECT_TIMEOUT.as_secs()),
            _ => String::new(),
        };
        broken(format!(
            "cannot connect to {} at {}: {error}{after}{}",
            server.label,
            server.address,
            server.stderr_note()
        ))
    })
}

/// Sends `request` (all of it) on `client`; a failure stops the probe, naming `what`.
pub fn sending(client: &mut Client, request: &[u8], what: &str) -> Result<(), Stop> {
    client.send(request).map_err(|error| {
        // Most often the server answered before it had read everything (a 404 for a route
        // it lacks, say) and closed: then its answer says more than the broken pipe.
        let deadline = Instant::now() + Duration::from_millis(200);
        let answered = match client.read_response(deadline, false) {
            Ok(response) => format!(" (it had answered {} and closed)", response.summary()),
            Err(_) => String::new(),
        };
        broken(format!("{what}: sending failed: {error}{answered}"))
    })
}

/// Sends `request` on a new connection and reads the answer (see [`receive`]).
pub fn exchange(server: &Server, request: &[u8]) -> Result<Response, Stop> {
    let mut client = connect(server)?;
    let what = first_line(request);
    sending(&mut client, request, &what)?;
    receive(&mut client, server, request.starts_with(b"HEAD "), &what)
}

/// Leaves abruptly: closes `client`'s connection with a reset (RST) instead of the usual
/// goodbye (FIN), as a client does that crashes or loses its network. `SO_LINGER` with a
/// zero timeout tells the kernel to throw away whatever is unsent and reset at the close.
/// A server learns of it only if it is looking at the socket: that is what the departure
/// probes check.
pub fn reset(client: Client, what: &str) -> Result<(), Stop> {
    socket2::SockRef::from(client.stream())
        .set_linger(Some(Duration::ZERO))
        .map_err(|error| broken(format!("{what}: cannot set SO_LINGER to reset: {error}")))?;
    drop(client); // the close, which the zero linger turns into a reset
    Ok(())
}

/// Waits (up to [`PATIENCE`]) until the server has read everything `client` sent so
/// far (see [`kernel::wait_until_read`]). A probe that needs that order of events to
/// mean anything stops, broken, if the kernel shows the bytes still unread at the
/// deadline, and skips where this system shows no socket queues at all. Where the kernel
/// does not list this socket (a server on another machine), it goes on and relies on timing.
pub fn until_read(client: &Client, what: &str) -> Result<(), Stop> {
    needs_socket_queues()?;
    match kernel::wait_until_read(client.stream(), PATIENCE) {
        Some(false) => Err(broken(format!(
            "{what}: the server had not read it {} s later, by the kernel's count, so the \
             probe cannot go on",
            PATIENCE.as_secs()
        ))),
        Some(true) | None => Ok(()),
    }
}

/// Waits (up to [`PATIENCE`]) until the server has accepted every connection made to it
/// so far (see [`kernel::wait_until_accepted`]); as [`until_read`] otherwise.
pub fn until_accepted(server: &Server, what: &str) -> Result<(), Stop> {
    needs_socket_queues()?;
    match kernel::wait_until_accepted(server.address, PATIENCE) {
        Some(false) => Err(broken(format!(
            "{what}: the server had not accepted it {} s later, by the kernel's count, so \
             the probe cannot go on",
            PATIENCE.as_secs()
        ))),
        Some(true) | None => Ok(()),
    }
}

/// A measurement this system cannot make (`None`, see [`crate::resources`]) skips the
/// probe, in one line that names what is `missing`: never taken for a pass, nor a failure.
pub fn measured<T>(value: Option<T>, missing: &'static str) -> Result<T, Stop> {
    value.ok_or(Stop::Skipped(missing))
}

/// Skips, naming the missing measurement, where this system shows no socket queues.
pub fn needs_socket_queues() -> Result<(), Stop> {
    match kernel::can_list_sockets() {
        true => Ok(()),
        false => Err(Stop::Skipped(kernel::NO_SOCKET_QUEUES)),
    }
}

/// The number on the `key N` line of a `/stats` answer.
pub fn stats_value(response: &Response, key: &str) -> Option<u64> {
    response.text().lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

/// Asks `/stats` on a new connection (which counts itself) for its `key` line's number.
pub fn stat(server: &Server, key: &str) -> Result<u64, Stop> {
    let stats = exchange(server, &get("/stats"))?;
    expect_status(&stats, &[200], "GET /stats")?;
    stats_value(&stats, key).ok_or_else(|| broken(format!("GET /stats has no {key} line")))
}

// ANCHOR: receive
/// Reads one response and holds it to the rules every response must follow: a
/// `Content-Length`, a `Content-Type` when there is a body, `Server: chNN-name` (any one
/// name from a reader's server), and
/// `Connection: close` whenever the server closes (then the connection must really end).
pub fn receive(
    client: &mut Client, server: &Server, to_head_request: bool, what: &str,
) -> Result<Response, Stop> {
    let response = client
        .read_response(soon(), to_head_request)
        .map_err(|error| broken(format!("{what}: {error}{}", server.stderr_note())))?;
    check_framing(&response, server, to_head_request)
        .map_err(|error| broken(format!("{what}: answered {}, but {error}", response.summary())))?;
    if response.says_close() {
        match client.wait_for_close(soon()) {
            Ending::Closed => {}
            Ending::StillOpen => {
                return Err(broken(format!(
                    "{what}: the response said Connection: close, but the connection was \
                     still open {} s later",
                    PATIENCE.as_secs()
                )))
            }
            Ending::MoreBytes(bytes) => {
                let hint = if to_head_request {
                    " (an answer to HEAD has no body, whatever its Content-Length: is this one?)"
                } else {
                    ""
                };
                return Err(broken(format!(
                    "{what}: the response ({}) said Connection: close, then came more bytes: \
                     {}{hint}",
                    response.summary(),
                    show(&bytes)
                )));
            }
        }
    } else if client.closed_already() {
        return Err(broken(format!(
            "{what}: answered {} and closed the connection without saying Connection: close",
            response.summary()
        )));
    }
    Ok(response)
}
// ANCHOR_END: receive

/// The header rules of the contract (the connection rule is in [`receive`]).
fn check_framing(
    response: &Response, server: &Server, to_head_request: bool,
) -> Result<(), String> {
    // Every response names its server. Ours must say which chapter they are; a reader's
    // server (the runner's `--command`) may call itself anything.
    match (response.header_count("server"), response.header("server"), server.server_name) {
        (1, Some(value), Some(name)) if value == name => {}
        (1, Some(value), None) if !value.trim().is_empty() => {}
        (0, _, Some(name)) => {
            return Err(format!("it has no Server header (every response says `Server: {name}`)"))
        }
        (0, _, None) => {
            return Err("it has no Server header (every response names its server, any name)".into())
        }
        (count, value, Some(name)) => {
            return Err(format!("its Server header is {value:?} ({count} of them), not {name:?}"))
        }
        (count, value, None) => {
            return Err(format!("its Server header is {value:?} ({count} of them): one, not empty"))
        }
    }
    let has_body = if to_head_request {
        // The body GET would send: its length is all HEAD shows of it.
        response.header("content-length").is_some_and(|length| length != "0")
    } else {
        !response.body.is_empty()
    };
    let content_type = response.header("content-type").unwrap_or_default();
    if has_body && content_type.trim().is_empty() {
        return Err("it has a body and no Content-Type".into());
    }
    // A chapter without keep-alive closes after every response, so every response must
    // say so. (Without this rule we could only catch a silent close by luck: see
    // `Client::closed_already`.)
    let keeps_alive = manifest::expectation(Capability::KeepAlive, server.chapter) == Expect::Yes;
    if !keeps_alive && !response.says_close() {
        return Err(format!(
            "it lacks Connection: close, and {} (says the manifest) has no keep-alive: it \
             closes every connection after one response",
            server.chapter.short_name()
        ));
    }
    Ok(())
}

/// Fails unless `response` has one of the `allowed` statuses.
pub fn expect_status(response: &Response, allowed: &[u16], what: &str) -> Result<(), Stop> {
    check!(
        allowed.contains(&response.status),
        "{what}: expected {}, got {}",
        allowed.iter().map(u16::to_string).collect::<Vec<_>>().join(" or "),
        response.summary()
    );
    Ok(())
}

/// The end of every probe that was rough with a server: is it still alive and serving?
pub fn still_serves(server: &mut Server, after: &str) -> Result<(), Stop> {
    if let Some(status) = server.exit_status() {
        return Err(broken(format!(
            "after {after}, the server process ended ({status}){}",
            server.stderr_note()
        )));
    }
    let response = exchange(server, &get("/hello")).map_err(|stop| match stop {
        Stop::Broken(what) => broken(format!("after {after}, GET /hello failed: {what}")),
        skipped => skipped,
    })?;
    expect_status(&response, &[200], &format!("GET /hello after {after}"))
}

/// What happened to a `/hello` sent while another client kept the server busy.
pub enum Meanwhile {
    /// Answered within [`PROMPTLY`].
    Answered,
    /// Not answered in time; the request is still out on `client`, sent at `sent`.
    Waiting { client: Client, sent: Instant },
}

// ANCHOR: meanwhile
/// The heart of most capability probes: while someone else keeps the server busy, does a
/// `GET /hello` from a new client get its answer promptly?
pub fn hello_meanwhile(server: &Server) -> Result<Meanwhile, Stop> {
    let mut client = connect(server)?;
    let sent = Instant::now();
    sending(&mut client, &get("/hello"), "GET /hello from another client")?;
    match client.read_response(sent + PROMPTLY, false) {
        Ok(response) => {
            expect_status(&response, &[200], "GET /hello from another client")?;
            Ok(Meanwhile::Answered)
        }
        Err(ReadError::TimedOut { .. }) => Ok(Meanwhile::Waiting { client, sent }),
        Err(error) => {
            Err(broken(format!("GET /hello from another client: {error}{}", server.stderr_note())))
        }
    }
}
// ANCHOR_END: meanwhile

/// After the busy client let go: the `/hello` that waited must now be answered. That is
/// what separates "waited its turn" (the expected limitation) from "the server is stuck".
/// Returns how long it waited in all.
pub fn finish_hello(server: &Server, mut client: Client, sent: Instant) -> Result<Duration, Stop> {
    let response = receive(&mut client, server, false, "the GET /hello that had to wait")?;
    expect_status(&response, &[200], "the GET /hello that had to wait")?;
    Ok(sent.elapsed())
}

/// Starts a GET /files/big.bin and reads its head and the first bytes of its body, so
/// the response is known to be in flight. Returns the client and how much body it read.
pub fn start_big_download(server: &Server, site: &Site) -> Result<(Client, usize), Stop> {
    let what = "GET /files/big.bin";
    let mut client = connect(server)?;
    sending(&mut client, &get("/files/big.bin"), what)?;
    let head = client
        .read_head(Instant::now() + PATIENCE, false)
        .map_err(|error| broken(format!("{what}: {error}")))?;
    expect_status(&head.response, &[200], what)?;
    check!(
        head.body_length == site.big.len(),
        "{what}: Content-Length {}, expected {}",
        head.body_length,
        site.big.len()
    );
    let first = client
        .read_some(1024, Instant::now() + PATIENCE)
        .map_err(|error| broken(format!("{what}: {error}")))?;
    check!(first[..] == site.big[..first.len()], "{what}: the body's first bytes are wrong");
    Ok((client, first.len()))
}

/// Reads the rest of a big file response (`already` bytes of its body were read) and
/// checks it is intact.
pub fn drain(client: &mut Client, site: &Site, already: usize, what: &str) -> Result<(), Stop> {
    let rest = client
        .read_body(site.big.len() - already, Instant::now() + WHOLE_BODY_WITHIN)
        .map_err(|error| broken(format!("{what}: {error}")))?;
    if let Some(at) = first_difference(&site.big[already..], &rest) {
        return Err(broken(format!("{what}: the body differs from byte {} on", at + already)));
    }
    Ok(())
}

/// "1.52 s", for messages.
pub fn seconds(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chapters;
    use crate::harness::{self, Verdict, Whose};
    use crate::resources;

    /// What the suite says of a check whose measurement this system lacks. Simulated here
    /// (Linux lacks none) by a measurement that comes back with nothing, as `lsof` and
    /// `procstat` both missing would on a BSD: a skip, in one line that names it.
    #[test]
    fn a_measurement_that_returns_nothing_is_a_skip_said_in_one_line() {
        let descriptors: Option<usize> = None;
        let probed = measured(descriptors, resources::NO_DESCRIPTORS).map(|_| Outcome::Works);
        assert_eq!(probed, Err(Stop::Skipped(resources::NO_DESCRIPTORS)));
        let chapter = chapters::chapter(2).expect("chapter 2");
        let probe = find("descriptor_exhaustion").expect("the probe");
        let verdict = harness::judge(chapter, probe, probed, Whose::Ours);
        assert_eq!(verdict, Verdict::Skipped(resources::NO_DESCRIPTORS.to_string()));
        let runner = harness::describe(chapter, probe, &verdict);
        let cargo_test = harness::skipped_line(chapter, probe, resources::NO_DESCRIPTORS);
        for line in [&runner, &cargo_test] {
            assert!(!line.contains('\n'), "one line: {line}");
            assert!(line.contains("missing measurement") && line.contains("open descriptors"));
        }
        println!("(simulated) {cargo_test}"); // seen with --nocapture
    }
}
