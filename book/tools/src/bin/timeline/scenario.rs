//! The one scenario every chapter is drawn with: three clients, each on its own connection.
//!
//! - A asks for `/sleep?ms=300` at 0 ms: work that only takes time;
//! - B asks for `/hello` 50 ms later: no work at all;
//! - C asks for a file 100 ms in, with every disk access slowed by `--fs-delay-ms 200`
//!   (opening the file is one access, reading it another: 400 ms of disk).
//!
//! Each client connects, sends its request with `Connection: close`, reads the answer and
//! waits for the server to close. The server runs with `--trace`, on a temporary `--root`
//! (the suite's [`Site`]), and is killed when the [`Server`] guard is dropped, on every path.
//!
//! A [`Setup`] can open idle connections first (chapter 7's picture: thousands of clients
//! that never send a byte, which a `poll` loop hands the kernel on every turn) and add
//! flags such as `--backend poll`.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use suite::chapters::Chapter;
use suite::client::Client;
use suite::server::{Options, Program, Server};
use suite::site::Site;

/// Every disk access the server makes takes this much longer (`--fs-delay-ms`).
pub const FS_DELAY_MS: u64 = 200;
/// How long the whole scenario may take before we give up on an answer.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long to wait after the last answer for the server's last lines (the closes).
const SETTLE: Duration = Duration::from_millis(150);
/// The trace is read no sooner than this after A's connect: every picture's time axis
/// shows at least this much, and what each thread was doing at its end.
pub const LASTS_MS: u64 = 800;
/// How long opening the idle connections, and the server accepting them all, may take.
const IDLE_PATIENCE: Duration = Duration::from_secs(60);

/// What a run sets up besides the three clients: nothing, for most chapters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Setup {
    /// Connections opened (and accepted) before A comes, which never send a byte.
    pub idle: usize,
    /// Flags for this run, beyond the scenario's: `--backend poll`.
    pub flags: Vec<(&'static str, String)>,
}

/// One of the three clients: what it asks, when, and how long its work takes at the least.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    pub letter: char,
    /// `GET /sleep?ms=300`: the request line, without the version.
    pub line: &'static str,
    /// When it connects, after A.
    pub at_ms: u64,
    /// The time its own work takes (a sleep, the disk), however idle the server: an answer
    /// later than this was held up by something else.
    pub own_ms: u64,
}

/// The scenario: A, B, C.
pub fn requests() -> [Request; 3] {
    [
        Request { letter: 'A', line: "GET /sleep?ms=300", at_ms: 0, own_ms: 300 },
        Request { letter: 'B', line: "GET /hello", at_ms: 50, own_ms: 0 },
        // A file the suite's site always has. Opening it is one access to the slow disk,
        // reading it another.
        Request { letter: 'C', line: "GET /files/hello.txt", at_ms: 100, own_ms: 2 * FS_DELAY_MS },
    ]
}

/// What one client saw, in milliseconds from A's connect.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub request: Request,
    /// `127.0.0.1:40154`: how the server's trace names this client.
    pub local: String,
    pub connected: f64,
    /// When the whole answer had arrived, and its status.
    pub answered: Option<(f64, u16)>,
    /// What went wrong, if it did.
    pub error: Option<String>,
}

#[cfg(test)]
impl Seen {
    /// For tests: a client on local port `port` that connected at `connected` and had a 200
    /// at `answered`.
    pub fn answered(request: Request, port: u16, connected: f64, answered: f64) -> Seen {
        let local = format!("127.0.0.1:{port}");
        Seen { request, local, connected, answered: Some((answered, 200)), error: None }
    }
}

/// How late a client may connect (a busy machine can wake a thread late) before the run
/// no longer shows the scenario, and is run again.
pub const LATE_LIMIT_MS: f64 = 15.0;

/// A finished run: the server's trace, and what the clients saw.
pub struct Run {
    pub trace: String,
    pub clients: Vec<Seen>,
    /// The flags beyond the scenario's, such as `--workers 1`.
    pub extra_flags: Vec<String>,
    /// When the trace was read, in milliseconds from A's connect: what each thread was
    /// doing after its last line lasted until here at least.
    pub read_at: f64,
    /// How many idle connections were open.
    pub idle: usize,
    /// The client that put the trace on our clock, when it was not A (see [`align`]).
    ///
    /// [`align`]: crate::align
    pub clock: Option<Clock>,
    /// How long the loop's thread (the main thread) was on a CPU, from A's connect until
    /// the trace was read, in milliseconds (`/proc/PID/task/PID/schedstat`); `None` where
    /// the kernel does not say.
    pub loop_cpu_ms: Option<f64>,
}

