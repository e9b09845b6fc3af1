//! Probes for `/files/`: files served whole and typed, big files intact, a FIFO under the
//! root refused at once, and nothing outside the root served, however the path is spelled.

use std::process::Command;
use std::time::{Duration, Instant};

use super::routes::content_type;
use crate::client::ReadError;
use crate::manifest::{self, Capability, Expect};
use crate::probes::checklist::Applies::With;
use crate::probes::checklist::{rule, rule_if, secs, Rule, ROUTES, SHUTDOWN};
use crate::probes::{
    broken, check, connect, exchange, expect_status, first_line, get, receive, request_and_close,
    seconds, sending, still_serves, with_site, Outcome, Probed, Stop, Target, PATIENCE,
};
use crate::probes::{probe, Module, Probe};
use crate::site::{self, first_difference};

/// What this module brings the suite: its checks and its rules on the checklist (the row
/// is `basics/mod.rs`'s).
pub(crate) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("files", Capability::Basics, files),
    probe("big_file_intact", Capability::Basics, big_file_intact),
    probe("path_traversal", Capability::Basics, path_traversal),
    probe("fifo_under_root", Capability::Basics, fifo_under_root),
];

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
pub(crate) const FIFO_PROMPTLY: Duration = Duration::from_secs(2);

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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    vec![
        rule("files", ROUTES,
            "`GET /files/PATH`: the file under `--root`, byte for byte, typed by its extension: \
             `text/plain` (`.txt`), `text/html` (`.html`), `text/css` (`.css`), \
             `application/json` (`.json`), `application/octet-stream` for any other (a \
             `; charset=...` after the type is fine). `/files/` and `/files/sub/` serve that \
             folder's `index.html`; `%20` in the path is a space.".to_string()),
        rule("files", ROUTES,
            "404 for a missing file, for a folder named without its slash (`/files/sub`: no \
             redirect), and for a missing folder with one. An empty file is a 200 with no body, \
             and a kept-alive connection goes on after it. `HEAD /files/hello.txt` gives the \
             file's length.".to_string()),
        rule("big_file_intact", ROUTES,
            "A big file arrives whole and intact, on a kept-alive connection and on one that \
             asked for `Connection: close` (the close must not cut it short).".to_string()),
        rule("fifo_under_root", ROUTES, format!(
            "A name under the root that is not a regular file (a FIFO) is a 404, to `GET` and \
             `HEAD`, within {}: look at what a name is before you open it, since opening a FIFO \
             waits for a writer that never comes.",
            secs(FIFO_PROMPTLY))),
        rule("path_traversal", ROUTES,
            "Nothing outside `--root` is ever served, and every attempt is a 4xx: `..` and `.` \
             segments, `%2e%2e` in either case, encoded slashes and backslashes (`%2f`, `%5c`, \
             a raw `\\`), a double-encoded `%252e`, NUL (raw or `%00`), absolute paths, the \
             absolute form of the target, and symbolic links under the root that lead out of \
             it (to a file, or to the folder above).".to_string()),
        rule_if(With(GracefulShutdown), "fifo_under_root", SHUTDOWN, format!(
            "After requests for a FIFO, SIGTERM ends the process with exit status 0 within {}.",
            secs(PATIENCE))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![secs(FIFO_PROMPTLY)]
}
