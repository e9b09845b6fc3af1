//! The demo application: what each route answers.
//!
//! It is a *pure* function. It never sleeps, never touches the disk, never opens a socket.
//! When a route needs one of those, it returns an [`Action`] that says so, and the chapter
//! decides how to wait for it. That is the whole point of the workbook: the application
//! stays the same while the way we wait changes, from blocking calls in chapter 1 to a
//! thread pool in chapter 6.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::files;
use crate::http::{Body, Request, Response};

/// The body of `GET /hello`, the benchmark route.
pub const HELLO: &[u8] = b"Hello, world!\n";
/// The longest `/sleep?ms=N` allowed.
pub const MAX_SLEEP_MS: u64 = 10_000;

// ANCHOR: action
/// What to do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// Answer now.
    Respond(Response),
    /// Wait this many milliseconds, then answer with [`slept`].
    Sleep { ms: u64 },
    /// Read this file (relative to `--root`), then answer with [`files::response`].
    ReadFile { path: PathBuf },
    /// Fetch this path and query from the upstream server, then relay its answer.
    Upstream { address: SocketAddr, path_and_query: Cow<'a, str> },
}
// ANCHOR_END: action

impl Action<'_> {
    /// The same action, owning what it borrowed from the request: for a chapter that reads
    /// on (into the buffer the request came from) while the action waits.
    pub fn into_owned(self) -> Action<'static> {
        match self {
            Action::Respond(response) => Action::Respond(response),
            Action::Sleep { ms } => Action::Sleep { ms },
            Action::ReadFile { path } => Action::ReadFile { path },
            Action::Upstream { address, path_and_query } => Action::Upstream {
                address,
                path_and_query: Cow::Owned(path_and_query.into_owned()),
            },
        }
    }
}

/// The numbers `/stats` shows. Each chapter keeps them; a chapter without timers or jobs
/// leaves those at 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub connections_open: u64,
    pub requests_served: u64,
    pub loop_turns: u64,
    pub timers_pending: u64,
    pub jobs_queued: u64,
    pub jobs_running: u64,
    /// How the loop waits (`epoll`, `poll`), for chapters that can choose; else empty.
    pub backend: &'static str,
}

/// What the application needs to know about the server running it.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The chapter's name, shown on `/`.
    pub chapter: &'a str,
    /// `--upstream`, if given. Without it `/upstream/` is a 404.
    pub upstream: Option<SocketAddr>,
    pub stats: Stats,
}

/// Standard methods (RFC 9110) that we know but do not serve on every path: on a known
/// path they get 405. Any other method token is 501 Not Implemented.
const KNOWN_METHODS: [&str; 9] =
    ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];

/// Decides what to do with `request`. `HEAD` is treated as `GET`: the chapter writes the
/// same head and leaves out the body.
pub fn handle<'a>(request: &Request<'a>, context: &Context) -> Action<'a> {
    if !KNOWN_METHODS.contains(&request.method) {
        return Action::Respond(Response::error(501, "unknown method"));
    }
    let is_get = request.method == "GET" || request.method == "HEAD";
    let path = request.path;

    if let Some(file) = path.strip_prefix("/files/") {
        if !is_get {
            return Action::Respond(method_not_allowed("GET, HEAD"));
        }
        return match files::resolve(file) {
            Ok(path) => Action::ReadFile { path },
            Err(response) => Action::Respond(response),
        };
    }
    if path == "/upstream" || path.starts_with("/upstream/") {
        if !is_get {
            return Action::Respond(method_not_allowed("GET, HEAD"));
        }
        let Some(address) = context.upstream else {
            return Action::Respond(Response::error(404, "no --upstream was given"));
        };
        let rest = &path["/upstream".len()..];
        let rest = if rest.is_empty() { "/" } else { rest };
        let path_and_query = if request.query.is_empty() {
            Cow::Borrowed(rest)
        } else {
            Cow::Owned(format!("{rest}?{}", request.query))
        };
        return Action::Upstream { address, path_and_query };
    }
    if path == "/echo" {
        if request.method != "POST" {
            return Action::Respond(method_not_allowed("POST"));
        }
        if request.content_length.is_none() {
            return Action::Respond(Response::error(411, "POST /echo needs a Content-Length"));
        }
        return Action::Respond(Response {
            content_type: Cow::Borrowed("application/octet-stream"),
            body: Body::Owned(request.body.to_vec()),
            ..Response::text(200, "")
        });
    }

    let known = ["/", "/hello", "/sleep", "/stats"].contains(&path);
    if !known {
        return Action::Respond(Response::error(404, "no such route"));
    }
    if !is_get {
        return Action::Respond(method_not_allowed("GET, HEAD"));
    }
    match path {
        "/hello" => Action::Respond(hello()),
        "/sleep" => match request.query_param("ms").and_then(|ms| ms.parse::<u64>().ok()) {
            Some(ms) if ms <= MAX_SLEEP_MS => Action::Sleep { ms },
            _ => Action::Respond(Response::error(400, "expected /sleep?ms=N with N in 0..=10000")),
        },
        "/stats" => Action::Respond(stats(&context.stats)),
        _ => Action::Respond(index(context.chapter)),
    }
}

