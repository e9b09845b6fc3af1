//! A deliberately low-level HTTP client.
//!
//! Real clients hide exactly what the suite must control: how the bytes are split into
//! writes, when a connection is closed or reset, whether the response really ends where
//! `Content-Length` says. So this one sends the raw bytes it is given and reads the answer
//! byte for byte, with a deadline on every wait. What a response is (where its head ends,
//! what it says, where its body ends) it takes from [`crate::response`].

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::response::{head_length, Framing, RawHead, MAX_HEAD};

pub use crate::response::Response;

/// A response head, read before its body (see [`Client::read_head`]).
#[derive(Debug)]
pub struct Head {
    pub response: Response,
    /// The body's length from `Content-Length` (0 for answers that have no body).
    pub body_length: usize,
}

/// Why no (whole) response arrived.
#[derive(Debug)]
pub enum ReadError {
    /// The deadline passed, `waited` after the last request was sent (or the connection
    /// made); `received` bytes had arrived.
    TimedOut {
        received: usize,
        waited: Duration,
    },
    /// The server closed the connection after `received` bytes.
    Closed {
        received: usize,
    },
    /// The connection was reset after `received` bytes.
    Reset {
        received: usize,
    },
    /// What arrived is not a valid response (or breaks the contract's framing rules).
    Malformed(String),
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::TimedOut { received, waited } => write!(
                f,
                "no whole response within {:.2} s ({received} bytes arrived)",
                waited.as_secs_f64()
            ),
            ReadError::Closed { received } => {
                write!(f, "the server closed the connection after {received} bytes")
            }
            ReadError::Reset { received } => {
                write!(f, "the connection was reset after {received} bytes")
            }
            ReadError::Malformed(what) => write!(f, "malformed response: {what}"),
            ReadError::Io(error) => write!(f, "{error}"),
        }
    }
}

/// What became of a connection we waited on (see [`Client::wait_for_close`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The server closed it (or reset it) without sending anything more.
    Closed,
    /// Still open at the deadline.
    StillOpen,
    /// The server sent more bytes: these.
    MoreBytes(Vec<u8>),
}

/// How long [`Client::connect`] waits for the server's kernel to take the connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One TCP connection to the server under test.
pub struct Client {
    stream: TcpStream,
    /// Bytes read past the end of the last response: the start of the next one, when
    /// requests were pipelined.
    pending: Vec<u8>,
    /// Everything received on this connection, for messages.
    received: usize,
    /// When the last request was sent (or the connection made): how long a read that
    /// times out has waited, for messages.
    sent: Instant,
}

impl Client {
    /// Connects, giving up after [`CONNECT_TIMEOUT`].
    pub fn connect(address: SocketAddr) -> io::Result<Client> {
        Client::connect_within(address, CONNECT_TIMEOUT)
    }

    /// Connects, giving up after `timeout`.
    pub fn connect_within(address: SocketAddr, timeout: Duration) -> io::Result<Client> {
        let stream = TcpStream::connect_timeout(&address, timeout)?;
        // Small writes must leave at once: the probes that trickle bytes depend on it.
        stream.set_nodelay(true)?;
        Ok(Client { stream, pending: Vec::new(), received: 0, sent: Instant::now() })
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Sends all of `bytes` (one `write_all`; the kernel may still split it).
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        self.stream.write_all(bytes)?;
        self.sent = Instant::now();
        Ok(())
    }

