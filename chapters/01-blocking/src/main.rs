//! Chapter 1: a blocking HTTP server.
//!
//! The simplest server there is: accept a client, read its request, answer, close, and
//! only then accept the next one. Every call here *blocks*: `accept` waits for a client,
//! `read` waits for bytes, `write` waits for room in the client's window, and `/sleep` or
//! a slow disk makes the whole server wait with them. While we wait for one client, every
//! other client waits for us.
//!
//! Run it, then in a second terminal type `nc 127.0.0.1 8080` and send nothing. In a third,
//! `curl http://127.0.0.1:8080/hello` hangs until you close the `nc`. That hang is what the
//! rest of the workbook removes, one chapter at a time.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use shared::app::Stats;
use shared::args::Config;
use shared::blocking::run_app;
use shared::http::{self, date, response::Framing, Parse, Response};
use shared::{listener, log, trace};

fn main() {
    // ANCHOR: setup
    let config = Config::from_args("ch01-blocking", &[]);
    if config.trace {
        trace::enable();
    }
    let listener = listener::listen(&config, false);
    let mut stats = Stats::default();
    // ANCHOR_END: setup

    // ANCHOR: accept_loop
    loop {
        trace!("accept: waiting for a client");
        let (stream, peer) = match listener.accept() {
            Ok(client) => client,
            Err(error) => {
                // Out of file descriptors (EMFILE) or a client that gave up before we got
                // to it. Neither is fatal; pause briefly so a persistent error can't spin.
                log!("accept failed: {error}");
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        trace!("accept: client {peer}");
        stats.connections_open = 1;
        if let Err(error) = serve(stream, &config, &mut stats) {
            trace!("client {peer}: {error}");
        }
        stats.connections_open = 0;
    }
    // ANCHOR_END: accept_loop
}

// ANCHOR: serve
/// Serves one client from start to finish: read a request, answer it, close.
fn serve(mut stream: TcpStream, config: &Config, stats: &mut Stats) -> io::Result<()> {
    let mut received = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    // Read until the parser says we have a whole request (or that it is bad).
    let (response, mut framing) = loop {
        match http::parse(&received) {
            Parse::Complete { request, .. } => {
                break (run_app(&request, config, stats), Framing::for_request(&request))
            }
            Parse::Invalid(error) => break (Response::from_parse_error(error), Framing::CLOSE),
            Parse::Incomplete => {}
        }
        trace!("read: waiting for the request");
        let count = match stream.read(&mut chunk) {
            Ok(count) => count,
            // A signal arrived while we waited; nothing is wrong, wait again.
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if count == 0 {
            return Ok(()); // the client left before sending a whole request
        }
        trace!("read: {count} bytes");
        received.extend_from_slice(&chunk[..count]);
    };

    let mut out = Vec::new();
    framing.keep_alive = false; // one request per connection in this chapter
    http::response::write_response(&mut out, &response, &framing, config.chapter, &date::now());
    trace!("write: {} bytes, status {}", out.len(), response.status);
    stream.write_all(&out)?; // blocks until the client has taken it all
    stats.requests_served += 1;
    close_gently(stream);
    Ok(())
}
// ANCHOR_END: serve

// ANCHOR: close_gently
/// Closes without losing the response. If we simply closed while the client still had
/// unread bytes on their way to us (a pipelined request, the rest of a rejected body), the
/// kernel would answer with a reset, and a reset can destroy the response before the
/// client reads it. So: say we are done writing, read and discard until the client
/// closes too (or a second has passed, in all), then close. nginx calls this a "lingering
/// close".
fn close_gently(mut stream: TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut discard = [0u8; 16 * 1024];
    let mut discarded = 0;
    while discarded < 1024 * 1024 {
        // What is left of the second: a client trickling bytes must not stretch it.
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut discard) {
            Ok(0) | Err(_) => break,
            Ok(count) => discarded += count,
        }
    }
}
// ANCHOR_END: close_gently