/// `GET /hello`: a static body, so answering it allocates nothing.
pub fn hello() -> Response {
    Response {
        status: 200,
        content_type: Cow::Borrowed("text/plain; charset=utf-8"),
        body: Body::Static(HELLO),
        allow: None,
        close: false,
    }
}

/// The answer to `/sleep?ms=N` once the N milliseconds have passed.
pub fn slept(ms: u64) -> Response {
    Response::text(200, format!("slept {ms} ms\n"))
}

fn method_not_allowed(allow: &'static str) -> Response {
    Response { allow: Some(allow), ..Response::error(405, "method not allowed here") }
}

fn stats(stats: &Stats) -> Response {
    let mut text = format!(
        "connections_open {}\nrequests_served {}\nloop_turns {}\ntimers_pending {}\n\
         jobs_queued {}\njobs_running {}\n",
        stats.connections_open,
        stats.requests_served,
        stats.loop_turns,
        stats.timers_pending,
        stats.jobs_queued,
        stats.jobs_running
    );
    if !stats.backend.is_empty() {
        text.push_str(&format!("backend {}\n", stats.backend));
    }
    Response::text(200, text)
}

fn index(chapter: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{chapter}</title></head>\n\
         <body>\n<h1>{chapter}</h1>\n<p>A stage of the Event Loop Workbook. Routes:</p>\n<ul>\n\
         <li><a href=\"/hello\">/hello</a>: a fixed greeting (the benchmark route)</li>\n\
         <li><a href=\"/sleep?ms=1000\">/sleep?ms=1000</a>: answers after a delay</li>\n\
         <li><a href=\"/files/index.html\">/files/index.html</a>: files from --root</li>\n\
         <li>POST /echo: sends the request body back</li>\n\
         <li><a href=\"/upstream/\">/upstream/PATH</a>: relays PATH from --upstream</li>\n\
         <li><a href=\"/stats\">/stats</a>: what the server is doing</li>\n\
         </ul>\n</body></html>\n"
    );
    Response {
        content_type: Cow::Borrowed("text/html; charset=utf-8"),
        ..Response::text(200, html)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{parse, Parse};

    fn run(raw: &str) -> Action<'_> {
        let Parse::Complete { request, .. } = parse(raw.as_bytes()) else {
            panic!("test request does not parse: {raw}")
        };
        let context = Context { chapter: "ch00-test", upstream: None, stats: Stats::default() };
        handle(&request, &context)
    }

    fn status(raw: &str) -> u16 {
        match run(raw) {
            Action::Respond(response) => response.status,
            other => panic!("expected a response, got {other:?}"),
        }
    }

    #[test]
    fn routes() {
        assert_eq!(status("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
        assert_eq!(status("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"), 200);
        assert_eq!(status("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
        assert_eq!(status("DELETE /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 405);
        assert_eq!(status("BREW /hello HTTP/1.1\r\nHost: x\r\n\r\n"), 501);
        assert_eq!(status("POST /echo HTTP/1.1\r\nHost: x\r\n\r\n"), 411);
        assert_eq!(status("GET /sleep?ms=10001 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
        assert_eq!(status("GET /upstream/x HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
        assert_eq!(run("GET /sleep?ms=7 HTTP/1.1\r\nHost: x\r\n\r\n"), Action::Sleep { ms: 7 });
        assert_eq!(
            run("GET /files/a/b.txt HTTP/1.1\r\nHost: x\r\n\r\n"),
            Action::ReadFile { path: PathBuf::from("a/b.txt") }
        );
    }
}
