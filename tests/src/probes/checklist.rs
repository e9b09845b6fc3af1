//! The checklist of the book's page on a reader's own server: every rule the probes hold a
//! server to, chapter by chapter, each with the probe that checks it, and every row of the
//! conformance corpus.
//!
//! It lives beside the probes so that every number it quotes (a bound, a timeout, a limit,
//! how many clients) is the probes' own constant, not a copy that could drift: change a
//! bound in a probe and the page changes with it. `cargo run -p suite -- --checklist`
//! prints it; `book/src/generated/checklist.md` is that output, and a test fails when the
//! two differ. Other tests here fail when a probe has no rule on the list, and when the
//! hand-written part of the page quotes a number the checklist does not.
//!
//! The chapters a rule applies to come from the manifest: a rule of a probe that checks
//! "keep-alive and pipelining" applies from the first chapter that has keep-alive, and a
//! rule can name another row of the table when part of a probe depends on it (the probe
//! that serves a FIFO sends SIGTERM only to chapters with a graceful shutdown).

use std::fmt::Write;
use std::time::Duration;

use super::concurrency::{
    flag_seconds, BEHIND, GRACE_PERIOD, HEADER_PROBE_KEEP_ALIVE, HOLDS_MS, NEWCOMERS,
    NEWCOMERS_EVERY, NEWCOMER_ANSWERED_WITHIN, ODD_SLEEPS_MS, ODD_TIMEOUT, PROMPT_EXIT,
    READY_REQUESTS, READY_SLEEP, REFUSED_WITHIN, SLEEP_AT_SHUTDOWN, TIMEOUT_EARLY, TIMEOUT_SLACK,
    TIMEOUT_UNDER_TEST, WAIT_CPU_BOUND, WAIT_TURNS_BOUND,
};
use super::cores::{CONNECTIONS, REQUESTS_EACH, SERVING_SHARE, THREADS};
use super::corpus::{self, Answer, BODY_LIMIT, HEADER_LINES_LIMIT, HEAD_LIMIT};
use super::departures::{
    AFTER_THE_LINE_WITHIN, DESCRIPTORS_BACK_WITHIN, FETCH, FIRST_SLEEP, FULL_PIPELINE_BYTES,
    FULL_READ, FULL_SLEEP_MS, GONE_WITHIN, IN_LINE, IN_LINE_PIPELINED, PIPELINED_FETCHES,
    PIPELINED_SLEEP_MS, PIPELINERS, SLEEPERS, SLEEPERS_SLEEP, UPSTREAM_WATCH,
};
use super::faults::{STRAY, UNREAD_STDERR_REQUESTS, URGENT_ANSWER_WITHIN, URGENT_SLEEP_MS};
use super::floods::{
    BURST_BODY, BURST_CLIENTS, BURST_GROWTH_BOUND, BURST_OF, BURST_TURNS_BOUND, BUSY_ROUND,
    BYTE_EVERY, COST_BEHIND_A_WAIT_BOUND, CPU_WINDOW, DOWNLOADERS, DOWNLOAD_BYTES,
    DOWNLOAD_GROWTH_BOUND, ECHO_BODY, ECHO_CLIENTS, ECHO_GROWTH_BOUND, FLOOD_CLIENTS,
    FLOOD_FD_LIMIT, FLOOD_OTHERS, FLOOD_OTHERS_EVERY, FLOOD_PROMPTLY, FLOOD_WARM_UP,
    GIVEN_BACK_WITHIN, IDLE_BATCH, IDLE_CLIENTS, IDLE_MEMORY_BOUND, LAZY_DESCRIPTORS,
    MAX_CPU_WHILE_FLOODED, PIPELINE_BYTES, PIPELINE_GROWTH_BOUND, PUSHED_BACK_AFTER, ROUND_BYTES,
    SLOWDOWN_BOUND, SLOWLORIS_CLIENTS, SLOWLORIS_FD_LIMIT, SLOWLORIS_HEADER_TIMEOUT,
    SLOWLORIS_PATIENCE, STORM_BODY, STORM_CLIENTS, STORM_CLIENTS_ONE_AT_A_TIME,
    STORM_GIVEN_BACK_WITHIN, STORM_GROWTH_BOUND, TEN_THOUSAND_TIMEOUTS, TRICKLE_FOR, TRICKLE_PIECE,
    WAIT_IN_FRONT_MS,
};
use super::routes::{
    BAD_SLEEPS, FIFO_PROMPTLY, IPV6_HOSTS, NOT_ALLOWED, NOT_FOUND, QUICKLY, UNKNOWN_METHODS,
    UPSTREAM_TIMEOUT, UPSTREAM_TIMEOUT_EARLIEST,
};
use super::{PATIENCE, PROMPTLY, WHOLE_BODY_WITHIN};
use crate::chapters::CHAPTERS;
use crate::manifest::{self, Capability, Expect};
use crate::server::{FIRST_START_TIMEOUT, START_TIMEOUT};

/// Which chapters a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applies {
    /// Every chapter.
    Always,
    /// The chapters that have this capability.
    With(Capability),
    /// The chapters that lack it.
    Without(Capability),
}

impl Applies {
    /// The numbers of the chapters it applies to.
    pub fn chapters(self) -> Vec<u8> {
        CHAPTERS
            .iter()
            .filter(|chapter| match self {
                Applies::Always => true,
                Applies::With(capability) => {
                    manifest::expectation(capability, chapter) == Expect::Yes
                }
                Applies::Without(capability) => {
                    manifest::expectation(capability, chapter) != Expect::Yes
                }
            })
            .map(|chapter| chapter.number)
            .collect()
    }
}

/// One rule a server is held to.
#[derive(Debug)]
pub struct Rule {
    /// The probe that checks it, or [`EVERY_CHECK`].
    pub probe: &'static str,
    pub applies: Applies,
    /// What it is about, for a heading: "The routes".
    pub topic: &'static str,
    /// The rule, in Markdown.
    pub text: String,
}

/// A rule that every probe checks (the first line, the framing of every response).
pub const EVERY_CHECK: &str = "";

