//! `load`: the workbook's own small HTTP load generator.
//!
//! The benchmark harness (`bench`) prefers `wrk` when it is installed, and falls back to
//! this program on a machine without it, so anyone can reproduce the book's numbers with
//! nothing but Rust. It is also a fair second opinion: `bench --generator own` runs every
//! scenario with it instead of `wrk`.
//!
//! ```text
//! load [--connections N] [--threads T] [--duration SECS] [--requests N]
//!      [--pipeline DEPTH] [--body-size BYTES] [--timeout SECS] http://127.0.0.1:PORT/PATH
//! ```
//!
//! What it does: opens N connections, spread over T threads (1 or 2: the machine it is
//! written for has two cores, and the server under test needs one of them), and on each
//! connection sends `GET PATH` (or `POST PATH` with a body of BYTES, for `/echo`; DEPTH
//! copies at once when pipelining), reads the answers,
//! and sends again, until the time is up. At the end it prints one `key value` line per
//! number (requests, requests per second, latency percentiles, errors by kind) on stdout,
//! for people and for `bench` to read.
//!
//! How it waits: the standard library has no `poll`, and the load generator keeps to it
//! (what it takes from the suite is how to read a response, `suite::response`), so each
//! thread keeps its sockets non-blocking and sweeps over them, trying each one in turn. A sweep that made no progress is followed by `yield_now`, and after 2 ms without
//! progress by short sleeps, so an idle generator does not burn a core for nothing. (A
//! sweep over 500 sockets costs about 500 failed `read`s; the numbers it reports for 500
//! connections are therefore a little pessimistic, which the book says where it matters.)
//!
//! Being honest about servers that close: chapters 1 and 2 answer one request per
//! connection and say `Connection: close`. We then open a new connection and go on, and
//! count that (`reconnects`). Pipelined requests that a server never answered because it
//! closed after the first are counted too (`unanswered`), not hidden. Latency is measured
//! from the moment a request (or a pipelined batch) is handed to the kernel until its
//! response has fully arrived; like `wrk`, it does not include the time to connect.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::exit;
use std::thread;
use std::time::{Duration, Instant};

use suite::response::Splitter;

const USAGE: &str = "\
usage: load [--connections N] [--threads T] [--duration SECS] [--requests N]
            [--pipeline DEPTH] [--body-size BYTES] [--timeout SECS] http://HOST:PORT/PATH

  --connections N   connections kept busy at once (default 10)
  --threads T       sweeping threads, 1 or 2 (default 1; never more than connections)
  --duration SECS   how long to run (default 5; with --requests, an upper bound)
  --requests N      stop after N responses in all (default: no limit)
  --pipeline DEPTH  requests sent at once on a connection before reading (default 1)
  --body-size BYTES POST a body of this many bytes instead of GET (default 0: GET)
  --timeout SECS    a request unanswered this long is a timeout error (default 2)

Prints `key value` lines: requests, requests_per_s, latency_p50_us, latency_p99_us,
errors (and errors_* by kind), reconnects, unanswered, bytes_read, ...";

/// After this long without any progress, a thread sleeps between sweeps instead of spinning.
const SPIN_BEFORE_SLEEP: Duration = Duration::from_millis(2);
const IDLE_SLEEP: Duration = Duration::from_micros(100);

/// After a failed `connect`, wait this long before trying that connection again: a server
/// that is gone must not turn us into a loop of millions of refused connects.
const CONNECT_RETRY: Duration = Duration::from_millis(10);

#[derive(Clone, Debug)]
struct Options {
    address: SocketAddr,
    host_header: String,
    path: String,
    connections: usize,
    threads: usize,
    duration: Duration,
    requests: Option<u64>,
    pipeline: usize,
    /// Bytes of body to `POST`; 0 sends `GET`.
    body_size: usize,
    timeout: Duration,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse_args(&args) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            exit(0);
        }
        Err(message) => {
            eprintln!("load: {message}\n{USAGE}");
            exit(2);
        }
    };
    let started = Instant::now();
    let totals = run(&options);
    print_report(&options, &totals, started.elapsed());
}

fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut url = None;
    let mut connections = 10usize;
    let mut threads = 1usize;
    let mut duration = 5.0f64;
    let mut requests = None;
    let mut pipeline = 1usize;
    let mut body_size = 0usize;
    let mut timeout = 2.0f64;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value =
            |name: &str| rest.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--help" | "-h" => return Ok(None),
            "--connections" | "-c" => connections = number(&value(arg)?, arg)?,
            "--threads" | "-t" => threads = number(&value(arg)?, arg)?,
            "--duration" | "-d" => duration = seconds(&value(arg)?, arg)?,
            "--requests" | "-n" => requests = Some(number(&value(arg)?, arg)?),
            "--pipeline" | "-p" => pipeline = number(&value(arg)?, arg)?,
            "--body-size" | "-b" => body_size = number(&value(arg)?, arg)?,
            "--timeout" => timeout = seconds(&value(arg)?, arg)?,
            other if other.starts_with('-') => return Err(format!("unknown flag {other}")),
            other => url = Some(other.to_string()),
        }
    }
    let url = url.ok_or("which URL? (http://127.0.0.1:PORT/PATH)")?;
    let (authority, path) = split_url(&url)?;
    let address = authority
        .to_socket_addrs()
        .map_err(|error| format!("{authority}: {error}"))?
        .next()
        .ok_or_else(|| format!("{authority}: no address"))?;
    if connections == 0 || pipeline == 0 {
        return Err("--connections and --pipeline must be at least 1".into());
    }
    if !(1..=2).contains(&threads) {
        return Err("--threads must be 1 or 2 (the server under test needs a core too)".into());
    }
    Ok(Some(Options {
        address,
        host_header: authority.to_string(),
        path: path.to_string(),
        connections,
        threads: threads.min(connections),
        duration: Duration::from_secs_f64(duration),
        requests,
        pipeline,
        body_size,
        timeout: Duration::from_secs_f64(timeout),
    }))
}

fn number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag}: not a whole number: {text}"))
}

fn seconds(text: &str, flag: &str) -> Result<f64, String> {
    match text.trim_end_matches('s').parse::<f64>() {
        Ok(value) if value > 0.0 && value < 86_400.0 => Ok(value),
        _ => Err(format!("{flag}: not a number of seconds: {text}")),
    }
}

/// `http://127.0.0.1:8080/hello` -> (`127.0.0.1:8080`, `/hello`). Plain HTTP only.
fn split_url(url: &str) -> Result<(&str, &str), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("{url}: only http:// URLs"))?;
    Ok(match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    })
}

/// What one thread (and, summed, the whole run) counted.
#[derive(Default, Debug)]
struct Totals {
    requests: u64,
    /// One entry per response, in microseconds.
    latencies_us: Vec<u32>,
    bytes_read: u64,
    reconnects: u64,
    unanswered: u64,
    errors_connect: u64,
    errors_read: u64,
    errors_write: u64,
    errors_timeout: u64,
    /// Answers outside 2xx and 3xx, as `wrk` counts them.
    errors_status: u64,
    /// Answers we could not parse (no `Content-Length`, a garbled head).
    errors_malformed: u64,
}

impl Totals {
    fn errors(&self) -> u64 {
        self.errors_connect
            + self.errors_read
            + self.errors_write
            + self.errors_timeout
            + self.errors_status
            + self.errors_malformed
    }

    fn add(&mut self, other: Totals) {
        self.requests += other.requests;
        self.latencies_us.extend(other.latencies_us);
        self.bytes_read += other.bytes_read;
        self.reconnects += other.reconnects;
        self.unanswered += other.unanswered;
        self.errors_connect += other.errors_connect;
        self.errors_read += other.errors_read;
        self.errors_write += other.errors_write;
        self.errors_timeout += other.errors_timeout;
        self.errors_status += other.errors_status;
        self.errors_malformed += other.errors_malformed;
    }
}

fn run(options: &Options) -> Totals {
    // One request, written out once; a pipelined batch is DEPTH copies of it back to back.
    let request = if options.body_size == 0 {
        format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: workbook-load\r\n\r\n",
            options.path, options.host_header
        )
    } else {
        format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: workbook-load\r\n\
             Content-Length: {}\r\n\r\n{}",
            options.path,
            options.host_header,
            options.body_size,
            "x".repeat(options.body_size)
        )
    };
    let batch = request.repeat(options.pipeline).into_bytes();
    let deadline = Instant::now() + options.duration;

    // Share connections and the request budget out between the threads as evenly as can be.
    let mut workers = Vec::new();
    for index in 0..options.threads {
        let share = |total: u64| {
            let threads = options.threads as u64;
            total / threads + u64::from((index as u64) < total % threads)
        };
        let connections = share(options.connections as u64) as usize;
        let budget = options.requests.map(share);
        let options = options.clone();
        let batch = batch.clone();
        workers.push(thread::spawn(move || sweep(&options, connections, budget, &batch, deadline)));
    }
    let mut totals = Totals::default();
    for worker in workers {
        match worker.join() {
            Ok(part) => totals.add(part),
            Err(_) => {
                eprintln!("load: a worker thread panicked");
                exit(1);
            }
        }
    }
    totals
}