/// A connection made only to tie the server's trace to our clock: where A's own accept
/// cannot, because the loop is slow to wake with thousands of idle connections.
#[derive(Clone, Debug, PartialEq)]
pub struct Clock {
    /// How the trace names it: `127.0.0.1:40150`.
    pub local: String,
    /// When it connected, in milliseconds from A's connect (before it: negative).
    pub connected: f64,
}

impl Run {
    /// How much later than planned the latest client connected, in milliseconds.
    pub fn lateness(&self) -> f64 {
        let late = self.clients.iter().map(|seen| seen.connected - seen.request.at_ms as f64);
        late.fold(0.0, f64::max)
    }
}

/// Flags that make the picture the same on every machine, for the chapters that have
/// them: one pool worker (one file, one job: one worker lane), and two loops in chapter
/// 9, whatever the number of cores. Found in the chapter's `--help`, as the bench does.
fn fixed_flags(binary: &Path) -> Vec<(&'static str, String)> {
    let help = std::process::Command::new(binary).arg("--help").output();
    let help =
        help.map(|out| String::from_utf8_lossy(&out.stdout).into_owned()).unwrap_or_default();
    let mut flags = Vec::new();
    if help.contains("--workers") {
        flags.push(("--workers", "1".to_string()));
    }
    if help.contains("--threads") {
        flags.push(("--threads", "2".to_string()));
    }
    flags
}

/// Runs the scenario against `binary`, chapter `chapter`'s program, with what `setup`
/// asks for first: with idle connections, a [`Clock`] connection, then the idle ones, and
/// the loop's CPU time read around the three clients.
pub fn run(chapter: &'static Chapter, binary: &Path, setup: &Setup) -> Result<Run, String> {
    let site = Site::create(0).map_err(|error| format!("cannot make a --root: {error}"))?;
    let mut flags = fixed_flags(binary);
    if setup.idle > 0 {
        // An idle connection is closed after `--header-timeout` (10 s): it must outlast
        // opening the others, on a busy machine too.
        flags.push(("--header-timeout", "120".to_string()));
    }
    flags.extend(setup.flags.iter().cloned());
    let extra_flags = flags.iter().map(|(flag, value)| format!("{flag} {value}")).collect();
    let options = Options {
        root: Some(site.root.clone()),
        fs_delay_ms: Some(FS_DELAY_MS),
        trace: true,
        if_supported: flags,
        ..Options::default()
    };
    let server = Server::start(chapter, &Program::Binary(binary.to_path_buf()), &options)?;
    // Let it settle into its loop (chapter 9 starts threads) before A comes.
    thread::sleep(Duration::from_millis(100));
    let (clock, _idle) = if setup.idle > 0 {
        let clock = tie_clock(server.address)?;
        let idle = open_idle(&server, setup.idle)?;
        (Some(clock), idle)
    } else {
        (None, Vec::new())
    };
    let loop_cpu = || {
        let pid = server.pid()?;
        let threads = suite::resources::thread_cpu_times(pid)?;
        let main = threads.into_iter().find(|thread| thread.id == pid)?;
        Some(main.cpu.as_secs_f64() * 1000.0)
    };
    let cpu_before = loop_cpu();

    let start = Instant::now();
    let clients: Vec<_> = requests()
        .into_iter()
        .map(|request| {
            let address = server.address;
            thread::spawn(move || ask(request, address, start))
        })
        .collect();
    let mut seen = Vec::new();
    for client in clients {
        // `ask` never waits past its deadline, so this join ends.
        seen.push(client.join().map_err(|_| "a client thread panicked".to_string())?);
    }
    thread::sleep(SETTLE);
    let lasts = start + Duration::from_millis(LASTS_MS);
    thread::sleep(lasts.saturating_duration_since(Instant::now()));
    let read_at = start.elapsed().as_secs_f64() * 1000.0;
    let loop_cpu_ms = cpu_before.zip(loop_cpu()).map(|(before, after)| after - before);
    let trace = server.stderr_text();
    drop(server); // killed and reaped here (and on every early return above)
                  // The clock's client connected before A: a negative time on A's clock.
    let clock = clock.map(|(local, connected): (String, Instant)| Clock {
        local,
        connected: -start.saturating_duration_since(connected).as_secs_f64() * 1000.0,
    });
    Ok(Run { trace, clients: seen, extra_flags, read_at, idle: setup.idle, clock, loop_cpu_ms })
}

