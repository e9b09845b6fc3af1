//! A tiny upstream server, run on a thread inside the test process, for `/upstream/`.
//!
//! The chapter under test is started with `--upstream` pointing here. The path the
//! chapter asks for chooses what this server does, so one upstream covers every case:
//!
//! | path | answer |
//! |---|---|
//! | `/teapot` | 418 with a body and its own `Content-Type` (is the status relayed?) |
//! | `/target?...` | 200, the body is the request target it received (path and query) |
//! | `/until-close` | 200 without `Content-Length`: the body ends when we close |
//! | `/garbage` | not HTTP at all (the chapter must answer 502) |
//! | `/continue` | `100 Continue`, then 200 with a body (the 100 must be skipped) |
//! | `/switching` | `101 Switching Protocols` (the chapter must answer 502) |
//! | `/no-content` | 204 with a `Content-Length` and a body shaped like a second answer |
//! | `/not-modified` | 304, likewise (neither may reach the client: they end at their head) |
//! | `/endless-head` | 16 MiB of response head without its blank line (502, and quickly) |
//! | `/slow?ms=N` | 200 after N ms |
//! | `/hang` | nothing, until the test ends (the chapter must answer 504 after 5 s) |
//! | anything else | 200 `hello from upstream\n` |
//!
//! Each connection gets its own thread, so the upstream is never the bottleneck.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The body of a plain answer.
pub const HELLO: &str = "hello from upstream\n";
/// The body of `/teapot`.
pub const TEAPOT: &str = "short and stout\n";
/// The body of `/continue`'s final answer.
pub const CONTINUED: &str = "the final answer\n";
/// What `/no-content` and `/not-modified` send as a body they must not have: a whole
/// response of its own. A chapter that relayed it would answer its client's next request
/// with this, from no one.
pub const SMUGGLED: &str = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
/// How much `/endless-head` sends.
const ENDLESS: usize = 16 * 1024 * 1024;

/// Set when the test is done with the upstream; wakes every waiting connection.
#[derive(Default)]
struct Stopped {
    flag: Mutex<bool>,
    changed: Condvar,
}

impl Stopped {
    /// Waits until stopped or `timeout` passes; says whether we were stopped.
    fn wait(&self, timeout: Duration) -> bool {
        let flag = self.flag.lock().unwrap_or_else(|poison| poison.into_inner());
        let (flag, _) = self
            .changed
            .wait_timeout_while(flag, timeout, |stopped| !*stopped)
            .unwrap_or_else(|poison| poison.into_inner());
        *flag
    }

    fn is_set(&self) -> bool {
        *self.flag.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

/// The running upstream. Dropping it stops it.
pub struct Upstream {
    pub address: SocketAddr,
    stopped: Arc<Stopped>,
    requests: Receiver<String>,
    acceptor: Option<JoinHandle<()>>,
}

impl Upstream {
    pub fn start() -> io::Result<Upstream> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let stopped = Arc::new(Stopped::default());
        let (report, requests) = mpsc::channel();
        let acceptor = {
            let stopped = Arc::clone(&stopped);
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopped.is_set() {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let stopped = Arc::clone(&stopped);
                    let report = report.clone();
                    thread::spawn(move || {
                        let _ = answer(stream, &stopped, &report);
                    });
                }
            })
        };
        Ok(Upstream { address, stopped, requests, acceptor: Some(acceptor) })
    }

    /// Waits until a request arrives here, and returns its request line. This is how a
    /// probe knows the chapter is now waiting on the upstream.
    pub fn wait_for_request(&self, timeout: Duration) -> Option<String> {
        self.requests.recv_timeout(timeout).ok()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        {
            let mut flag = self.stopped.flag.lock().unwrap_or_else(|poison| poison.into_inner());
            *flag = true;
        }
        self.stopped.changed.notify_all();
        // The acceptor is blocked in accept(); a connection of our own wakes it up.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Reads one request head and answers it as the table above says.
fn answer(mut stream: TcpStream, stopped: &Stopped, report: &Sender<String>) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let count = stream.read(&mut chunk)?;
        if count == 0 || head.len() > 64 * 1024 {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..count]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let request_line = head.lines().next().unwrap_or_default().to_string();
    let target = request_line.split(' ').nth(1).unwrap_or("/").to_string();
    let _ = report.send(request_line);

    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let reply = |status: &str, content_type: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let bytes = match path {
        "/teapot" => reply("418 I'm a teapot", "text/x-teapot", TEAPOT),
        "/target" => reply("200 OK", "text/plain", &format!("{target}\n")),
        "/until-close" => format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n{HELLO}"),
        "/garbage" => "SSH-2.0-OpenSSH_9.6\r\nProtocol mismatch.\r\n".to_string(),
        "/continue" => {
            format!("HTTP/1.1 100 Continue\r\n\r\n{}", reply("200 OK", "text/plain", CONTINUED))
        }
        "/switching" => "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                         Connection: Upgrade\r\n\r\nnot HTTP any more"
            .to_string(),
        "/no-content" => bodyless_with_body("204 No Content"),
        "/not-modified" => bodyless_with_body("304 Not Modified"),
        "/endless-head" => return endless_head(stream),
        "/hang" => {
            stopped.wait(Duration::from_secs(120));
            return Ok(());
        }
        "/slow" => {
            let ms = query.strip_prefix("ms=").and_then(|ms| ms.parse().ok()).unwrap_or(1000);
            if stopped.wait(Duration::from_millis(ms)) {
                return Ok(());
            }
            reply("200 OK", "text/plain", "slow answer\n")
        }
        _ => reply("200 OK", "text/plain", HELLO),
    };
    stream.write_all(bytes.as_bytes())?;
    stream.shutdown(Shutdown::Write)
}

/// A 204 or 304 head that claims a body, and that body: [`SMUGGLED`].
fn bodyless_with_body(status: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{SMUGGLED}",
        SMUGGLED.len()
    )
}

/// [`ENDLESS`] bytes of a head that never ends, until the chapter hangs up (it may after
/// 8 KiB; then our next write fails, and we stop).
fn endless_head(mut stream: TcpStream) -> io::Result<()> {
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut filler = b"HTTP/1.1 200 OK\r\nX-Filler: ".to_vec();
    filler.resize(64 * 1024, b'a');
    for _ in 0..ENDLESS / filler.len() {
        stream.write_all(&filler)?;
        // The status line went out with the first piece; the rest is one endless header.
        filler.fill(b'a');
    }
    stream.shutdown(Shutdown::Write)
}

/// An address where nothing listens, for the 502 probe: bind a port, then let it go.
/// Another program could take it in the meantime, so we check it really refuses.
pub fn refusing_address() -> io::Result<SocketAddr> {
    for _ in 0..10 {
        let address = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        // The listener is closed here, at the end of the statement above.
        if TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_err() {
            return Ok(address);
        }
    }
    Err(io::Error::other("no refusing port found"))
}