/// A rule of `probe`, for the chapters that have the probe's capability.
fn rule(probe: &'static str, topic: &'static str, text: String) -> Rule {
    let applies = match super::find(probe).map(|probe| probe.capability) {
        Some(Capability::Basics) | None => Applies::Always,
        Some(capability) => Applies::With(capability),
    };
    Rule { probe, applies, topic, text }
}

/// A rule of `probe` for the chapters `applies` says.
fn rule_if(applies: Applies, probe: &'static str, topic: &'static str, text: String) -> Rule {
    Rule { probe, applies, topic, text }
}

/// "5 s", "0.5 s", "1.5 s".
fn secs(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// "8 KiB", "1 MiB", "300,000 bytes".
fn size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes % KIB == 0 {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{} bytes", count(bytes as usize))
    }
}

/// "10,000".
fn count(number: usize) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// "`a`, `b` and `c`".
fn listed<T: AsRef<str>>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(|item| format!("`{}`", item.as_ref())).collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

// The topics: headings within a group of chapters, in the order of [`TOPICS`].
const STARTING: &str = "Starting, and the command line";
const RESPONSES: &str = "Every response";
const ROUTES: &str = "The routes";
const UPSTREAM: &str = "The upstream";
const READING: &str = "Reading requests";
const FAULTS: &str = "Odd clients and faults";
const FLOODS: &str = "Floods and memory";
const SHUTDOWN: &str = "Signals and shutdown";
const CONNECTIONS_TOPIC: &str = "Connections";
const WAITING: &str = "Waiting without blocking";
const DEPARTURES: &str = "Clients that leave";
const TIMEOUTS: &str = "Timeouts";
const LOOPS: &str = "Loops and threads";
const TOPICS: [&str; 13] = [
    STARTING,
    RESPONSES,
    CONNECTIONS_TOPIC,
    ROUTES,
    UPSTREAM,
    READING,
    WAITING,
    TIMEOUTS,
    DEPARTURES,
    FAULTS,
    FLOODS,
    SHUTDOWN,
    LOOPS,
];