/// Where one connection is. `stream` is `None` between a close and the next connect.
struct Connection {
    stream: Option<TcpStream>,
    /// Opened at least once already: the next open is a reconnect.
    opened_before: bool,
    /// Do not try to connect before this (after a failed connect).
    retry_at: Instant,
    /// How much of the current batch the kernel has taken.
    written: usize,
    /// Requests sent and not yet answered, and when their batch was sent.
    pending: usize,
    sent_at: Instant,
    /// Splits what arrives into responses: the suite's reader, so that the load generator
    /// holds a server to what the suite does.
    reader: Splitter,
}

impl Connection {
    fn new(now: Instant) -> Connection {
        Connection {
            stream: None,
            opened_before: false,
            retry_at: now,
            written: 0,
            pending: 0,
            sent_at: now,
            reader: Splitter::new(),
        }
    }

    /// Forgets the socket (closing it) and anything that was in flight on it.
    fn close(&mut self) {
        self.stream = None;
        self.pending = 0;
        self.written = 0;
        self.reader = Splitter::new();
    }
}

// ANCHOR: sweep
/// One thread's work: keep `count` connections busy until the deadline (or the budget of
/// requests is spent), trying every socket in turn.
fn sweep(
    options: &Options, count: usize, budget: Option<u64>, batch: &[u8], deadline: Instant,
) -> Totals {
    let mut totals = Totals::default();
    let mut connections: Vec<Connection> =
        (0..count).map(|_| Connection::new(Instant::now())).collect();
    // Requests sent so far, so a budget is never overshot.
    let mut sent: u64 = 0;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut last_progress = Instant::now();

    loop {
        let now = Instant::now();
        let budget_spent = budget.is_some_and(|budget| totals.requests >= budget);
        if now >= deadline || budget_spent {
            break;
        }
        let mut progress = false;
        for connection in &mut connections {
            progress |= step(
                connection,
                options,
                batch,
                deadline,
                budget,
                &mut sent,
                &mut chunk,
                &mut totals,
            );
        }
        if progress {
            last_progress = Instant::now();
        } else if last_progress.elapsed() < SPIN_BEFORE_SLEEP {
            thread::yield_now();
        } else {
            thread::sleep(IDLE_SLEEP);
        }
    }
    totals
}
// ANCHOR_END: sweep

/// Moves one connection forward as far as it can go without waiting: connect, send, read.
/// Returns whether anything happened.
#[allow(clippy::too_many_arguments)] // one thread's state, passed down plainly
fn step(
    connection: &mut Connection, options: &Options, batch: &[u8], deadline: Instant,
    budget: Option<u64>, sent: &mut u64, chunk: &mut [u8], totals: &mut Totals,
) -> bool {
    let now = Instant::now();
    let mut progress = false;

    // 1. No socket: connect (blocking, but never past the deadline or the timeout).
    if connection.stream.is_none() {
        if now < connection.retry_at {
            return false;
        }
        let wait = options.timeout.min(deadline.saturating_duration_since(now));
        if wait.is_zero() {
            return false;
        }
        match open(options.address, wait) {
            Ok(stream) => {
                if connection.opened_before {
                    totals.reconnects += 1;
                }
                connection.opened_before = true;
                connection.stream = Some(stream);
                progress = true;
            }
            Err(_) => {
                totals.errors_connect += 1;
                connection.retry_at = Instant::now() + CONNECT_RETRY;
                return true;
            }
        }
    }

    // 2. Nothing in flight: send the next request (or batch), if the budget allows.
    if connection.pending == 0 {
        let allowed = budget.map_or(options.pipeline as u64, |budget| {
            budget.saturating_sub(*sent).min(options.pipeline as u64)
        });
        // Only whole batches: a short last batch would be a different load.
        if allowed < options.pipeline as u64 {
            return progress;
        }
        connection.pending = options.pipeline;
        connection.written = 0;
        connection.sent_at = Instant::now();
        *sent += options.pipeline as u64;
    }

    // 3. Part of the batch still unsent: push more (the kernel may take it in pieces).
    let unsent_before = connection.written < batch.len();
    while connection.written < batch.len() {
        let Some(stream) = connection.stream.as_mut() else {
            return progress;
        };
        match stream.write(&batch[connection.written..]) {
            Ok(0) => {
                totals.errors_write += 1;
                connection.close();
                return true;
            }
            Ok(count) => {
                connection.written += count;
                progress = true;
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // EPIPE, ECONNRESET: the server is gone or threw us out.
                totals.errors_write += 1;
                connection.close();
                return true;
            }
        }
    }

    // The batch went out just now: its answer cannot be back yet. Reading at once would
    // only earn a WouldBlock, a wasted system call per request; the next sweep reads it.
    if unsent_before && connection.written == batch.len() {
        return true;
    }

    // 4. Read whatever has arrived, and finish the responses it completes.
    loop {
        let Some(stream) = connection.stream.as_mut() else {
            return progress;
        };
        let count = match stream.read(chunk) {
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                totals.errors_read += 1;
                totals.unanswered += connection.pending.saturating_sub(1) as u64;
                connection.close();
                return true;
            }
        };
        progress = true;
        if count == 0 {
            // The server closed. Between requests that is its right (an idle keep-alive
            // connection timed out); with requests in flight it is a failure.
            if connection.pending > 0 {
                totals.errors_read += 1;
                totals.unanswered += connection.pending.saturating_sub(1) as u64;
            }
            connection.close();
            return true;
        }
        totals.bytes_read += count as u64;
        let sent_at = connection.sent_at;
        let mut answered = 0usize;
        let mut close = false;
        let result = connection.reader.feed(&chunk[..count], |status, wants_close| {
            let micros = sent_at.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
            totals.latencies_us.push(micros);
            totals.requests += 1;
            if !(200..400).contains(&status) {
                totals.errors_status += 1;
            }
            answered += 1;
            close = wants_close;
            // After `Connection: close`, whatever follows is not ours to read.
            !wants_close
        });
        connection.pending = connection.pending.saturating_sub(answered);
        if result.is_err() {
            totals.errors_malformed += 1;
            totals.unanswered += connection.pending as u64;
            connection.close();
            return true;
        }
        if close {
            // Chapters 1 and 2: one answer per connection. Requests of the batch that
            // were never answered are lost with it: count them, and start afresh.
            totals.unanswered += connection.pending as u64;
            connection.close();
            return true;
        }
        if connection.pending == 0 {
            return true; // batch done; the next sweep sends the next one
        }
    }

    // 5. Waited too long: count a timeout and start over on a new connection.
    if connection.pending > 0 && connection.sent_at.elapsed() > options.timeout {
        totals.errors_timeout += 1;
        totals.unanswered += connection.pending.saturating_sub(1) as u64;
        connection.close();
        return true;
    }
    progress
}

