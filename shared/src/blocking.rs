//! The blocking way of doing what [`app::handle`] asks: sleep, read the file, fetch from the
//! upstream, each with a call that waits until it is done. Chapters 1-3 answer every
//! request so; the sketches of later chapters hand it the actions their idea leaves alone.

use std::fs::File;
use std::thread;
use std::time::Duration;

use crate::app::{self, Action, Context, Stats};
use crate::args::Config;
use crate::http::response::{write_response, Framing};
use crate::http::{date, Request, Response};
use crate::{files, trace, upstream};

// ANCHOR: run_app
/// Asks the application what to do, and does it, blocking. A `/sleep?ms=5000` stops the
/// whole server for five seconds; so does a slow disk or a slow upstream.
pub fn run_app(request: &Request, config: &Config, stats: &Stats) -> Response {
    let context = Context { chapter: config.chapter, upstream: config.upstream, stats: *stats };
    perform(app::handle(request, &context), config)
}

/// Does what `action` says, and waits until it is done.
pub fn perform(action: Action, config: &Config) -> Response {
    match action {
        Action::Respond(response) => response,
        Action::Sleep { ms } => {
            trace!("sleep: {ms} ms, blocking");
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
// ANCHOR_END: run_app

/// The first piece of the answer to a request [`take_request`](crate::http::take_request)
/// took (or to bytes it refused), made blocking, for chapter 6's sketch to run on a worker:
/// the answer as bytes, always with `Connection: close`; for a file only its head, with the
/// file, opened and not read, whose body the caller sends a [`files::next_piece`] at a time.
pub fn first_piece(
    taken: Result<(Action, Framing), Response>, config: &Config,
) -> (Vec<u8>, Option<File>) {
    let (action, framing) =
        taken.unwrap_or_else(|refused| (Action::Respond(refused), Framing::CLOSE));
    let framing = Framing { keep_alive: false, ..framing };
    let (response, file) = match action {
        Action::ReadFile { path } => match files::open(&config.root, &path, config.fs_delay) {
            Ok((file, length)) => (files::streamed_response(&path, length), Some(file)),
            Err(error) => (files::error_response(&error), None), // 404, or 500
        },
        action => (perform(action, config), None),
    };
    let mut piece = Vec::new();
    write_response(&mut piece, &response, &framing, config.chapter, &date::now());
    (piece, file.filter(|_| !framing.head_only)) // a HEAD: no body to send
}

#[cfg(test)]
#[path = "blocking_tests.rs"]
mod tests;