// ANCHOR: rules
/// Every rule, grouped on the page by the chapters it applies to, then by topic.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
pub fn rules() -> Vec<Rule> {
    use Applies::{With, Without};
    use Capability::*;
    let timeout = TIMEOUT_UNDER_TEST;
    let too_early = secs(timeout - TIMEOUT_EARLY);
    let too_late = secs(timeout + TIMEOUT_SLACK);
    let not_allowed: Vec<String> =
        NOT_ALLOWED.iter().map(|(method, path, _)| format!("{method} {path}")).collect();
    let bad_sleeps: Vec<String> = BAD_SLEEPS.iter().map(|ms| format!("ms={ms}")).collect();
    let stray: Vec<String> = STRAY.iter().map(|name| format!("SIG{name}")).collect();
    let ipv6: Vec<String> = IPV6_HOSTS.iter().map(|host| format!("--host {host}")).collect();
    vec![
        // Every chapter.
        rule(EVERY_CHECK, STARTING, format!(
            "The first line on standard output is exactly `listening on http://HOST:PORT`: the \
             host as given, and the port the system chose for `--port 0`. Flush it at once, \
             within {} of the start ({} the first time the runner starts your command, to leave \
             time for a compile).",
            secs(START_TIMEOUT), secs(FIRST_START_TIMEOUT))),
        rule(EVERY_CHECK, STARTING, format!(
            "Listen with a backlog of a thousand or more: a check opens up to {} connections at \
             once before it waits for the server to take them in, and while a chapter 1 server \
             serves one client, {} others may wait in the backlog.",
            count(IDLE_BATCH), count(SLOWLORIS_CLIENTS))),
        rule("command_line", STARTING, format!(
            "`--help` prints a usage with the word `usage` in it (in lower case) on standard \
             output and exits 0, within {}.",
            secs(PATIENCE))),
        rule("command_line", STARTING,
            "`--bogus`, `--port seventy`, and `--port` with no value after it: each exits 2, \
             with an error and the usage (the word `usage` again) on standard error, and no \
             stack trace or panic.".to_string()),
        rule("command_line", STARTING,
            "Started with `--host 127.0.0.1 --port P` where another server already listens on \
             P: exactly one line on standard error, and exit status 1.".to_string()),
        rule("ipv6_host", STARTING, format!(
            "{}: both listen on the IPv6 loopback, the first line says `listening on \
             http://[::1]:PORT` (brackets either way), and `GET /hello` to it is answered. \
             (Skipped where the machine has no IPv6.)",
            listed(&ipv6))),
        rule(EVERY_CHECK, RESPONSES,
            "The status line is `HTTP/1.1 NNN reason`, in answer to HTTP/1.0 requests too; \
             then `Name: value` header lines.".to_string()),
        rule(EVERY_CHECK, RESPONSES,
            "Exactly one `Server` header, not empty (name your server as you like).".to_string()),
        rule(EVERY_CHECK, RESPONSES,
            "One `Content-Length` on every answer but those to `HEAD`, and a 204 or a 304, \
             which never have a body. A `Content-Type` whenever there is a body (for `HEAD`: \
             whenever the `Content-Length` is not 0), error pages included.".to_string()),
        rule(EVERY_CHECK, RESPONSES, format!(
            "`Connection: close` on every answer after which the server closes; then the \
             connection ends, with nothing more sent, within {}. Closing without having said so \
             fails the check that sees it, but for these closes: a client that half-closed, \
             once it has all its answers, whether they said `Connection: close` or not \
             (`half_close`); at SIGTERM, a connection whose answer had sent its head before \
             the signal, once the rest is sent (`graceful_shutdown`), and one idle after its \
             answer (`prompt_shutdown`); and one whose timeout ran out (the *Timeouts* rules).",
            secs(PATIENCE))),
        rule("index_page", ROUTES,
            "`GET /`: 200, `text/html`, a page that mentions `/hello`, `/sleep`, `/files/`, \
             `/echo`, `/upstream/` and `/stats`.".to_string()),
        rule("hello", ROUTES,
            "`GET /hello`: 200, `text/plain`, the body exactly `Hello, world!` and a newline. \
             The same for `/hello?ignored=yes` (a query is no part of the path), the absolute \
             form `GET http://suite/hello HTTP/1.1`, and `GET /hello HTTP/1.0` with no `Host`.".to_string()),
        rule("sleep_route", ROUTES, format!(
            "`GET /sleep?ms=N`: 200 after at least N ms, the body `slept N ms` and a newline. \
             400 for {}, and for `/sleep` with no `ms`: N is a whole number from 0 to 10000.",
            listed(&bad_sleeps))),
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
        rule("not_found", ROUTES,
            "404 for a file name the kernel finds too long (`ENAMETOOLONG`), as nginx answers: \
             `GET /files/` with one name of over 255 bytes, and with a path of over 4,096 bytes \
             made of shorter names (the head stays under its limit).".to_string()),
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
        rule("conformance_corpus", READING, format!(
            "Every row of [the conformance corpus](#the-conformance-corpus-row-by-row) gets its \
             answer: {} requests that break, or stretch, RFC 9112's rules, each on a new \
             connection.",
            corpus::corpus().len())),
        rule("conformance_corpus", READING, format!(
            "The limits: a request head (the request line, the header lines, and any empty \
             lines before the request line) over {} is refused with 431 (414 will do for a \
             target too long by itself; 400 for a head that is all empty lines), and so is a \
             head with more than {} header lines, `Host` included.",
            size(HEAD_LIMIT as u64), HEADER_LINES_LIMIT)),
        rule("conformance_corpus", READING,
            "A refused request is answered with `Connection: close`, and the connection then \
             ends: a request sent right behind it, in the same write, is never answered. A \
             request that is answered leaves the connection usable: the request behind it is \
             answered next.".to_string()),
        rule("conformance_corpus", READING, format!(
            "A head that can never become a valid request is refused as soon as the bytes that \
             make it so arrive, within {}, while the client waits with the head unfinished: a \
             bad byte in the method, a bad version, a stray CR or bare LF, whitespace before a \
             colon, obs-fold, a `Content-Length` that is not digits or is over the body limit, \
             a header line past the {}th, a head past {}.",
            secs(PROMPTLY), HEADER_LINES_LIMIT, size(HEAD_LIMIT as u64))),
        rule("trickled_request", READING,
            "A request sent one byte per write, stopping between each CR and its LF, is \
             answered as if it came whole: `GET /hello`, and `POST /echo` with its body.".to_string()),
        rule("body_split_across_writes", READING, format!(
            "A big `POST /echo` sent in five writes (cut inside a header name, at the end of the \
             head, and twice in the body) is echoed whole. Read what arrives as it arrives: the \
             check waits until the server has read each piece (by the kernel's count, up to \
             {}) before it sends the next.",
            secs(PATIENCE))),
        rule("client_resets_mid_response", FAULTS,
            "Clients that reset their connection in the middle of a big `POST /echo` answer, so \
             that the server's writes fail (EPIPE, ECONNRESET), cost that connection only: the \
             process lives, and serves the next client.".to_string()),
        rule("clients_that_vanish", FAULTS,
            "Clients that connect and leave at every stage (before a byte, mid request line, \
             after a whole request, during a `/sleep`, mid body) cost nothing.".to_string()),
        rule("serves_after_abuse", FAULTS, format!(
            "After the corpus, resets and vanishing clients on one server, it still serves (a \
             `GET /hello`), and within {} of that, `/stats` says `connections_open` 1 or less \
             (the connection asking): no connection is leaked. A connection counts until \
             it is really closed, so one still lingering after a refusal (your side shut, \
             waiting for the client's close) must be gone within those {} too.",
            secs(PATIENCE), secs(PATIENCE))),
        rule("half_close", FAULTS, format!(
            "A client that shuts its sending side after its request (a half-close) still gets \
             its whole answer: `GET /hello`, a big `POST /echo`, a file bigger than the socket \
             buffers. End of file means no more requests, not that nobody is listening. Once \
             the answers are sent, the server closes within {}.",
            secs(PATIENCE))),
        rule_if(With(KeepAlive), "half_close", FAULTS,
            "Two requests pipelined before the half-close both get their answers.".to_string()),
        rule("file_removed_mid_response", FAULTS,
            "A file removed, and another written under its name, while a slow client downloads \
             it: that client gets the original bytes, or a clean early close, never a mixture. \
             The next request for the name gets the new file, and once that is removed, a 404: \
             keep no file contents between requests.".to_string()),
        rule("stray_signals", FAULTS, format!(
            "{}, sent while the server waits for clients, sleeps in a `/sleep`, waits for the \
             rest of a head, and waits to write a big answer: the process lives, and every \
             request in flight is answered. (Ignore SIGPIPE; a call interrupted with EINTR is \
             tried again.)",
            listed(&stray).replace("`SIGSTOP` and `SIGCONT`", "`SIGSTOP` then `SIGCONT`"))),
        rule("urgent_byte", FAULTS, format!(
            "`GET /sleep?ms={}`, then one byte of TCP urgent data (`MSG_OOB`): the answer still \
             comes within {}, and the server still serves. An urgent byte can make a socket \
             poll readable with nothing for a plain read: a read that waits there must not \
             hold the answer.",
            URGENT_SLEEP_MS, secs(URGENT_ANSWER_WITHIN))),
        rule("closed_stderr", FAULTS,
            "Started with `--trace`, and with nobody reading its standard error any more (every \
             write to it fails: EPIPE), the server goes on: `GET /hello` 200, one without \
             `Host` 400, a missing file 404, a `/sleep` 200. Logging never stops the server.".to_string()),
        rule("unread_stderr", FAULTS, format!(
            "Started with `--trace`, and with its standard error a pipe that is never read (once \
             the pipe's buffer is full, a write to it waits until someone reads), the server \
             answers {} `GET /hello` one after the other, each within {}, and still serves. A \
             line that cannot be written at once is dropped (and counted), never waited for.",
            count(UNREAD_STDERR_REQUESTS), secs(PATIENCE))),
        rule("descriptor_exhaustion", FLOODS, format!(
            "Started with at most {} open files (`ulimit -n`) and flooded with {} connections, \
             so that `accept` fails (EMFILE) while more clients wait: the server uses at most {} \
             of CPU time in {} (no busy loop around a listener it cannot accept from), serves \
             `GET /hello` once the flood leaves, and within {} is back to the descriptors it had \
             at rest (or at most {} more).",
            FLOOD_FD_LIMIT, FLOOD_CLIENTS, secs(MAX_CPU_WHILE_FLOODED), secs(CPU_WINDOW), secs(PATIENCE), LAZY_DESCRIPTORS)),
        rule("pipelined_without_reading", FLOODS, format!(
            "A client pipelines {} of `GET /hello` and never reads an answer: the server's peak \
             memory (`VmHWM`) stays less than {} over its resident memory at rest. Stop reading \
             from a client while its answers pile up, or close it: the check's writes then \
             stall, and once one has gone {} without progress, the check stops sending and \
             measures. Then a second client, with a small receive buffer, sends {} requests at a \
             time every half millisecond for {}, reading nothing; both still connected, `GET \
             /hello` from another is answered within {}. What a client you are not reading sends \
             must not hold what others need (receive buffers a loop shares). (Started with \
             `--threads 1` where that is accepted.)",
            size(PIPELINE_BYTES as u64), size(PIPELINE_GROWTH_BOUND), secs(PUSHED_BACK_AFTER),
            TRICKLE_PIECE, secs(TRICKLE_FOR), secs(PROMPTLY))),
        rule("memory_after_a_storm", FLOODS, format!(
            "After one `POST /echo` of {}, alone, {} clients connect ({} where a server serves \
             one at a time), then all at once each sends one, reads its answer and leaves. Within {} of the last answer, the server's resident memory is \
             back within {} of what it was at rest: what a burst took goes back to the system, \
             not only to the allocator (glibc keeps what is freed unless asked: \
             `malloc_trim`).",
            size(STORM_BODY as u64), count(STORM_CLIENTS), count(STORM_CLIENTS_ONE_AT_A_TIME),
            secs(STORM_GIVEN_BACK_WITHIN),
            size(STORM_GROWTH_BOUND))),
        rule("idle_after_a_burst", FLOODS, format!(
            "{} clients connect, each asks `GET /hello` and falls idle (the timeouts are long): \
             that is the baseline. The server is stopped (SIGSTOP), each sends a {} `POST /echo`, \
             it goes on (SIGCONT), and all read their answers and fall idle again: within {}, \
             its resident memory is at most {} over the baseline, about 2 KiB a client. An idle \
             connection holds no receive or send buffer. (A server without keep-alive has no \
             idle clients, and passes at once.)",
            count(BURST_CLIENTS), size(BURST_BODY as u64), secs(GIVEN_BACK_WITHIN), size(BURST_GROWTH_BOUND))),
        rule("burst_of_clients", FLOODS, format!(
            "The server is stopped (SIGSTOP), {} clients connect and send `GET /hello`, and it \
             goes on: all are answered, and `/stats`' `loop_turns` (0 where there is no loop) \
             grows by at most {} meanwhile: accept the clients a turn finds waiting, not one a \
             turn. (Started with `--threads 1` where that is accepted.)",
            BURST_OF, BURST_TURNS_BOUND)),
        rule("idle_buffers_given_back", FLOODS, format!(
            "{} clients each send a {} `POST /echo`, read the answer, and stay connected, idle: \
             the server's resident memory (`VmRSS`) then grows by at most {} in all, over what it \
             was before they came. Give a connection's buffers back once its request is \
             answered.",
            ECHO_CLIENTS, size(ECHO_BODY as u64), size(ECHO_GROWTH_BOUND))),
        rule_if(With(GracefulShutdown), "fifo_under_root", SHUTDOWN, format!(
            "After requests for a FIFO, SIGTERM ends the process with exit status 0 within {}.",
            secs(PATIENCE))),
        rule_if(With(GracefulShutdown), "closed_stderr", SHUTDOWN, format!(
            "With standard error closed, SIGTERM still ends the process with exit status 0, \
             within {}: a write or flush that fails on the way out must not change the exit \
             status.",
            secs(PATIENCE))),
        rule_if(With(GracefulShutdown), "unread_stderr", SHUTDOWN, format!(
            "With standard error a full pipe nobody reads, SIGTERM still ends the process with \
             exit status 0 within {}: the goodbye that cannot be written is dropped.",
            secs(PATIENCE))),

        // Before keep-alive and a graceful shutdown.
        rule_if(Without(KeepAlive), EVERY_CHECK, CONNECTIONS_TOPIC,
            "One request per connection: every answer says `Connection: close`, and the server \
             closes, whatever the request asked. A server that keeps a connection open here \
             fails nearly every check: keep-alive is not \"ahead\" of these chapters.".to_string()),
        rule_if(Without(GracefulShutdown), "graceful_shutdown", SHUTDOWN,
            "SIGTERM either kills the process (the default: it dies of the signal), or stops \
             it gracefully, as chapter 3 on must, within the same bounds and with exit status \
             0. Ending any other way (exit status 1 or 143, say) fails.".to_string()),
        rule_if(Without(MoreThanOneCore), "spread_over_loops", LOOPS,
            "A server that spreads its clients over threads says so in `/stats`: if `/proc` \
             shows two of its threads each doing a good share of the serving, `/stats` must \
             have the `thread N requests_served M` lines of chapter 9. A single such line \
             fails anyway.".to_string()),

        // Chapter 2 on.
        rule("idle_client", CONNECTIONS_TOPIC, format!(
            "A client that connects and sends nothing, once accepted, holds up no one: \
             another client's `GET /hello` is answered within {}.",
            secs(PROMPTLY))),
        rule("half_sent_request", CONNECTIONS_TOPIC, format!(
            "Nor does one that sent half a request head and stopped: `GET /hello` within {}.",
            secs(PROMPTLY))),
        rule("slow_reader", CONNECTIONS_TOPIC, format!(
            "Nor does one that asked for a file bigger than the kernel's socket buffers hold and \
             stopped reading: `GET /hello` within {}. The file then arrives whole when it \
             reads on.",
            secs(PROMPTLY))),
        rule("ten_thousand_idle", CONNECTIONS_TOPIC, format!(
            "{} clients connect and send nothing, opened {} at a time (the check waits up to {} \
             for the server to accept each batch): the server accepts every one, `/stats` says \
             `connections_open` {} or more, `GET /hello` is answered within {}, and the \
             process's resident memory, all of it, is under {}. The timeouts are passed as {}, \
             so none fires. (Skipped unless the suite may open {} files, `ulimit -n`; your \
             server inherits that limit.)",
            count(IDLE_CLIENTS), count(IDLE_BATCH), secs(PATIENCE), count(IDLE_CLIENTS), secs(PROMPTLY), size(IDLE_MEMORY_BOUND), secs(TEN_THOUSAND_TIMEOUTS), count(2 * IDLE_CLIENTS))),
        rule_if(With(IdleClient), "descriptor_exhaustion", FLOODS, format!(
            "Flooded at a limit of {} files, the server accepts until it has them all in use: \
             no cap of its own below the system's.",
            FLOOD_FD_LIMIT)),
        rule_if(With(IdleClient), "slowloris", FLOODS, format!(
            "Started with at most {} open files, while {} clients trickle request heads, the \
             server accepts until it has them all in use.",
            SLOWLORIS_FD_LIMIT, SLOWLORIS_CLIENTS)),

        // Chapter 3 on.
        rule("keep_alive", CONNECTIONS_TOPIC,
            "An HTTP/1.1 connection stays open after each answer (no `Connection: close`), for \
             `GET`, `HEAD` and `POST` in turn. A request that says `Connection: close` is \
             answered with `Connection: close`, and the server closes.".to_string()),
        rule("keep_alive", CONNECTIONS_TOPIC,
            "HTTP/1.0 closes after each answer, saying `Connection: close`, unless the request \
             says `Connection: keep-alive`: then the answer says `Connection: keep-alive`, and \
             the connection stays open.".to_string()),
        rule("pipelining", CONNECTIONS_TOPIC,
            "Requests sent together in one write are answered in order, each whole: four \
             different ones, and fifty `POST /echo` that each echo their own number. A `GET` \
             with a body has the body skipped, not read as a request. Nothing after a request \
             that says `Connection: close` is answered, though more requests follow it.".to_string()),
        rule("pipelining", CONNECTIONS_TOPIC,
            "A request that arrives while a big answer (a file) is still being sent is kept, and \
             answered after it.".to_string()),
        rule("pipelining", CONNECTIONS_TOPIC, format!(
            "{} of `GET /hello` pipelined behind a `GET /sleep?ms=200`, more than a server need \
             keep unread while the sleep waits: every one is answered, in one connection. Stop \
             reading when too much waits, and read on after.",
            size(BEHIND as u64))),
        rule_if(With(KeepAlive), "upstream_relay", UPSTREAM,
            "A `GET /hello` pipelined behind a `GET /upstream/...` that the upstream answered \
             with a 204 gets its own answer.".to_string()),
        rule("flood_behind_a_wait", CONNECTIONS_TOPIC, format!(
            "One client pipelines {} of `GET /hello`, twice alone and twice behind a `GET \
             /sleep?ms={}`: a request behind the wait may cost the server at most {} times the \
             CPU time of one without. Consume pipelined requests by an offset: a buffer that \
             moves the bytes behind each request answered costs a megabyte each time. (Started \
             with `--threads 1` where that is accepted.)",
            size(ROUND_BYTES as u64), WAIT_IN_FRONT_MS, COST_BEHIND_A_WAIT_BOUND)),
        rule("pipelined_flood", CONNECTIONS_TOPIC, format!(
            "One client writes pipelined `GET /hello` without pause while it reads the answers. \
             After its first {}, {} other clients each send `GET /hello` on a new connection, \
             {} apart: each is answered within {}, and the flooder gets {} more answers \
             meanwhile, its connection kept. Give each connection a bounded share of a turn. \
             (Started with `--threads 1` where that is accepted.)",
            FLOOD_WARM_UP, FLOOD_OTHERS, secs(FLOOD_OTHERS_EVERY), secs(FLOOD_PROMPTLY), FLOOD_WARM_UP)),
        rule("graceful_shutdown", SHUTDOWN, format!(
            "After that SIGTERM, while the download goes on, {} new clients try to connect, {} \
             apart: from {} after the signal, every one is refused (the listener closed, on \
             every loop: `--threads 2` where accepted); one that gets in before must be \
             answered within {}.",
            NEWCOMERS, secs(NEWCOMERS_EVERY), secs(REFUSED_WITHIN), secs(NEWCOMER_ANSWERED_WITHIN))),
        rule("graceful_shutdown", SHUTDOWN, format!(
            "SIGTERM while a big download is in flight: stop accepting, send the rest of the \
             answer whole, and exit with status 0 within {} of the client having it all. \
             SIGINT to an idle server: exit 0 within {}. The grace period, {}, counts from the \
             signal, not from the last progress: past it, what is still in flight may be cut \
             and the process exit 0 (the chapters do). No check tests that limit: this client \
             reads the rest at full speed, and allows it {} from the signal.",
            secs(PATIENCE), secs(PATIENCE), secs(GRACE_PERIOD), secs(WHOLE_BODY_WITHIN))),
        rule("prompt_shutdown", SHUTDOWN, format!(
            "After SIGTERM, exit 0 as soon as nothing is in flight, within {}: with only idle \
             clients connected (one that sent nothing, one kept alive after its answer), or \
             with one client that has its last answer (it asked for `Connection: close`) and \
             keeps its socket open. Wait neither for idle connections nor for the grace \
             period, {}, which only bounds answers in flight.",
            secs(PROMPT_EXIT), secs(GRACE_PERIOD))),

        // Chapter 4 on.
        rule_if(With(SleepAndUpstream), "prompt_shutdown", SHUTDOWN, format!(
            "SIGTERM while a `GET /sleep?ms={}` waits: the sleep is answered in full, with \
             `Connection: close`, and the process exits 0 within {} of the signal.",
            SLEEP_AT_SHUTDOWN.as_millis(), secs(SLEEP_AT_SHUTDOWN + TIMEOUT_SLACK))),
        rule("sleep_elsewhere", WAITING, format!(
            "While one client's `GET /sleep?ms={}` waits, another's `GET /hello` is answered at \
             least a third of the sleep before the sleep's answer (tried again with {} ms when \
             the machine is too busy to tell).",
            HOLDS_MS[0], HOLDS_MS[1])),
        rule("slow_upstream", WAITING,
            "The same while a `GET /upstream/...` waits as long for a slow upstream.".to_string()),
        rule_if(With(SleepAndUpstream), "upstream_errors", WAITING, format!(
            "While an upstream sends its endless head, another client's `GET /hello` is \
             answered within {}.",
            secs(PROMPTLY))),
        rule("answers_as_ready", WAITING, format!(
            "{} `GET /sleep?ms={}` pipelined in one write: the first answer arrives when it is \
             ready, after {} and within twice that, not with the others.",
            READY_REQUESTS, READY_SLEEP.as_millis(), secs(READY_SLEEP))),
        rule("departing_clients", DEPARTURES, format!(
            "A client resets its connection while its `GET /sleep?ms={}` waits: a `GET /stats` \
             from another client is answered before that sleep would have ended.",
            FIRST_SLEEP.as_millis())),
        rule("departing_clients", DEPARTURES, format!(
            "{} clients reset while their `GET /sleep?ms={}` wait: within {}, `/stats` says \
             `connections_open` is back where it was before they came. Watch every connection \
             for a reset while its request waits.",
            SLEEPERS, SLEEPERS_SLEEP.as_millis(), secs(GONE_WITHIN))),
        rule("departing_clients", DEPARTURES, format!(
            "A client pipelines {} `GET /upstream/slow?ms={}` and resets while the first is \
             fetched: in the {} after, the upstream is sent none of the others.",
            PIPELINED_FETCHES, FETCH.as_millis(), secs(UPSTREAM_WATCH))),
        rule("departing_clients", DEPARTURES, format!(
            "{} clients each write {} of pipelined `GET /sleep?ms={}` and reset: the server has \
             begun reading each within {}, and within {} of the resets holds no more \
             descriptors than at rest (or at most {} more).",
            PIPELINERS, size(super::departures::PIPELINE_BYTES as u64), PIPELINED_SLEEP_MS, secs(PATIENCE), secs(DESCRIPTORS_BACK_WITHIN), LAZY_DESCRIPTORS)),
        rule("departing_clients", DEPARTURES, format!(
            "A client sends `GET /sleep?ms={}` with {} of pipelined `GET /hello` behind it, and \
             resets once the server has read {} of it: within {}, `/stats` no longer counts it. \
             A connection whose queue is too full to read more of must still hear a reset.",
            FULL_SLEEP_MS, size(FULL_PIPELINE_BYTES as u64), size(FULL_READ), secs(GONE_WITHIN))),
        rule("departing_clients", DEPARTURES, format!(
            "Only where `--help` lists `--upstream-limit` (a flag nobody must have): started \
             with `--upstream-limit 1`, {} clients each pipeline {} slow upstream requests and \
             reset while one is fetched; a client that comes after them has its fetch within \
             {}.",
            IN_LINE, IN_LINE_PIPELINED, secs(AFTER_THE_LINE_WITHIN))),
        rule("header_timeout", TIMEOUTS, format!(
            "Started with `--header-timeout {}` (and `--keep-alive-timeout {}`): a client that \
             sent part of a head and stalls gets a 408 with `Connection: close`, no sooner than \
             {} and within {}; so does a kept-alive client that sent part of its second head.",
            flag_seconds(timeout), flag_seconds(HEADER_PROBE_KEEP_ALIVE), too_early, too_late)),
        rule("header_timeout", TIMEOUTS, format!(
            "The header timeout counts from the first byte of a head, not from the last answer: \
             a kept-alive client idle for {} that then sends a head in two writes, {} apart, \
             gets its 200.",
            secs(timeout * 2), secs(timeout / 5))),
        rule("header_timeout", TIMEOUTS, format!(
            "A client that connects and sends nothing gets a 408, or is closed without a word, \
             within {}.",
            too_late)),
        rule("waits_without_spinning", TIMEOUTS, format!(
            "Started with `--header-timeout {}` and `--keep-alive-timeout {}`, and given nothing \
             to do but wait ({} clients each asking a `GET /sleep` of {} ms, one that sent half \
             a head, one kept alive after its answer), the server answers and times them out \
             with at most {} more turns of its loop than `/stats` itself takes (`loop_turns`), \
             and at most {} of CPU time. Wait in the kernel for the whole time left: a wait \
             rounded down to whole milliseconds wakes before its timer is due, and spins.",
            flag_seconds(ODD_TIMEOUT), flag_seconds(ODD_TIMEOUT), ODD_SLEEPS_MS.len(),
            ODD_SLEEPS_MS.map(|ms| ms.to_string()).join(", "), WAIT_TURNS_BOUND,
            secs(WAIT_CPU_BOUND))),
        rule("keep_alive_timeout", TIMEOUTS, format!(
            "Started with `--keep-alive-timeout {}`: a connection idle after its answer is \
             closed without a word (no 408), no sooner than {} and within {}. A new connection \
             that has sent nothing is not kept alive yet: it has the header timeout, and is \
             still open {} after the idle one closed.",
            flag_seconds(timeout), too_early, too_late, secs(timeout))),
        rule("send_timeout", TIMEOUTS, format!(
            "Started with `--send-timeout {}`: a client that asked for a file bigger than the \
             socket buffers hold and reads none of it is disconnected, its answer cut short, no \
             sooner than {} after its request and within {}.",
            flag_seconds(timeout), too_early, too_late)),
        rule("slowloris", TIMEOUTS, format!(
            "Started with at most {} open files and `--header-timeout {}`, {} clients each send \
             a head a byte every {}, never finish it, and reconnect when dropped: a `GET /hello` \
             is answered within {}.",
            SLOWLORIS_FD_LIMIT, SLOWLORIS_HEADER_TIMEOUT, SLOWLORIS_CLIENTS, secs(BYTE_EVERY), secs(SLOWLORIS_PATIENCE))),

        // Chapter 6 on.
        rule("slow_disk", WAITING, format!(
            "Started with `--fs-delay-ms N`, which makes every file open and every file read \
             take N ms longer: while one client's `GET /files/hello.txt` waits on the disk ({} \
             ms in all), another's `GET /hello` is answered at least a third of that before it.",
            HOLDS_MS[0])),
        rule("big_download_memory", FLOODS, format!(
            "{} clients download a {} file at once, each a little at a time: every download \
             arrives whole, and the server's peak memory grows by less than {}. Send a file a \
             piece at a time. (Before chapter 6, refusing so big a file with a 5xx is the \
             expected lack.)",
            DOWNLOADERS, size(DOWNLOAD_BYTES as u64), size(DOWNLOAD_GROWTH_BOUND))),

        // Chapter 7 on.
        rule("ten_thousand_idle_slowdown", CONNECTIONS_TOPIC, format!(
            "{} `GET /hello` in a row on one connection, timed with no other client and then \
             with {} idle ones: the second time is at most {}× the first (the fastest of several \
             rounds counts). A server that accepts `--backend poll` is timed that way too, and \
             must then be slower than that; a `backend` line in its `/stats`, if any, says \
             `backend poll`.",
            BUSY_ROUND, count(IDLE_CLIENTS), SLOWDOWN_BOUND)),

        // Chapter 9 on.
        rule("spread_over_loops", LOOPS, format!(
            "Started with `--threads {}`: after {} connections of {} `GET /hello` each, \
             `/stats` has a line `thread N requests_served M` for each loop, at least two with \
             M above 0, adding up to `requests_served`; and by `/proc`, at least two threads \
             each did {}% or more of the work (CPU time).",
            THREADS, CONNECTIONS, REQUESTS_EACH, (SERVING_SHARE * 100.0).round())),
    ]
}
// ANCHOR_END: rules

