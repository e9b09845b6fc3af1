//! Probes for the demo application's routes and statuses: every row of the contract's
//! route table, `HEAD`, 404, 405 and 501. Every chapter must pass all of them.

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{
    broken, check, connect, exchange, expect_status, first_line, get, hello_meanwhile, post,
    receive, request_and_close, seconds, sending, stats_value, still_serves, with_site,
    with_upstream, Launch, Meanwhile, Outcome, Probed, Stop, Target, HELLO, PATIENCE, PROMPTLY,
};
use crate::client::{ReadError, Response};
use crate::manifest::{self, Capability, Expect};
use crate::server::{args_text, Options, ProcessGroup, Program, Server, Spawned};
use crate::site::{self, first_difference};
use crate::upstream::{self, Upstream};

fn content_type(response: &Response) -> &str {
    response.header("content-type").unwrap_or_default()
}

pub fn index_page(target: &Target) -> Probed {
    let server = target.server()?;
    let response = exchange(&server, &get("/"))?;
    expect_status(&response, &[200], "GET /")?;
    check!(
        content_type(&response).starts_with("text/html"),
        "GET /: Content-Type {:?}, expected text/html",
        content_type(&response)
    );
    let page = response.text();
    // Ours name their chapter; a reader's server names itself as it likes.
    if let Some(name) = server.server_name {
        check!(page.contains(name), "GET /: the page does not name the chapter ({name})");
    }
    for route in ["/hello", "/sleep", "/files/", "/echo", "/upstream/", "/stats"] {
        check!(page.contains(route), "GET /: the page does not mention {route}");
    }
    Ok(Outcome::Works)
}

/// The command line's promises: `--help` is exit 0, a bad flag exit 2 with the usage on
/// stderr, a port in use exit 1 with a one-line error (not a panic).
pub fn command_line(target: &Target) -> Probed {
    let Launch::Start { program } = &target.launch else {
        return Err(Stop::Skipped(super::NEEDS_OWN_SERVER));
    };
    let help = run_to_end(program, &["--help"])?;
    check!(
        help.code == Some(0) && help.stdout.contains("usage"),
        "--help: exit {:?}, stdout {:?}; expected exit 0 and the usage",
        help.code,
        help.stdout
    );
    for bad in [&["--bogus"][..], &["--port", "seventy"], &["--port"]] {
        let run = run_to_end(program, bad)?;
        check!(
            run.code == Some(2) && run.stderr.contains("usage") && !run.stderr.contains("panicked"),
            "{}: exit {:?}, stderr {:?}; expected exit 2 with an error and the usage",
            bad.join(" "),
            run.code,
            run.stderr
        );
    }
    let server = target.server()?;
    let port = server.address.port().to_string();
    let in_use = |stop| match stop {
        Stop::Broken(what) => broken(format!(
            "{what}, though another server listens on port {port}: expected exit 1 and a \
             one-line error"
        )),
        skipped => skipped,
    };
    let taken = run_to_end(program, &["--host", "127.0.0.1", "--port", &port]).map_err(in_use)?;
    check!(
        taken.code == Some(1)
            && !taken.stderr.contains("panicked")
            && taken.stderr.lines().count() == 1,
        "--port {port} (in use): exit {:?}, stderr {:?}; expected exit 1 and a one-line error",
        taken.code,
        taken.stderr
    );
    Ok(Outcome::Works)
}

/// The IPv6 loopback address, as `--host` may be given it: bare, or in brackets as in a URL.
pub(super) const IPV6_HOSTS: [&str; 2] = ["::1", "[::1]"];

/// `--host ::1` and `--host [::1]` both work, and the first line names the address as a
/// URL must: `listening on http://[::1]:PORT`. (Without the brackets, `http://::1:8080`
/// is no URL at all: no client can tell where the address ends and the port begins.)
/// Where this machine cannot bind `[::1]` (IPv6 is off), the probe says so and skips.
pub fn ipv6_host(target: &Target) -> Probed {
    super::needs_own_server(target)?;
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        return Err(Stop::Skipped(
            "this machine cannot bind [::1]:0 (no IPv6 loopback), so --host ::1 was NOT checked",
        ));
    }
    for host in IPV6_HOSTS {
        let server = target
            .start(Options { host: Some(host.into()), ..Options::default() })
            .map_err(|stop| match stop {
                Stop::Broken(what) => broken(format!("started with --host {host}: {what}")),
                skipped => skipped,
            })?;
        let expected = format!("listening on http://[::1]:{}", server.address.port());
        check!(
            server.listening == expected,
            "started with --host {host}, the first line on stdout is {:?}, expected {expected:?}",
            server.listening
        );
        let what = format!("GET /hello to [::1] (started with --host {host})");
        let response = exchange(&server, &get("/hello"))?;
        expect_status(&response, &[200], &what)?;
        check!(response.body == HELLO, "{what}: body {:?}", response.text());
    }
    Ok(Outcome::Works)
}

