//! The runner's progress line, `[12/58] keep_alive ...`, written over itself on stderr
//! while the checks run: only when stderr is a terminal, never into a pipe or a file (a
//! log full of carriage returns helps nobody, and a course's script reads stdout).
//!
//! It names the check that has been running longest: with several at once, that is the
//! one the run is waiting for.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

/// How wide the line may be: a terminal is at least this wide, and a longer line would
/// wrap, and then no carriage return could write over it.
const WIDTH: usize = 79;

pub struct Progress {
    /// Whether to show anything: stderr is a terminal.
    shown: bool,
    total: usize,
    state: Mutex<State>,
}

struct State {
    done: usize,
    /// The checks running now, the longest-running first.
    running: Vec<String>,
}

impl Progress {
    /// A progress line for `total` checks, shown if stderr is a terminal.
    pub fn new(total: usize) -> Progress {
        Progress::showing(std::io::stderr().is_terminal(), total)
    }

    fn showing(shown: bool, total: usize) -> Progress {
        Progress { shown, total, state: Mutex::new(State { done: 0, running: Vec::new() }) }
    }

    /// The check `name` has begun.
    pub fn started(&self, name: &str) {
        self.update(|state| state.running.push(name.to_string()));
    }

    /// The check `name` is over.
    pub fn finished(&self, name: &str) {
        self.update(|state| {
            state.done += 1;
            if let Some(at) = state.running.iter().position(|running| running == name) {
                state.running.remove(at);
            }
        });
    }

    /// Rubs the line out, before the report (or anything else) is written.
    pub fn clear(&self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        // A poisoned lock only means another check panicked while it held it.
        let mut state = self.state.lock().unwrap_or_else(|poison| poison.into_inner());
        change(&mut state);
        if self.shown {
            // Nothing sensible to do if stderr itself is gone.
            let _ = write!(
                std::io::stderr(),
                "\r\x1b[K{}",
                line(state.done, self.total, &state.running)
            );
        }
    }
}

/// The line itself: `[12/58] keep_alive ...`, and how many more are running, cut to
/// [`WIDTH`].
pub fn line(done: usize, total: usize, running: &[String]) -> String {
    let mut text = format!("[{done}/{total}]");
    if let Some(oldest) = running.first() {
        text.push_str(&format!(" {oldest} ..."));
    }
    if running.len() > 1 {
        text.push_str(&format!(" (and {} more running)", running.len() - 1));
    }
    text.chars().take(WIDTH).collect()
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