/// A section of the checklist: the chapters it holds, as a heading says them.
fn heading(chapters: &[u8]) -> String {
    let all = CHAPTERS.len();
    let (Some(&first), Some(&last)) = (chapters.first(), chapters.last()) else {
        return "No chapter".into();
    };
    let contiguous = usize::from(last - first) + 1 == chapters.len();
    if chapters.len() == all {
        "Every chapter".into()
    } else if contiguous && usize::from(last) == all {
        format!("Chapter {first} on")
    } else if contiguous && first == 1 {
        match last {
            1 => "Chapter 1 only".into(),
            2 => "Chapters 1 and 2 only".into(),
            _ => format!("Chapters 1 to {last} only"),
        }
    } else {
        let names: Vec<String> = chapters.iter().map(u8::to_string).collect();
        format!("Chapters {}", names.join(", "))
    }
}

/// How a corpus row's answer reads in the list.
fn answer_text(answer: Answer) -> String {
    let statuses = |list: &[u16]| {
        let list: Vec<String> = list.iter().map(u16::to_string).collect();
        match list.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => list.concat(),
        }
    };
    match answer {
        Answer::Refused(list) => format!("refused, {}", statuses(list)),
        Answer::Answered(status, _) => format!("answered, {status}"),
        Answer::RefusedOrServed(list, _) => {
            format!("refused, {}, or answered, 200 with the body decoded", statuses(list))
        }
        Answer::RefusedEarly(list) => format!("refused early, {}", statuses(list)),
        Answer::Ends => "ends".into(),
    }
}

