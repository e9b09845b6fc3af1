//! Sketch of chapter 1: a blocking server. Accept a client, read its request, answer it,
//! close, and only then accept the next. Every call waits until it is done, so while one
//! client dawdles, every other client waits in the kernel's queue.
//!
//! Left out, and where the chapter's code has it:
//! - closing without losing the answer (a lingering close): `chapters/01-blocking/src/main.rs`
//! - running out of file descriptors without spinning: `chapters/01-blocking/src/main.rs`

use std::io::{Read, Write};
use std::net::TcpStream;

use shared::{app::Stats, args::Config, blocking::run_app, buffer::Buffer, http, listener, trace};

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
    let (mut received, mut out) = (Buffer::new(), Vec::new());
    loop {
        // Read (waiting for bytes) until the parser says we have a whole request.
        let mut chunk = [0u8; 16 * 1024];
        trace!("read: waiting for the request");
        match stream.read(&mut chunk) {
            Ok(count) if count > 0 => received.extend_from_slice(&chunk[..count]),
            _ => return, // the client left before a whole request
        }
        // A whole request: answer it, with `Connection: close` (one request a connection).
        // `run_app` does what the application asks, waiting: `/sleep?ms=5000` stops the
        // whole server for five seconds, and so does a slow disk or a slow upstream.
        let app = |request: &http::Request| run_app(request, config, stats);
        if http::answer(&mut received, &mut out, config.chapter, false, app).is_some() {
            stats.requests_served += 1;
            trace!("write: {} bytes, waiting until the client has taken them all", out.len());
            let _ = stream.write_all(&out);
            return; // dropping `stream` closes the connection
        }
    }
}
