//! Small, bounded checks around a scenario: is the server answering at all, and holding
//! thousands of idle connections open against it.
//!
//! Every call here has a deadline. Chapter 1 serves one client at a time, so the first idle
//! connection we open occupies it completely: a probe that waited forever would hang the
//! whole benchmark. Instead it reports "blocked", which is the lesson of chapter 1.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// How long a single probe request may take before the server counts as blocked.
pub const PROBE_LIMIT: Duration = Duration::from_secs(2);

/// How long opening the idle connections may take in all, for a server that keeps
/// accepting, however slowly.
const IDLE_SETUP_LIMIT: Duration = Duration::from_secs(30);

/// One `GET` on its own connection, with a deadline. Returns the status and body.
pub fn get(address: SocketAddr, path: &str, limit: Duration) -> Result<(u16, String), String> {
    request(address, path, 0, limit)
}

/// One request on its own connection, with a deadline: `GET`, or with `body` bytes a
/// `POST` (as the echo scenario sends). Returns the status and body.
pub fn request(
    address: SocketAddr, path: &str, body: usize, limit: Duration,
) -> Result<(u16, String), String> {
    let deadline = Instant::now() + limit;
    let mut stream =
        TcpStream::connect_timeout(&address, limit).map_err(|error| format!("connect: {error}"))?;
    let request = if body == 0 {
        format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")
    } else {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\
             Content-Length: {body}\r\n\r\n{}",
            "x".repeat(body)
        )
    };
    stream
        .set_write_timeout(Some(limit))
        .and_then(|()| stream.write_all(request.as_bytes()))
        .map_err(|error| format!("send: {error}"))?;
    // `Connection: close`: the server closes after the answer, so read to the end.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no answer within {} s", limit.as_secs_f64()));
        }
        stream.set_read_timeout(Some(left)).map_err(|error| error.to_string())?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(count) => answer.extend_from_slice(&chunk[..count]),
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            // A read timeout shows up as WouldBlock (EAGAIN) on Linux, TimedOut elsewhere.
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(format!("no answer within {} s", limit.as_secs_f64()))
            }
            Err(error) if answer.is_empty() => return Err(format!("read: {error}")),
            Err(_) => break, // a reset after the answer arrived: keep what we have
        }
    }
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no complete answer")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or("no status line")?;
    Ok((status, body.to_string()))
}

/// How many connections the server says it has open: a chapter's `/stats` has
/// `connections_open N`, nginx's status page `Active connections: N`.
pub fn connections_open(address: SocketAddr) -> Result<u64, String> {
    let (status, body) = get(address, "/stats", PROBE_LIMIT)?;
    if status != 200 {
        return Err(format!("/stats answered {status}"));
    }
    body.lines()
        .find_map(|line| {
            line.strip_prefix("connections_open ")
                .or_else(|| line.strip_prefix("Active connections: "))
        })
        .and_then(|count| count.trim().parse().ok())
        .ok_or_else(|| "/stats does not say how many connections are open".into())
}

/// Why the idle connections could not all be opened.
pub enum IdleError {
    /// The server could not take them: the scenario's result.
    Blocked(String),
    /// The harness itself could not open them (out of descriptors): a failed run.
    OurLimit(String),
}

// ANCHOR: idle
/// Opens `count` connections that send nothing, and waits until the server has accepted
/// them (so they are in its `poll` set, not just in the kernel's backlog). An error means
/// the server could not take them: that is the scenario's result, "blocked". A server
/// without `/stats` (`has_stats` false) is only checked for answering at all.
pub fn open_idle(
    address: SocketAddr, count: usize, has_stats: bool,
) -> Result<Vec<TcpStream>, IdleError> {
    let mut idle = Vec::with_capacity(count);
    let deadline = Instant::now() + IDLE_SETUP_LIMIT;
    while idle.len() < count {
        // Once the kernel's backlog for the listener is full, connecting waits for the
        // server to accept. One second is plenty for a server that is accepting.
        match TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
            Ok(stream) => idle.push(stream),
            // EMFILE, ENFILE: *we* are out of descriptors, not the server. Waiting would
            // not help; the limit has to be raised before the run.
            Err(error) if matches!(error.raw_os_error(), Some(23 | 24)) => {
                return Err(IdleError::OurLimit(format!(
                    "the harness ran out of file descriptors after {} connections ({error}); \
                     raise the limit first, e.g. `ulimit -n 20000`",
                    idle.len()
                )))
            }
            Err(error) => {
                // Stuck for good (chapter 1, inside its first idle client), or only slow
                // to accept (a `poll` loop with thousands of sockets)? Ask it something.
                let opened = idle.len();
                if Instant::now() >= deadline {
                    return Err(IdleError::Blocked(format!(
                        "could open only {opened} of {count} idle connections in {} s: {error}",
                        IDLE_SETUP_LIMIT.as_secs()
                    )));
                }
                if let Err(why) = answers(address, has_stats) {
                    return Err(IdleError::Blocked(format!(
                        "could open only {opened} of {count} idle connections ({error}), \
                         and the server does not answer: {why}"
                    )));
                }
            }
        }
    }
    if !has_stats {
        answers(address, has_stats).map_err(IdleError::Blocked)?;
        return Ok(idle);
    }
    // The server reports its open connections (our `/stats` request may count too).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match connections_open(address) {
            Ok(open) if open as usize >= count => return Ok(idle),
            Ok(_) => {}
            Err(error) => {
                return Err(IdleError::Blocked(format!(
                    "with {count} idle connections open: {error}"
                )))
            }
        }
        if Instant::now() >= deadline {
            return Err(IdleError::Blocked(format!(
                "did not accept {count} idle connections within 10 s"
            )));
        }
        thread::sleep(Duration::from_millis(20));
    }
}
// ANCHOR_END: idle

/// Does the server answer at all? `/stats` where it has one, else `/hello`.
fn answers(address: SocketAddr, has_stats: bool) -> Result<(), String> {
    if has_stats {
        connections_open(address).map(|_| ())
    } else {
        get(address, "/hello", PROBE_LIMIT).map(|_| ())
    }
}
