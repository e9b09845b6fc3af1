//! Probes for `GET /upstream/PATH`: relayed as RFC 9112 frames it (1xx skipped, 204 and
//! 304 without a body), 502 for an upstream that is refused, speaks no HTTP or sends a head
//! that never ends, and 504 for one that never answers.

use std::time::{Duration, Instant};

use super::corpus::HEAD_LIMIT;
use crate::manifest::{self, Capability, Expect};
use crate::probes::checklist::Applies::With;
use crate::probes::checklist::{rule, rule_if, secs, size, Rule, UPSTREAM};
use crate::probes::{
    broken, check, connect, exchange, expect_status, get, hello_meanwhile, receive,
    request_and_close, seconds, sending, still_serves, with_upstream, Meanwhile, Outcome, Probed,
    Stop, Target, HELLO, PATIENCE, PROMPTLY,
};
use crate::probes::{probe, Module, Probe};
use crate::server::{Options, Server};
use crate::upstream::{self, Upstream};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("upstream_relay", Capability::Basics, upstream_relay),
    probe("upstream_errors", Capability::Basics, upstream_errors),
    probe("upstream_timeout", Capability::Basics, upstream_timeout),
];

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
pub(crate) const QUICKLY: Duration = Duration::from_secs(3);

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
pub(crate) const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);
/// The earliest a 504 may come: the timeout, less a margin for the two clocks.
pub(crate) const UPSTREAM_TIMEOUT_EARLIEST: Duration = Duration::from_millis(4500);

/// An upstream that never answers: 504 after the contract's 5 s, not much sooner or later.
pub fn upstream_timeout(target: &Target) -> Probed {
    let (server, _upstream) = with_upstream(target)?;
    let mut client = connect(&server)?;
    let started = Instant::now();
    let what = "GET /upstream/hang (the upstream never answers)";
    sending(&mut client, &get("/upstream/hang"), what)?;
    // `receive` waits PATIENCE for an answer; the first 4.5 s of the wait are the point.
    client
        .wait_for_bytes(started + UPSTREAM_TIMEOUT + crate::probes::PATIENCE)
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

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    use Capability::*;
    vec![
        rule("upstream_relay", UPSTREAM,
            "`GET /upstream/PATH?QUERY` sends the upstream the request line `GET /PATH?QUERY \
             HTTP/1.1` (the query goes along; `/upstream/` asks for `/`), and relays its status \
             and body: a 418 with its body, a 200 whose body ends when the upstream closes (it \
             sends no `Content-Length`), and the 200 that follows an interim `100 Continue` \
             (skip every 1xx). `HEAD /upstream/...` gets the status without a body.".to_string()),
        rule("upstream_relay", UPSTREAM,
            "Past that request line, no check looks at what you send the upstream: end the \
             head with its blank line, and the headers are yours (the chapters send `Host` and \
             `Connection: close`). Nor at the method a `HEAD /upstream/...` uses: the check's upstream \
             answers `GET` and `HEAD` alike, with a body (the chapters ask with `GET`). It \
             answers once and closes, never chunked: decoding a chunked answer is not checked \
             (the chapters answer 502). It types every body it sends; the relayed body needs a \
             `Content-Type` all the same, its or yours, and no check compares the two (the \
             chapters relay the upstream's, and say `application/octet-stream` when it sends \
             none).".to_string()),
        rule("upstream_relay", UPSTREAM,
            "An upstream 204 is relayed as a 204 with no body and no `Content-Length`, though \
             the upstream sent both; a 304, without a body, with or without a `Content-Length` \
             (the check reads no body after a 304, whatever its headers say; the chapters send \
             none). (Relayed, those bytes would be read as the answer to the client's next \
             request.)".to_string()),
        rule("upstream_errors", UPSTREAM,
            "502 when the upstream answers with something that is not HTTP, answers `101 \
             Switching Protocols` (nobody asked it to switch), or refuses the connection; 404 \
             for `/upstream/...` when there is no `--upstream`.".to_string()),
        rule("upstream_errors", UPSTREAM, format!(
            "502 within {} for an upstream that sends a response head that never ends: a head \
             over {} can never be relayed, so stop reading there.",
            secs(QUICKLY), size(HEAD_LIMIT as u64))),
        rule("upstream_timeout", UPSTREAM, format!(
            "504 for an upstream that never answers, after {} (not before {}).",
            secs(UPSTREAM_TIMEOUT), secs(UPSTREAM_TIMEOUT_EARLIEST))),
        rule_if(With(KeepAlive), "upstream_relay", UPSTREAM,
            "A `GET /hello` pipelined behind a `GET /upstream/...` that the upstream answered \
             with a 204 gets its own answer.".to_string()),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        secs(QUICKLY),
        size(HEAD_LIMIT as u64),
        secs(UPSTREAM_TIMEOUT),
        secs(UPSTREAM_TIMEOUT_EARLIEST),
    ]
}
