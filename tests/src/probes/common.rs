//! What many probes share: how they talk to a server (connect, send, receive and hold
//! every answer to the contract's framing rules, ask `/stats`), the margins they allow a
//! busy machine ([`PATIENCE`], [`PROMPTLY`]), the shape of most capability probes (a
//! `GET /hello` from another client while one keeps the server busy), and a look at the
//! server process (its pid, whether it still runs, its descriptors).

use std::io;
use std::thread;
use std::time::{Duration, Instant};

use crate::client::{show, Client, Ending, ReadError, Response, CONNECT_TIMEOUT};
use crate::kernel;
use crate::manifest::{self, Capability, Expect};
use crate::probes::Stop;
use crate::resources;
use crate::server::Server;
use crate::site::{first_difference, Site};

/// Returns `Err(Stop::Broken(...))` from the probe unless `condition` holds.
macro_rules! check {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err($crate::probes::Stop::Broken(format!($($message)+)));
        }
    };
}
pub(crate) use check;

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

pub(crate) fn pid(server: &Server) -> Result<u32, Stop> {
    measured(server.pid(), "needs the process id of a server the suite started and that runs")
}

/// Does this chapter take in every client that comes (non-blocking, chapter 2 on), or
/// one at a time (chapter 1)? A flood looks different to each: only the first kind can
/// run out of descriptors.
pub(crate) fn takes_everyone(server: &Server) -> bool {
    manifest::expectation(Capability::IdleClient, server.chapter) == Expect::Yes
}

/// Fails, saying so, if the server process has ended: its descriptors would count as none,
/// and the message that follows would blame the wrong thing.
pub(crate) fn still_running(server: &mut Server, during: &str) -> Result<(), Stop> {
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
pub(crate) fn wait_for_descriptors(
    pid: u32, count: usize, timeout: Duration,
) -> Result<usize, Stop> {
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
pub(crate) const BACKLOG_NOTE: &str =
    " (while the server accepts no one, the kernel queues only as many \
     connections as its listen backlog: is that small? ours is 1024)";

/// Every source file of the probes (`tests/src/probes/`, `basics/` included) with its
/// text, for the tests that read them: the flags they pass, the probes that ask for one
/// loop, the numbers their texts quote.
#[cfg(test)]
pub(crate) fn sources() -> Vec<(std::path::PathBuf, String)> {
    let mut folders = vec![crate::chapters::workspace_root().join("tests/src/probes")];
    let mut sources = Vec::new();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder of probes").flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let source = std::fs::read_to_string(&path).expect("a probe's source");
                sources.push((path, source));
            }
        }
    }
    sources.sort();
    sources
}

/// The constants of this file that every module's texts may quote (see `Module::quoted`).
#[cfg(test)]
pub(crate) fn quoted() -> Vec<String> {
    use crate::probes::checklist::secs;
    use crate::server::{FIRST_START_TIMEOUT, START_TIMEOUT};
    [PATIENCE, PROMPTLY, WHOLE_BODY_WITHIN, START_TIMEOUT, FIRST_START_TIMEOUT].map(secs).to_vec()
}
