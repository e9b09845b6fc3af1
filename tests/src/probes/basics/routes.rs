//! Probes for the demo application's routes and statuses: every row of the contract's
//! route table, `HEAD`, 404, 405 and 501. Every chapter must pass all of them.

use std::time::{Duration, Instant};

use super::corpus::BODY_LIMIT;
use crate::client::Response;
use crate::manifest::Capability;
use crate::probes::checklist::{count, listed, rule, size, Rule, ROUTES};
use crate::probes::{
    broken, check, connect, exchange, expect_status, first_line, get, post, receive,
    request_and_close, seconds, sending, stats_value, still_serves, Outcome, Probed, Stop, Target,
    HELLO,
};
use crate::probes::{probe, Module, Probe};
use crate::site::{self, first_difference};
use shared::app::MAX_SLEEP_MS;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("index_page", Capability::Basics, index_page),
    probe("hello", Capability::Basics, hello),
    probe("sleep_route", Capability::Basics, sleep_route),
    probe("stats_route", Capability::Basics, stats_route),
    probe("head_requests", Capability::Basics, head_requests),
    probe("not_found", Capability::Basics, not_found),
    probe("method_not_allowed", Capability::Basics, method_not_allowed),
    probe("unknown_method", Capability::Basics, unknown_method),
    probe("echo", Capability::Basics, echo),
    probe("echo_needs_length", Capability::Basics, echo_needs_length),
    probe("echo_too_large", Capability::Basics, echo_too_large),
];

pub(crate) fn content_type(response: &Response) -> &str {
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
pub(crate) const BAD_SLEEPS: [&str; 6] =
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
/// The kernel's limits on a file name and on a path (Linux's `NAME_MAX` and `PATH_MAX`),
/// which the two names [`not_found`] asks for exceed.
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4096;

pub(crate) const NOT_FOUND: [&str; 6] =
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
pub(crate) const NOT_ALLOWED: [(&str, &str, &str); 9] = [
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
pub(crate) const UNKNOWN_METHODS: [&str; 4] = ["BREW", "FOO", "get", "M-SEARCH"];

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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    
    let not_allowed: Vec<String> =
        NOT_ALLOWED.iter().map(|(method, path, _)| format!("{method} {path}")).collect();
    let bad_sleeps: Vec<String> = BAD_SLEEPS.iter().map(|ms| format!("ms={ms}")).collect();
    vec![
        rule("index_page", ROUTES,
            "`GET /`: 200, `text/html`, a page that mentions `/hello`, `/sleep`, `/files/`, \
             `/echo`, `/upstream/` and `/stats`.".to_string()),
        rule("hello", ROUTES,
            "`GET /hello`: 200, `text/plain`, the body exactly `Hello, world!` and a newline. \
             The same for `/hello?ignored=yes` (a query is no part of the path), the absolute \
             form `GET http://suite/hello HTTP/1.1`, and `GET /hello HTTP/1.0` with no `Host`.".to_string()),
        rule("sleep_route", ROUTES, format!(
            "`GET /sleep?ms=N`: 200 after at least N ms, the body `slept N ms` and a newline. \
             400 for {}, and for `/sleep` with no `ms`: N is a whole number from 0 to {}.",
            listed(&bad_sleeps), MAX_SLEEP_MS)),
        rule("stats_route", ROUTES,
            "`GET /stats`: 200, `text/plain`, a line `KEY N` (one space, N a whole number) for \
             each of `connections_open`, `requests_served`, `loop_turns`, `timers_pending` and \
             `jobs_queued` (0 for what your server does not have); more lines may follow. \
             `requests_served` counts an answered `GET /hello`.".to_string()),
        rule("head_requests", ROUTES,
            "`HEAD` on `/`, `/hello`, `/stats`, `/sleep?ms=1`, `/sleep?ms=x` and `/nowhere`: \
             the status and headers `GET` gives (all but `Date`, and `/stats`' \
             `Content-Length`: the same `Content-Length` as the body `GET` sends), and not one \
             byte of body. `HEAD /echo`: 405.".to_string()),
        rule("not_found", ROUTES, format!(
            "404 for {} (a folder-like route without its slash is no route), and for `OPTIONS *`.",
            listed(&NOT_FOUND))),
        rule("not_found", ROUTES, format!(
            "404 for a file name the kernel finds too long (`ENAMETOOLONG`), as nginx answers: \
             `GET /files/` with one name of over {} bytes, and with a path of over {} bytes \
             made of shorter names (the head stays under its limit).",
            NAME_MAX, count(PATH_MAX))),
        rule("method_not_allowed", ROUTES, format!(
            "405 for a known method on a route that does not take it, with an `Allow` that \
             lists exactly the route's methods, in any order: `GET, HEAD` for every route but \
             `/echo`, `POST` for `/echo`. Checked with {}; the server runs without `--upstream` \
             there, and `/upstream/` is still a route.",
            listed(&not_allowed))),
        rule("unknown_method", ROUTES, format!(
            "501 for a method nobody knows: {} (methods are case-sensitive). `PUT`, `DELETE` \
             and `PATCH` are known methods: 405 on these routes, not 501.",
            listed(&UNKNOWN_METHODS))),
        rule("echo", ROUTES, format!(
            "`POST /echo`: 200 with the request's body, byte for byte: text, an empty body, \
             every byte value 0 to 255, and a body of exactly {} (the limit is allowed).",
            size(BODY_LIMIT as u64))),
        rule("echo_needs_length", ROUTES,
            "`POST /echo` without `Content-Length` (and without `Transfer-Encoding`: a chunked \
             one is in the corpus): 411, with or without `Connection: close`. Such a request \
             has no body, so the connection may go on after it (the chapters with keep-alive \
             keep it), or close, saying so.".to_string()),
        rule("echo_too_large", ROUTES, format!(
            "`POST /echo` with a `Content-Length` over {}: 413 with `Connection: close`, decided \
             from the head alone: at once when no body follows, and without waiting for the \
             rest when part of it does. The next client is served.",
            size(BODY_LIMIT as u64))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        listed(&BAD_SLEEPS),
        MAX_SLEEP_MS.to_string(),
        NAME_MAX.to_string(),
        count(PATH_MAX),
        size(BODY_LIMIT as u64),
    ]
}