fn open(address: SocketAddr, wait: Duration) -> io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&address, wait)?;
    stream.set_nonblocking(true)?;
    // Our writes are whole requests; never hold one back waiting for an ACK.
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn print_report(options: &Options, totals: &Totals, elapsed: Duration) {
    let mut latencies = totals.latencies_us.clone();
    latencies.sort_unstable();
    let seconds = elapsed.as_secs_f64().max(1e-9);
    let mean = if latencies.is_empty() {
        0.0
    } else {
        latencies.iter().map(|&l| f64::from(l)).sum::<f64>() / latencies.len() as f64
    };
    let lines: [(&str, String); 23] = [
        ("generator", "own".to_string()),
        ("url", format!("http://{}{}", options.host_header, options.path)),
        ("connections", options.connections.to_string()),
        ("threads", options.threads.to_string()),
        ("pipeline", options.pipeline.to_string()),
        ("duration_s", format!("{seconds:.3}")),
        ("requests", totals.requests.to_string()),
        ("requests_per_s", format!("{:.1}", totals.requests as f64 / seconds)),
        ("latency_mean_us", format!("{mean:.1}")),
        ("latency_p50_us", percentile(&latencies, 50.0).to_string()),
        ("latency_p90_us", percentile(&latencies, 90.0).to_string()),
        ("latency_p99_us", percentile(&latencies, 99.0).to_string()),
        ("latency_max_us", latencies.last().copied().unwrap_or(0).to_string()),
        ("errors", totals.errors().to_string()),
        ("errors_connect", totals.errors_connect.to_string()),
        ("errors_read", totals.errors_read.to_string()),
        ("errors_write", totals.errors_write.to_string()),
        ("errors_timeout", totals.errors_timeout.to_string()),
        ("errors_status", totals.errors_status.to_string()),
        ("errors_malformed", totals.errors_malformed.to_string()),
        ("reconnects", totals.reconnects.to_string()),
        ("unanswered", totals.unanswered.to_string()),
        ("bytes_read", totals.bytes_read.to_string()),
    ];
    let mut out = io::stdout().lock();
    for (key, value) in lines {
        // A closed stdout (`load ... | head -1`) is the reader's choice, not an error.
        if writeln!(out, "{key} {value}").is_err() {
            return;
        }
    }
}

/// The nearest-rank percentile of sorted values (0 when there are none).
fn percentile(sorted: &[u32], percent: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (percent / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
#[path = "main_tests.rs"]
mod tests;