    /// Reads more bytes into `pending`, waiting until `deadline` at most.
    fn fill(&mut self, deadline: Instant) -> Result<(), ReadError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timed_out());
        }
        self.stream.set_read_timeout(Some(left)).map_err(ReadError::Io)?;
        let mut chunk = [0u8; 64 * 1024];
        loop {
            return match self.stream.read(&mut chunk) {
                Ok(0) => Err(ReadError::Closed { received: self.received }),
                Ok(count) => {
                    self.received += count;
                    self.pending.extend_from_slice(&chunk[..count]);
                    Ok(())
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    Err(self.timed_out())
                }
                Err(error) if error.kind() == io::ErrorKind::ConnectionReset => {
                    Err(ReadError::Reset { received: self.received })
                }
                Err(error) => Err(ReadError::Io(error)),
            };
        }
    }

    /// Takes the first `count` bytes out of `pending`. Split off and swapped, so both
    /// halves are copied whole: `drain(..count).collect()` walks them byte by byte, which
    /// in a debug build made reading megabytes the suite's costliest work.
    fn take_pending(&mut self, count: usize) -> Vec<u8> {
        let rest = self.pending.split_off(count);
        std::mem::replace(&mut self.pending, rest)
    }

    fn timed_out(&self) -> ReadError {
        ReadError::TimedOut { received: self.received, waited: self.sent.elapsed() }
    }

    /// Waits until some bytes arrive (kept for the next read) or `deadline` passes.
    pub fn wait_for_bytes(&mut self, deadline: Instant) -> Result<(), ReadError> {
        if self.pending.is_empty() {
            self.fill(deadline)?;
        }
        Ok(())
    }

    /// Reads a response head. `to_head_request` says the request was `HEAD`: then the
    /// response has no body whatever its `Content-Length` says.
    pub fn read_head(
        &mut self, deadline: Instant, to_head_request: bool,
    ) -> Result<Head, ReadError> {
        let head_end = loop {
            if let Some(end) = head_length(&self.pending) {
                break end;
            }
            if self.pending.len() > MAX_HEAD {
                return Err(ReadError::Malformed("a response head over 64 KiB".into()));
            }
            self.fill(deadline)?;
        };
        let head = self.take_pending(head_end);
        let raw = RawHead::parse(&head).map_err(ReadError::Malformed)?;
        let response = raw.to_response().map_err(ReadError::Malformed)?;
        // The contract lets answers that never have a body (HEAD, 1xx, 204, 304) go
        // without `Content-Length`; everything else must say how long its body is.
        let body_length = match raw.framing(to_head_request).map_err(ReadError::Malformed)? {
            Framing::Length(length) => length,
            Framing::Chunked => {
                return Err(ReadError::Malformed(format!(
                    "{} without Content-Length (the contract requires one)",
                    response.status
                )))
            }
        };
        Ok(Head { response, body_length })
    }

    /// Reads up to `limit` more body bytes (at least one), for probes that want to hold a
    /// response half-read.
    pub fn read_some(&mut self, limit: usize, deadline: Instant) -> Result<Vec<u8>, ReadError> {
        if self.pending.is_empty() {
            self.fill(deadline)?;
        }
        let count = self.pending.len().min(limit);
        Ok(self.take_pending(count))
    }

    /// Reads exactly `length` body bytes.
    pub fn read_body(&mut self, length: usize, deadline: Instant) -> Result<Vec<u8>, ReadError> {
        while self.pending.len() < length {
            self.fill(deadline)?;
        }
        Ok(self.take_pending(length))
    }

    /// Reads one whole response, head and body.
    pub fn read_response(
        &mut self, deadline: Instant, to_head_request: bool,
    ) -> Result<Response, ReadError> {
        let Head { mut response, body_length } = self.read_head(deadline, to_head_request)?;
        response.body = self.read_body(body_length, deadline)?;
        Ok(response)
    }

    /// After a response: does the server close the connection before `deadline`, keep it
    /// open, or send more bytes?
    pub fn wait_for_close(&mut self, deadline: Instant) -> Ending {
        if !self.pending.is_empty() {
            return Ending::MoreBytes(std::mem::take(&mut self.pending));
        }
        match self.fill(deadline) {
            Ok(()) => Ending::MoreBytes(std::mem::take(&mut self.pending)),
            Err(ReadError::TimedOut { .. }) => Ending::StillOpen,
            Err(_) => Ending::Closed,
        }
    }

    /// Has the server already closed the connection? Looks without waiting, so it can
    /// only ever miss a close that is still on its way, never invent one.
    pub fn closed_already(&mut self) -> bool {
        if !self.pending.is_empty() || self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let closed = matches!(self.stream.peek(&mut byte), Ok(0));
        let _ = self.stream.set_nonblocking(false);
        closed
    }
}

/// Shortens `text` to at most `max` characters for a message.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}...")
    }
}

/// Shows request bytes in a message: `GET /hello HTTP/1.1\r\n...`.
pub fn show(bytes: &[u8]) -> String {
    let escaped: String = bytes.escape_ascii().to_string();
    truncate(&escaped, 120)
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
