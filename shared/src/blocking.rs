//! The blocking way of doing what [`app::handle`] asks: sleep, read the file, fetch from the
//! upstream, each with a call that waits until it is done. Chapters 1-3 answer every
//! request so; the sketches of later chapters hand it the actions their idea leaves alone.

use std::thread;
use std::time::Duration;

use crate::app::{self, Action, Context, Stats};
use crate::args::Config;
use crate::http::{Request, Response};
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
