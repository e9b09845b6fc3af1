//! Sketch of chapter 1: a blocking server. Accept a client, read its request, answer it,
//! close, and only then accept the next. Every call waits until it is done, so while one
//! client dawdles, every other client waits in the kernel's queue.
//!
//! Left out, and where the chapter's code has it:
//! - closing without losing the answer (a lingering close): `chapters/01-blocking/src/main.rs`
//! - running out of file descriptors without spinning: `chapters/01-blocking/src/main.rs`

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use shared::app::{self, Action, Context, Stats};
use shared::args::Config;
use shared::http::{self, date, response::write_response, response::Framing, Parse, Response};
use shared::{files, listener, trace, upstream};

fn main() {
    let config = Config::from_args("ch01-sketch", &[]);
    if config.trace {
        trace::enable();
    }
    let listener = listener::listen(&config, false); // blocking: `accept` waits for a client
    let mut stats = Stats::default();
    loop {
        trace!("accept: waiting for a client");
        let Ok((stream, _)) = listener.accept() else { continue };
        stats.connections_open = 1;
        serve(stream, &config, &mut stats);
        stats.connections_open = 0;
    }
}

/// Serves one client from start to finish. Nobody else is served meanwhile.
fn serve(mut stream: TcpStream, config: &Config, stats: &mut Stats) {
    let mut received = Vec::new();
    loop {
        // Read (waiting for bytes) until the parser says we have a whole request.
        let mut chunk = [0u8; 16 * 1024];
        trace!("read: waiting for the request");
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return, // the client left before a whole request
            Ok(count) => received.extend_from_slice(&chunk[..count]),
        }
        let (response, mut framing) = match http::parse(&received) {
            Parse::Complete { request, .. } => {
                (run_app(&request, config, stats), Framing::for_request(&request))
            }
            Parse::Invalid(error) => (Response::from_parse_error(error), Framing::CLOSE),
            Parse::Incomplete => continue, // wait for the rest
        };
        framing.keep_alive = false; // one request per connection
        let mut out = Vec::new();
        write_response(&mut out, &response, &framing, config.chapter, &date::now());
        stats.requests_served += 1;
        trace!("write: {} bytes, waiting until the client has taken them all", out.len());
        let _ = stream.write_all(&out);
        return; // dropping `stream` closes the connection
    }
}

/// Asks the application what to do, and does it, waiting: `/sleep?ms=5000` stops the
/// whole server for five seconds, and so does a slow disk or a slow upstream.
fn run_app(request: &http::Request, config: &Config, stats: &Stats) -> Response {
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
    match app::handle(request, &context) {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            thread::sleep(Duration::from_millis(ms));
            app::slept(ms)
        }
        Action::ReadFile { path } => {
            files::response(&path, files::load(&config.root, &path, config.fs_delay))
        }
        Action::Upstream { address, path_and_query } => {
            upstream::fetch_blocking(address, &path_and_query)
        }
    }
}