/// A request as an escaped code span, `GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n`, with
/// a run of one byte or one pair of bytes written once with its count (`«7168 × a»`), and
/// the middle of what is still long left out (`…`).
fn request_shown(bytes: &[u8]) -> String {
    const WHOLE: usize = 100;
    const HEAD: usize = 64;
    const TAIL: usize = 28;
    // A backtick would end the code span.
    let escape = |bytes: &[u8]| -> String {
        bytes
            .iter()
            .map(|&byte| match byte {
                b'`' => "\\x60".to_string(),
                _ => std::ascii::escape_default(byte).to_string(),
            })
            .collect()
    };
    let mut pieces: Vec<String> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let run = |width: usize| {
            let unit = bytes.get(at..at + width)?;
            let count = bytes[at..].chunks(width).take_while(|chunk| *chunk == unit).count();
            (count >= 8).then_some((unit, count))
        };
        if let Some((unit, count)) = run(1).or_else(|| run(2)) {
            pieces.push(format!("«{count} × {}»", escape(unit)));
            at += unit.len() * count;
        } else {
            pieces.push(escape(&bytes[at..at + 1]));
            at += 1;
        }
    }
    let length =
        |pieces: &[String]| -> usize { pieces.iter().map(|piece| piece.chars().count()).sum() };
    if length(&pieces) <= WHOLE {
        return format!("`{}`", pieces.concat());
    }
    let mut head = Vec::new();
    for piece in &pieces {
        if length(&head) + piece.chars().count() > HEAD {
            break;
        }
        head.push(piece.clone());
    }
    let mut tail = Vec::new();
    for piece in pieces[head.len()..].iter().rev() {
        if length(&tail) + piece.chars().count() > TAIL {
            break;
        }
        tail.insert(0, piece.clone());
    }
    format!("`{}…{}`", head.concat(), tail.concat())
}