/// Connects once and closes, while the server has nothing else to do, so that it accepts
/// at once: its `accept` line in the trace is the moment we connected. Returns how the
/// trace names the connection, and when it was made.
fn tie_clock(address: SocketAddr) -> Result<(String, Instant), String> {
    let stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))
        .map_err(|error| format!("cannot connect: {error}"))?;
    let connected = Instant::now();
    let local = stream.local_addr().map_err(|error| error.to_string())?.to_string();
    // Closed at once: the server reads its end and closes too, and the loop is idle
    // again well before the idle connections come.
    drop(stream);
    thread::sleep(Duration::from_millis(50));
    Ok((local, connected))
}

/// Opens `count` connections that never send a byte, and waits until the server has
/// accepted them all (its trace says so), so that they are in its list of sockets and
/// not only in the kernel's backlog. They stay open until the returned streams drop.
fn open_idle(server: &Server, count: usize) -> Result<Vec<TcpStream>, String> {
    let deadline = Instant::now() + IDLE_PATIENCE;
    let mut idle = Vec::with_capacity(count);
    while idle.len() < count {
        match TcpStream::connect_timeout(&server.address, Duration::from_secs(2)) {
            Ok(stream) => idle.push(stream),
            // EMFILE, ENFILE: we are out of descriptors; waiting would not help.
            Err(error) if matches!(error.raw_os_error(), Some(23 | 24)) => {
                return Err(format!(
                    "out of file descriptors after {} idle connections ({error}): raise the \
                     limit first, e.g. `ulimit -n 20000`",
                    idle.len()
                ))
            }
            // The backlog is full and the server slow to accept: try again, for a while.
            Err(error) if Instant::now() >= deadline => {
                return Err(format!("opened only {} idle connections: {error}", idle.len()))
            }
            Err(_) => {}
        }
    }
    // Every connection so far, the clock's included, is accepted once.
    while server.stderr_text().matches("accept: client ").count() <= count {
        if Instant::now() >= deadline {
            return Err(format!("the server did not accept {count} idle connections in time"));
        }
        thread::sleep(Duration::from_millis(50));
    }
    // Let the loop finish the turn it is in, and go back to waiting.
    thread::sleep(Duration::from_millis(200));
    Ok(idle)
}

/// One client's part: connect at its time, ask, read the answer, wait for the close.
fn ask(request: Request, address: std::net::SocketAddr, start: Instant) -> Seen {
    let since = |instant: Instant| instant.duration_since(start).as_secs_f64() * 1000.0;
    let at = start + Duration::from_millis(request.at_ms);
    thread::sleep(at.saturating_duration_since(Instant::now()));
    let mut seen =
        Seen { request, local: String::new(), connected: 0.0, answered: None, error: None };
    let deadline = start + PATIENCE;
    let mut client = match Client::connect(address) {
        Ok(client) => client,
        Err(error) => {
            seen.error = Some(format!("cannot connect: {error}"));
            return seen;
        }
    };
    seen.connected = since(Instant::now());
    seen.local = client.stream().local_addr().map(|a| a.to_string()).unwrap_or_default();
    let bytes =
        format!("{} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", request.line);
    if let Err(error) = client.send(bytes.as_bytes()) {
        seen.error = Some(format!("cannot send: {error}"));
        return seen;
    }
    match client.read_response(deadline, false) {
        Ok(response) => seen.answered = Some((since(Instant::now()), response.status)),
        Err(error) => seen.error = Some(format!("no answer: {error}")),
    }
    // The server closes after `Connection: close`; we close when it has (chapter 1 waits
    // for our close, its lingering close, before it takes the next client).
    client.wait_for_close(deadline.min(Instant::now() + Duration::from_secs(2)));
    seen
}