/// What `--help` says the server under test accepts, for a probe that uses a flag only
/// some chapters have (`--upstream-limit` from chapter 8). Skips for someone else's server.
pub fn usage(target: &Target) -> Result<String, Stop> {
    let Launch::Start { program } = &target.launch else {
        return Err(Stop::Skipped(super::NEEDS_OWN_SERVER));
    };
    let help = run_to_end(program, &["--help"])?;
    check!(help.code == Some(0), "--help: exit {:?}, expected 0", help.code);
    Ok(help.stdout)
}

/// What a short run of the program left behind.
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the chapter's program with `args` and waits (a few seconds at most) for it to
/// end by itself, as `--help` and bad flags must.
fn run_to_end(program: &Program, args: &[&str]) -> Result<Ended, Stop> {
    let args: Vec<_> = args.iter().map(|arg| arg.into()).collect();
    // "`--port 8080`" for ours, "`python3 my_server.py --port 8080`" for a reader's.
    let shown = program.typed(&args).unwrap_or_else(|| format!("`{}`", args_text(&args)));
    let mut command = program.command(&args, None);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let Spawned { mut child, group } = ProcessGroup::spawn(&mut command, program)
        .map_err(|error| broken(format!("cannot run {shown}: {error}")))?;
    let deadline = Instant::now() + super::PATIENCE;
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() >= deadline {
            drop(group);
            let _ = child.kill();
            let _ = child.wait();
            return Err(broken(format!(
                "{shown} was still running after {} s",
                super::PATIENCE.as_secs()
            )));
        }
        // std has no "wait with a timeout", so we look again shortly.
        thread::sleep(Duration::from_millis(10));
    }
    // Whatever a reader's command left running goes too, or it could hold the pipes open.
    drop(group);
    // It has ended, so its pipes are closed and hold all it wrote.
    let output = child
        .wait_with_output()
        .map_err(|error| broken(format!("reading what {shown} printed: {error}")))?;
    Ok(Ended {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

pub fn hello(target: &Target) -> Probed {
    let server = target.server()?;
    let requests: [&[u8]; 4] = [
        b"GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n",
        b"GET /hello?ignored=yes HTTP/1.1\r\nHost: suite\r\n\r\n",
        // The absolute form, which RFC 9112 says a server must accept.
        b"GET http://suite/hello HTTP/1.1\r\nHost: suite\r\n\r\n",
        // HTTP/1.0 needs no Host, and gets its connection closed.
        b"GET /hello HTTP/1.0\r\n\r\n",
    ];
    for request in requests {
        let what = first_line(request);
        let response = exchange(&server, request)?;
        expect_status(&response, &[200], &what)?;
        check!(
            response.body == HELLO,
            "{what}: body {:?}, expected {:?}",
            response.text(),
            String::from_utf8_lossy(HELLO)
        );
        check!(
            content_type(&response).starts_with("text/plain"),
            "{what}: Content-Type {:?}, expected text/plain",
            content_type(&response)
        );
    }
    Ok(Outcome::Works)
}

/// Values of `ms` that `/sleep` must refuse with a 400: it takes 0 to 10000.
pub(super) const BAD_SLEEPS: [&str; 6] =
    ["abc", "-1", "10001", "1.5", "", "99999999999999999999999"];

pub fn sleep_route(target: &Target) -> Probed {
    let server = target.server()?;
    for ms in [0, 50] {
        let started = Instant::now();
        let response = exchange(&server, &get(&format!("/sleep?ms={ms}")))?;
        let took = started.elapsed();
        expect_status(&response, &[200], &format!("GET /sleep?ms={ms}"))?;
        check!(
            response.text() == format!("slept {ms} ms\n"),
            "GET /sleep?ms={ms}: body {:?}",
            response.text()
        );
        check!(
            took >= Duration::from_millis(ms),
            "GET /sleep?ms={ms} answered after only {}",
            seconds(took)
        );
    }
    for bad in BAD_SLEEPS {
        let response =
            exchange(&server, &get(&format!("/sleep?ms={bad}"))).map_err(|stop| match stop {
                Stop::Broken(what) => broken(format!("{what} (expected a 400: ms is 0..=10000)")),
                skipped => skipped,
            })?;
        expect_status(&response, &[400], &format!("GET /sleep?ms={bad}"))?;
    }
    let response = exchange(&server, &get("/sleep"))?;
    expect_status(&response, &[400], "GET /sleep (no ms)")?;
    Ok(Outcome::Works)
}

pub fn stats_route(target: &Target) -> Probed {
    let server = target.server()?;
    expect_status(&exchange(&server, &get("/hello"))?, &[200], "GET /hello")?;
    let response = exchange(&server, &get("/stats"))?;
    expect_status(&response, &[200], "GET /stats")?;
    check!(
        content_type(&response).starts_with("text/plain"),
        "GET /stats: Content-Type {:?}, expected text/plain",
        content_type(&response)
    );
    let value = |key: &str| stats_value(&response, key);
    for key in
        ["connections_open", "requests_served", "loop_turns", "timers_pending", "jobs_queued"]
    {
        check!(value(key).is_some(), "GET /stats: no `{key} N` line in {:?}", response.text());
    }
    check!(
        value("requests_served").unwrap_or(0) >= 1,
        "GET /stats: requests_served is 0 after a GET /hello was answered"
    );
    Ok(Outcome::Works)
}

/// HEAD must give the same status and headers as GET (but `Date`, and for `/stats` the
/// length of numbers that changed), and no body at all.
pub fn head_requests(target: &Target) -> Probed {
    let server = target.server()?;
    for path in ["/", "/hello", "/stats", "/sleep?ms=1", "/sleep?ms=x", "/nowhere"] {
        let got = exchange(&server, &request_and_close("GET", path))?;
        // `receive` checks that no body follows the head: the connection must end (we
        // asked it to) right after the head.
        let head = exchange(&server, &request_and_close("HEAD", path))?;
        check!(
            head.status == got.status,
            "HEAD {path}: status {}, but GET gives {}",
            head.status,
            got.status
        );
        let comparable = |response: &Response| {
            let mut headers: Vec<(String, String)> = response
                .headers
                .iter()
                .filter(|(name, _)| {
                    // The date moves on between the two requests; so do /stats' numbers.
                    let changes = name.eq_ignore_ascii_case("date")
                        || (path == "/stats" && name.eq_ignore_ascii_case("content-length"));
                    !changes
                })
                .map(|(name, value)| (name.to_ascii_lowercase(), value.clone()))
                .collect();
            headers.sort();
            headers
        };
        check!(
            comparable(&head) == comparable(&got),
            "HEAD {path}: headers {:?} differ from GET's {:?}",
            head.headers,
            got.headers
        );
    }
    let response = exchange(&server, &request_and_close("HEAD", "/echo"))?;
    expect_status(&response, &[405], "HEAD /echo")?;
    Ok(Outcome::Works)
}

/// Paths that are no route (but one letter or slash away from one): each is a 404.
pub(super) const NOT_FOUND: [&str; 6] =
    ["/nowhere", "/hello/", "/HELLO", "/files", "/upstreamx", "/stats/x"];

/// Unknown routes, and files that are not there. A file name the kernel finds too long
/// (`ENAMETOOLONG`) is not there either: a 404, as nginx answers, not a 500. Two ways to be
/// too long: one name over 255 bytes, and a path over 4,096 bytes in all (of names of 99
/// bytes, in a request head well under the 8 KiB limit).
pub fn not_found(target: &Target) -> Probed {
    let server = target.server()?;
    for path in NOT_FOUND {
        expect_status(&exchange(&server, &get(path))?, &[404], &format!("GET {path}"))?;
    }
    let long_name = format!("/files/{}.txt", "n".repeat(300));
    let long_path = format!("/files/{}x.txt", format!("{}/", "d".repeat(99)).repeat(42));
    let mut wrong = Vec::new();
    for (path, what) in [
        (&long_name, format!("GET /files/ with a file name of {} bytes", long_name.len() - 7)),
        (&long_path, format!("GET /files/ with a path of {} bytes", long_path.len() - 7)),
    ] {
        let response = exchange(&server, &get(path))?;
        if response.status != 404 {
            wrong.push(format!("{what}: expected 404, got {}", response.summary()));
        }
    }
    check!(
        wrong.is_empty(),
        "{} (a name the kernel finds too long, ENAMETOOLONG, is a file that is not there)",
        wrong.join("; ")
    );
    let request = b"OPTIONS * HTTP/1.1\r\nHost: suite\r\n\r\n";
    expect_status(&exchange(&server, request)?, &[404], "OPTIONS *")?;
    Ok(Outcome::Works)
}

/// A known method on a route that does not take it, and the `Allow` its 405 must list (in
/// any order). The server is started without `--upstream`: `/upstream/` is still a route.
pub(super) const NOT_ALLOWED: [(&str, &str, &str); 9] = [
    ("DELETE", "/hello", "GET, HEAD"),
    ("POST", "/hello", "GET, HEAD"),
    ("PUT", "/", "GET, HEAD"),
    ("POST", "/stats", "GET, HEAD"),
    ("PATCH", "/sleep?ms=1", "GET, HEAD"),
    ("DELETE", "/files/index.html", "GET, HEAD"),
    ("POST", "/upstream/x", "GET, HEAD"),
    ("GET", "/echo", "POST"),
    ("PUT", "/echo", "POST"),
];

pub fn method_not_allowed(target: &Target) -> Probed {
    let server = target.server()?;
    let methods = |list: &str| {
        let mut methods: Vec<String> = list
            .split(',')
            .map(|method| method.trim().to_string())
            .filter(|method| !method.is_empty())
            .collect();
        methods.sort();
        methods
    };
    for (method, path, allow) in NOT_ALLOWED {
        let what = format!("{method} {path}");
        let response = exchange(&server, &request_and_close(method, path))?;
        expect_status(&response, &[405], &what)?;
        let got = response.header("allow").unwrap_or_default();
        check!(methods(got) == methods(allow), "{what}: Allow: {got:?}, expected {allow:?}");
    }
    Ok(Outcome::Works)
}

/// Methods nobody knows (methods are case-sensitive: `get` is not GET): each is a 501.
pub(super) const UNKNOWN_METHODS: [&str; 4] = ["BREW", "FOO", "get", "M-SEARCH"];

pub fn unknown_method(target: &Target) -> Probed {
    let server = target.server()?;
    for method in UNKNOWN_METHODS {
        let response = exchange(&server, &request_and_close(method, "/hello"))?;
        expect_status(&response, &[501], &format!("{method} /hello"))?;
    }
    Ok(Outcome::Works)
}

pub fn echo(target: &Target) -> Probed {
    let server = target.server()?;
    let every_byte: Vec<u8> = (0..=255).collect();
    let largest = site::pattern(super::corpus::BODY_LIMIT);
    let bodies: [&[u8]; 4] = [b"hello, echo", b"", &every_byte, &largest];
    for body in bodies {
        let what = format!("POST /echo with {} bytes", body.len());
        let response = exchange(&server, &post("/echo", body))?;
        expect_status(&response, &[200], &what)?;
        if let Some(at) = first_difference(body, &response.body) {
            return Err(broken(format!(
                "{what}: the echo differs from byte {at} on ({} bytes came back)",
                response.body.len()
            )));
        }
    }
    Ok(Outcome::Works)
}

pub fn echo_needs_length(target: &Target) -> Probed {
    let server = target.server()?;
    let request = b"POST /echo HTTP/1.1\r\nHost: suite\r\n\r\n";
    expect_status(&exchange(&server, request)?, &[411], "POST /echo without Content-Length")?;
    Ok(Outcome::Works)
}

/// Over 1 MiB is 413, and the server must say so from the head alone, without waiting
/// for (or buffering) a body it will not take.
pub fn echo_too_large(target: &Target) -> Probed {
    let mut server = target.server()?;
    let too_long = super::corpus::BODY_LIMIT + 1;
    let head = format!("POST /echo HTTP/1.1\r\nHost: suite\r\nContent-Length: {too_long}\r\n\r\n");
    let what = format!("POST /echo with Content-Length: {too_long} (no body sent)");
    let response = exchange(&server, head.as_bytes())?;
    expect_status(&response, &[413], &what)?;
    check!(response.says_close(), "{what}: the 413 does not say Connection: close");

    // The same with some of the body on its way: the answer must not wait for the rest.
    let mut client = connect(&server)?;
    let mut request = head.into_bytes();
    request.extend_from_slice(&site::pattern(64 * 1024));
    let what = "POST /echo with 64 KiB of a too-large body";
    sending(&mut client, &request, what)?;
    let response = receive(&mut client, &server, false, what)?;
    expect_status(&response, &[413], what)?;
    drop(client);
    still_serves(&mut server, "a too-large POST /echo")?;
    Ok(Outcome::Works)
}

pub fn files(target: &Target) -> Probed {
    let (server, _site) = with_site(target, 0)?;
    let found = [
        ("/files/hello.txt", "text/plain", site::HELLO_TXT),
        ("/files/index.html", "text/html", site::INDEX_HTML),
        ("/files/", "text/html", site::INDEX_HTML),
        ("/files/sub/", "text/html", site::SUB_INDEX_HTML),
        ("/files/a%20b.txt", "text/plain", site::SPACED_TXT),
        ("/files/style.css", "text/css", "p { color: teal; }\n"),
        ("/files/data.json", "application/json", "{\"suite\": true}\n"),
        ("/files/notes.unknown", "application/octet-stream", "no known extension\n"),
    ];
    for (path, expected_type, contents) in found {
        let what = format!("GET {path}");
        let response = exchange(&server, &get(path))?;
        expect_status(&response, &[200], &what)?;
        check!(
            response.body == contents.as_bytes(),
            "{what}: body {:?}, expected {contents:?}",
            response.text()
        );
        check!(
            content_type(&response).starts_with(expected_type),
            "{what}: Content-Type {:?}, expected {expected_type}",
            content_type(&response)
        );
    }
    for path in ["/files/missing.txt", "/files/sub", "/files/sub/missing/", "/files/nope/"] {
        expect_status(&exchange(&server, &get(path))?, &[404], &format!("GET {path}"))?;
    }
    // An empty file is a 200 with no body, and a kept-alive connection goes on after it.
    let (mut client, what) = (connect(&server)?, "GET /files/empty.txt");
    sending(&mut client, &get("/files/empty.txt"), what)?;
    let response = receive(&mut client, &server, false, what)?;
    expect_status(&response, &[200], what)?;
    check!(response.body.is_empty(), "{what}: body {:?}, expected none", response.text());
    if !response.says_close() {
        let what = "GET /hello, next on the connection that had the empty file";
        sending(&mut client, &get("/hello"), what)?;
        expect_status(&receive(&mut client, &server, false, what)?, &[200], what)?;
    }
    let response = exchange(&server, &request_and_close("HEAD", "/files/hello.txt"))?;
    expect_status(&response, &[200], "HEAD /files/hello.txt")?;
    let length = site::HELLO_TXT.len().to_string();
    check!(
        response.header("content-length") == Some(length.as_str()),
        "HEAD /files/hello.txt: Content-Length {:?}, expected {length}",
        response.header("content-length")
    );
    Ok(Outcome::Works)
}

pub fn big_file_intact(target: &Target) -> Probed {
    let size = 8 * 1024 * 1024;
    let (server, site) = with_site(target, size)?;
    // Kept alive, and on a connection the server closes after it (sent chunk by chunk, the
    // file must not be cut short when the close comes).
    for (request, what) in [
        (get("/files/big.bin"), "GET /files/big.bin"),
        (request_and_close("GET", "/files/big.bin"), "GET /files/big.bin, Connection: close"),
    ] {
        let response = exchange(&server, &request)?;
        expect_status(&response, &[200], what)?;
        if let Some(at) = first_difference(&site.big, &response.body) {
            return Err(broken(format!(
                "{what} ({size} bytes): the body differs from byte {at} on ({} bytes arrived)",
                response.body.len()
            )));
        }
    }
    Ok(Outcome::Works)
}

/// How soon a request for a FIFO must be answered: at once, in fact; the margin is for a
/// busy machine.
pub(super) const FIFO_PROMPTLY: Duration = Duration::from_secs(2);

/// Files under the root that are not regular files are 404 (the contract), and asking for
/// one must not block. Opening a FIFO for reading waits until some process opens it for
/// writing, which here nobody ever will: a server that opens first and looks at what it
/// opened afterwards hangs in `open` (chapters 1-5: the whole server; chapter 6: a pool
/// worker, for good). So, with a FIFO in the root: `GET` and `HEAD /files/fifo.txt` are
/// 404 within [`FIFO_PROMPTLY`], `/hello` is still answered, and a chapter with a
/// graceful shutdown still exits 0 on SIGTERM (a worker stuck in `open` would hold up
/// the exit).
pub fn fifo_under_root(target: &Target) -> Probed {
    let (mut server, site) = with_site(target, 0)?;
    // std cannot make a FIFO, and the suite keeps to std: mkfifo(1) can.
    let fifo = site.root.join("fifo.txt");
    match Command::new("mkfifo").arg(&fifo).status() {
        Ok(status) if status.success() => {}
        Ok(status) => return Err(broken(format!("`mkfifo {}` failed: {status}", fifo.display()))),
        Err(_) => return Err(Stop::Skipped("needs mkfifo(1) to make a FIFO, and found none")),
    }
    for method in ["GET", "HEAD"] {
        let what = format!("{method} /files/fifo.txt (a FIFO under the root)");
        let mut client = connect(&server)?;
        sending(&mut client, &request_and_close(method, "/files/fifo.txt"), &what)?;
        let sent = Instant::now();
        match client.wait_for_bytes(sent + FIFO_PROMPTLY) {
            Ok(()) => {}
            Err(ReadError::TimedOut { .. }) => {
                return Err(broken(format!(
                    "{what}: no answer within {}; did opening it wait for a writer that never \
                     comes?",
                    seconds(FIFO_PROMPTLY)
                )))
            }
            Err(error) => {
                return Err(broken(format!(
                    "{what}: {error} (no response){}",
                    server.stderr_note()
                )))
            }
        }
        let response = receive(&mut client, &server, method == "HEAD", &what)?;
        expect_status(&response, &[404], &what)?;
    }
    still_serves(&mut server, "requests for a FIFO under the root")?;

    if manifest::expectation(Capability::GracefulShutdown, target.chapter) != Expect::Yes {
        return Ok(Outcome::Works);
    }
    server.signal("TERM").map_err(broken)?;
    match server.wait_for_exit(Instant::now() + PATIENCE) {
        Some(status) => check!(
            status.code() == Some(0),
            "after requests for a FIFO, SIGTERM ended the process with {status}, expected \
             exit status 0{}",
            server.stderr_note()
        ),
        None => {
            return Err(broken(format!(
                "after requests for a FIFO, the process was still running {} s after SIGTERM \
                 (a thread stuck opening the FIFO?)",
                PATIENCE.as_secs()
            )))
        }
    }
    Ok(Outcome::Works)
}

// ANCHOR: path_traversal
/// Ways out of the root that servers have fallen for. None may answer with a byte of the
/// secret file that sits next to the root; each must be a 4xx.
pub fn path_traversal(target: &Target) -> Probed {
    let (mut server, site) = with_site(target, 0)?;
    let secret_path = site.secret_path().display().to_string();
    let encoded_absolute = secret_path.replace('/', "%2f");
    let mut attacks: Vec<String> = [
        "/files/../secret.txt",
        "/files/sub/../../secret.txt",
        "/files/./../secret.txt",
        "/files/%2e%2e/secret.txt",
        "/files/%2E%2E/secret.txt",
        "/files/.%2e/secret.txt",
        "/files/..%2fsecret.txt",
        "/files/..%2Fsecret.txt",
        "/files/%2e%2e%2fsecret.txt",
        "/files/sub%2f..%2f..%2fsecret.txt",
        "/files/..%5csecret.txt",
        "/files/..\\secret.txt",
        "/files/%252e%252e/secret.txt",
        "/files/../secret.txt%00.html",
        "/files/hello.txt%00/../../secret.txt",
        "/files/link-out",
        "/files/link-up/secret.txt",
    ]
    .iter()
    .map(|attack| attack.to_string())
    .collect();
    attacks.push(format!("/files/{secret_path}"));
    attacks.push(format!("/files{secret_path}"));
    attacks.push(format!("/files/{encoded_absolute}"));

    let mut requests: Vec<Vec<u8>> = attacks.iter().map(|path| get(path)).collect();
    // The absolute form of the target, and a raw NUL byte in it.
    requests.push(b"GET http://suite/files/../secret.txt HTTP/1.1\r\nHost: suite\r\n\r\n".to_vec());
    requests.push(b"GET /files/secret.txt\0 HTTP/1.1\r\nHost: suite\r\n\r\n".to_vec());

    for request in &requests {
        let what = first_line(request);
        let response = exchange(&server, request)?;
        let leaked =
            response.body.windows(site.secret.len()).any(|window| window == site.secret.as_bytes());
        check!(!leaked, "{what}: the response contains the secret from outside the root!");
        check!(
            (400..500).contains(&response.status),
            "{what}: expected a 4xx, got {}",
            response.summary()
        );
    }
    still_serves(&mut server, "path traversal attempts")?;
    Ok(Outcome::Works)
}
// ANCHOR_END: path_traversal

pub fn upstream_relay(target: &Target) -> Probed {
    let (server, upstream) = with_upstream(target)?;
    let cases = [
        ("/upstream/teapot", 418, upstream::TEAPOT.to_string()),
        ("/upstream/target?x=1&y=2", 200, "/target?x=1&y=2\n".to_string()),
        ("/upstream/until-close", 200, upstream::HELLO.to_string()),
        ("/upstream/", 200, upstream::HELLO.to_string()),
        // `100 Continue` first: an interim answer, to skip; the 200 after it is the answer.
        ("/upstream/continue", 200, upstream::CONTINUED.to_string()),
    ];
    for (path, status, body) in cases {
        let what = format!("GET {path}");
        let response = exchange(&server, &get(path))?;
        expect_status(&response, &[status], &what)?;
        check!(
            response.text() == body,
            "{what}: body {:?}, expected the upstream's {body:?}",
            response.text()
        );
    }
    // What the upstream was asked for: the path after /upstream, with the query.
    let mut seen = Vec::new();
    while let Some(line) = upstream.wait_for_request(Duration::ZERO) {
        seen.push(line);
    }
    check!(
        seen.iter().any(|line| line == "GET /target?x=1&y=2 HTTP/1.1"),
        "the upstream was never asked for `GET /target?x=1&y=2 HTTP/1.1`; it saw {seen:?}"
    );
    let response = exchange(&server, &request_and_close("HEAD", "/upstream/teapot"))?;
    expect_status(&response, &[418], "HEAD /upstream/teapot")?;

    no_content_ends_at_its_head(&server)?;
    // A 304 ends at its head too. Asked to close, the server must close right after that
    // head: a body after it shows as "more bytes" (see `receive`).
    let what = "GET /upstream/not-modified (a 304 with a body it must not have)";
    let response = exchange(&server, &request_and_close("GET", "/upstream/not-modified"))?;
    expect_status(&response, &[304], what)?;
    Ok(Outcome::Works)
}

/// The upstream answers 204 with a `Content-Length` and a body that is a whole second
/// response ([`upstream::SMUGGLED`]). A 204 ends at its head (RFC 9112 section 6.3), so
/// the client must get a 204 without a body or a length; relayed, those bytes would be
/// read as the answer to the client's next request. Chapters with keep-alive get that
/// next request pipelined behind, and must answer it with its own answer.
fn no_content_ends_at_its_head(server: &Server) -> Result<(), Stop> {
    let keeps_alive = manifest::expectation(Capability::KeepAlive, server.chapter) == Expect::Yes;
    let mut requests = get("/upstream/no-content");
    if keeps_alive {
        requests.extend(get("/hello"));
    }
    let what = "GET /upstream/no-content (a 204 with a body it must not have)";
    let mut client = connect(server)?;
    sending(&mut client, &requests, what)?;
    let response = receive(&mut client, server, false, what)?;
    expect_status(&response, &[204], what)?;
    check!(
        response.header("content-length").is_none(),
        "{what}: the 204 has Content-Length {:?}; RFC 9110 forbids one, and a 204 has no \
         body to measure",
        response.header("content-length").unwrap_or_default()
    );
    if keeps_alive {
        let what = "GET /hello, pipelined behind GET /upstream/no-content";
        let response = receive(&mut client, server, false, what)?;
        expect_status(&response, &[200], what)?;
        check!(
            response.body == HELLO,
            "{what}: body {:?}; was the 204's body relayed and taken for this answer?",
            response.text()
        );
    }
    Ok(())
}

/// Well under the upstream's 5 s: how long a 502 for an endless response head may take.
/// The head is over 8 KiB after the first read, so a chapter answers in milliseconds; the
/// rest is margin for a busy machine.
pub(super) const QUICKLY: Duration = Duration::from_secs(3);

pub fn upstream_errors(target: &Target) -> Probed {
    let (mut server, upstream) = with_upstream(target)?;
    expect_status(
        &exchange(&server, &get("/upstream/garbage"))?,
        &[502],
        "GET /upstream/garbage (the upstream answers with no HTTP)",
    )?;
    still_serves(&mut server, "an upstream that answered garbage")?;
    // We never ask the upstream to switch protocols, so what follows a 101 is not HTTP.
    expect_status(
        &exchange(&server, &get("/upstream/switching"))?,
        &[502],
        "GET /upstream/switching (the upstream answers 101 Switching Protocols)",
    )?;
    endless_head(&server, &upstream)?;
    still_serves(&mut server, "an upstream that sent 16 MiB of response head")?;

    let refusing = upstream::refusing_address()
        .map_err(|error| broken(format!("cannot find a closed port: {error}")))?;
    let server = target.start(Options { upstream: Some(refusing), ..Options::default() })?;
    expect_status(
        &exchange(&server, &get("/upstream/hello"))?,
        &[502],
        "GET /upstream/hello with an upstream that refuses connections",
    )?;

    let server = target.server()?;
    expect_status(
        &exchange(&server, &get("/upstream/hello"))?,
        &[404],
        "GET /upstream/hello without --upstream",
    )?;
    Ok(Outcome::Works)
}

/// An upstream that sends 16 MiB of response head without its end: a 502 within
/// [`QUICKLY`], because a head over 8 KiB can never be relayed. Reading all 16 MiB, and
/// searching the whole buffer for the blank line after every read, took seconds. From
/// chapter 4 on, the upstream must not hold anyone up meanwhile either: a `/hello` sent
/// while it runs is answered promptly.
fn endless_head(server: &Server, upstream: &Upstream) -> Result<(), Stop> {
    let what = "GET /upstream/endless-head (16 MiB of response head, no blank line)";
    // Forget the earlier requests, so the next one the upstream reports is this one.
    while upstream.wait_for_request(Duration::ZERO).is_some() {}
    let mut client = connect(server)?;
    let started = Instant::now();
    sending(&mut client, &get("/upstream/endless-head"), what)?;
    if manifest::expectation(Capability::SleepAndUpstream, server.chapter) == Expect::Yes {
        check!(
            upstream.wait_for_request(PATIENCE).is_some(),
            "{what}: the server never sent the upstream (its --upstream) a request"
        );
        if let Meanwhile::Waiting { .. } = hello_meanwhile(server)? {
            return Err(broken(format!(
                "GET /hello from another client got no answer within {} while the chapter \
                 read {what}",
                seconds(PROMPTLY)
            )));
        }
    }
    let response = receive(&mut client, server, false, what)?;
    let took = started.elapsed();
    expect_status(&response, &[502], what)?;
    check!(
        took < QUICKLY,
        "{what}: the 502 took {}, expected it within {}: the head is over 8 KiB after the \
         first read",
        seconds(took),
        seconds(QUICKLY)
    );
    Ok(())
}

/// The contract's upstream timeout: an upstream that has not answered by then is a 504.
pub(super) const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);
/// The earliest a 504 may come: the timeout, less a margin for the two clocks.
pub(super) const UPSTREAM_TIMEOUT_EARLIEST: Duration = Duration::from_millis(4500);

/// An upstream that never answers: 504 after the contract's 5 s, not much sooner or later.
pub fn upstream_timeout(target: &Target) -> Probed {
    let (server, _upstream) = with_upstream(target)?;
    let mut client = connect(&server)?;
    let started = Instant::now();
    let what = "GET /upstream/hang (the upstream never answers)";
    sending(&mut client, &get("/upstream/hang"), what)?;
    // `receive` waits PATIENCE for an answer; the first 4.5 s of the wait are the point.
    client
        .wait_for_bytes(started + UPSTREAM_TIMEOUT + super::PATIENCE)
        .map_err(|error| broken(format!("{what}: {error}")))?;
    let response = receive(&mut client, &server, false, what)?;
    let took = started.elapsed();
    expect_status(&response, &[504], what)?;
    check!(
        took >= UPSTREAM_TIMEOUT_EARLIEST,
        "{what}: 504 after only {}, expected about 5 s",
        seconds(took)
    );
    Ok(Outcome::Works)
}