/// The checklist as Markdown, for the book (`cargo run -p suite -- --checklist`).
pub fn checklist() -> String {
    let mut out = String::new();
    // Writing into a String cannot fail, so the results are ignored.
    let _ = writeln!(
        out,
        "<!-- Generated from tests/src/probes/checklist.rs by `cargo run -p suite -- \
         --checklist`.\n     Do not edit: a test fails when this file and the code disagree. \
         -->"
    );
    let rules = rules();
    // The groups of chapters, in order: every chapter; those for the first chapters only,
    // the narrowest first; then "chapter N on", by N.
    let mut groups: Vec<Vec<u8>> = Vec::new();
    for rule in &rules {
        let chapters = rule.applies.chapters();
        if !groups.contains(&chapters) {
            groups.push(chapters);
        }
    }
    let last = CHAPTERS.last().map(|chapter| chapter.number);
    groups.sort_by_key(|chapters| {
        let to_the_end = chapters.last().copied() == last;
        (chapters.first().copied(), !to_the_end, chapters.last().copied())
    });
    for group in &groups {
        let _ = writeln!(out, "\n### {}", heading(group));
        let in_group: Vec<&Rule> =
            rules.iter().filter(|rule| &rule.applies.chapters() == group).collect();
        for topic in TOPICS {
            if !in_group.iter().any(|rule| rule.topic == topic) {
                continue;
            }
            let _ = writeln!(out, "\n**{topic}**\n");
            for rule in in_group.iter().filter(|rule| rule.topic == topic) {
                let by = match rule.probe {
                    EVERY_CHECK => "every check".to_string(),
                    probe => format!("`{probe}`"),
                };
                let _ = writeln!(out, "- {} ({by})", rule.text);
            }
        }
    }

    let _ = writeln!(
        out,
        "\n### The conformance corpus, row by row\n\n\
         Checked by `conformance_corpus` in every chapter (and sent again, all of it, by \
         `serves_after_abuse`). Each row is one request on a new connection (escaped: `\\r\\n` is \
         CR LF, `«7168 × a»` that many bytes `a`, `…` a part left out here; `cargo run -p suite \
         -- --only conformance_corpus` shows the rows your server answers differently), and \
         the answer it must get:\n\n\
         - **refused**: one of those statuses, with `Connection: close`, and then the \
         connection ends. A valid request is sent right behind it in the same write, and must \
         never be answered.\n\
         - **answered**: that status (and the body the route gives), and the connection stays \
         usable: a `POST /echo` sent right behind it must be answered next, with its own body \
         (unless the answer said `Connection: close`).\n\
         - **refused early**: the client sends only these bytes and waits, the connection \
         open; the refusal, with `Connection: close`, must come within {}.\n\
         - **ends**: the client sends these bytes and half-closes; the server must close \
         within {}, having sent nothing or a 4xx.\n",
        secs(PROMPTLY),
        secs(PATIENCE)
    );
    for case in corpus::corpus() {
        let _ = writeln!(
            out,
            "- **{}**: {}: {}",
            answer_text(case.answer),
            case.rule,
            request_shown(&case.request)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chapters::workspace_root;
    use crate::probes::PROBES;

    /// Every probe has a rule on the page, so a new probe cannot check what the page does
    /// not say; and every rule names a probe that exists.
    #[test]
    fn every_probe_has_a_rule() {
        let rules = rules();
        for probe in PROBES {
            assert!(
                rules.iter().any(|rule| rule.probe == probe.name),
                "the probe {} has no rule in tests/src/probes/checklist.rs: say there what it \
                 checks, then regenerate book/src/generated/checklist.md",
                probe.name
            );
        }
        for rule in &rules {
            assert!(
                rule.probe == EVERY_CHECK || super::super::find(rule.probe).is_some(),
                "a rule names {}, which is no probe",
                rule.probe
            );
        }
    }

    /// Every rule applies to some chapter, and has a topic the page shows: a rule for the
    /// chapters without a row every chapter has would be lost from the page.
    #[test]
    fn every_rule_is_shown() {
        for rule in rules() {
            assert!(!rule.applies.chapters().is_empty(), "{rule:?} applies to no chapter");
            assert!(TOPICS.contains(&rule.topic), "{rule:?}: its topic is not in TOPICS");
        }
    }

    #[test]
    fn numbers_read_as_the_page_writes_them() {
        assert_eq!(secs(Duration::from_millis(500)), "0.5 s");
        assert_eq!(secs(Duration::from_secs(30)), "30 s");
        assert_eq!(size(8 * 1024), "8 KiB");
        assert_eq!(size(24 << 20), "24 MiB");
        assert_eq!(size(300_000), "300,000 bytes");
        assert_eq!(count(10_000), "10,000");
        assert_eq!(count(100), "100");
        assert_eq!(heading(&[1, 2]), "Chapters 1 and 2 only");
        assert_eq!(heading(&[4, 5, 6, 7, 8, 9, 10, 11]), "Chapter 4 on");
        assert_eq!(listed(&["a", "b", "c"]), "`a`, `b` and `c`");
        assert_eq!(request_shown(b"GET /`x\r\n"), "`GET /\\x60x\\r\\n`");
        assert_eq!(request_shown(b"/?aaaaaaaaaa\r\n\r\n"), "`/?«10 × a»\\r\\n\\r\\n`");
        let long = request_shown(&crate::site::pattern(512));
        assert!(long.contains('…') && long.chars().count() < 100, "{long}");
    }

    /// The hand-written part of the page quotes no number the suite does not use: every
    /// "N s", "N ms", "N KiB" or "N MiB" on it appears in the generated checklist too, so a
    /// bound typed by hand cannot drift from the probes' constants. (Code blocks are left
    /// out: a command line is no bound.)
    #[test]
    fn the_page_quotes_only_the_suites_numbers() {
        let page = std::fs::read_to_string(workspace_root().join("book/src/your-server.md"))
            .expect("book/src/your-server.md");
        // As whole quotes, not text: "5 s" is not in the checklist because "1.5 s" is.
        let generated: std::collections::HashSet<String> =
            checklist().lines().flat_map(numbers_with_units).collect();
        let mut in_code = false;
        let mut strays = Vec::new();
        for line in page.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            if in_code {
                continue;
            }
            for quoted in numbers_with_units(line) {
                if !generated.contains(&quoted) {
                    strays.push(quoted);
                }
            }
        }
        assert!(
            strays.is_empty(),
            "book/src/your-server.md quotes {strays:?}, which the generated checklist does not: \
             say the rule in tests/src/probes/checklist.rs, with the probe's own constant"
        );
    }

    /// "10 s", "0.5 s", "8 KiB", "1 MiB", "700 ms" in a line of text.
    fn numbers_with_units(line: &str) -> Vec<String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut found = Vec::new();
        for pair in words.windows(2) {
            let number = pair[0].trim_start_matches(['(', '`']);
            let unit = pair[1].trim_end_matches([',', '.', ')', ';', ':']);
            let is_number = !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
                && number.starts_with(|c: char| c.is_ascii_digit());
            if is_number && ["s", "ms", "KiB", "MiB"].contains(&unit) {
                found.push(format!("{number} {unit}"));
            }
        }
        found
    }

    #[test]
    fn finds_numbers_with_units() {
        assert_eq!(
            numbers_with_units("within 10 s (30 s the first time), 8 KiB, 2 seconds"),
            ["10 s", "30 s", "8 KiB"]
        );
    }
}
