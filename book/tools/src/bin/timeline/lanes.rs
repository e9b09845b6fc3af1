//! From `--trace` lines to lanes: what each thread was doing when, and what became of
//! each connection.
//!
//! A trace line is `[   12.345 ms] text`, or `[   12.345 ms] [thread] text` from a named
//! thread other than `main` (see `shared/src/trace.rs`). Every line marks a step, and a
//! thread is in the state its last line put it in until its next line:
//!
//! | line (on a loop's thread)                       | from then on, the thread is |
//! |-------------------------------------------------|-----------------------------|
//! | `poll: waiting ...`, `epoll: waiting ...`       | waiting in poll / epoll     |
//! | `kqueue: waiting ...` (macOS and the BSDs)      | waiting in kevent           |
//! | `io_uring: waiting ...`                         | waiting in io_uring_enter   |
//! | `accept: waiting ...`, `read: waiting ...`      | waiting in accept / read (chapter 1) |
//! | `sleep: 300 ms, blocking`                       | blocked in a sleep          |
//! | `fs: slow disk, 200 ms`                         | blocked on the disk         |
//! | `timer fired`                                   | running a timer             |
//! | anything else (`poll: 1 ready`, `token 2 readable`, ...) | running callbacks or tasks |
//!
//! A pool worker (a thread whose lines say `pool: ...`) runs a job from `starts`
//! to `finished`, and waits on the disk from each `fs: slow disk` line to its next line.
//!
//! Connections are followed by their descriptor: `accept: client PEER (fd F)` (chapters 2,
//! 8, 9) names it at once; `accept: client PEER (token T)` (chapters 3-7) names the token,
//! and the first `fd F:` line inside a `token T readable` callback names the descriptor.
//! Chapter 1 serves one client at a time, so its `read:` and `write:` lines belong to the
//! client it accepted last.

use std::collections::HashMap;

/// One line of `--trace` output.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceLine {
    /// Milliseconds since the server started tracing.
    pub at: f64,
    /// The thread's name; `main` for a line without one.
    pub thread: String,
    pub text: String,
}

/// Reads `[   12.345 ms] [thread] text`. `None` for any other line (a `log!` line).
pub fn parse_line(line: &str) -> Option<TraceLine> {
    let rest = line.strip_prefix('[')?;
    let (time, rest) = rest.split_once(" ms] ")?;
    let at = time.trim().parse::<f64>().ok()?;
    let (thread, text) = match rest.strip_prefix('[').and_then(|rest| rest.split_once("] ")) {
        Some((thread, text)) if !thread.contains(' ') => (thread, text),
        _ => ("main", rest),
    };
    Some(TraceLine { at, thread: thread.to_string(), text: text.to_string() })
}

/// Every trace line in `text`, in order; other lines are skipped.
pub fn parse(text: &str) -> Vec<TraceLine> {
    text.lines().filter_map(parse_line).collect()
}

/// What a thread is doing during a [`Span`].
#[derive(Clone, Debug, PartialEq)]
pub enum Activity {
    /// Waiting in the kernel for something to happen: `poll`, `epoll`, `accept`, `read`.
    Waiting(String),
    /// Running callbacks or tasks: the loop's real work.
    Running,
    /// Running a timer's job.
    Timer,
    /// Stuck in a call that has nothing to do with the other clients: `sleep 300 ms`,
    /// `disk 200 ms`. On a loop's thread, everyone waits for it.
    Blocked(String),
    /// A pool worker running a job (`JobId(0)`).
    Job(String),
    /// A pool worker waiting on the disk inside a job (`disk 200 ms`).
    Disk(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub start: f64,
    pub end: f64,
    pub activity: Activity,
}

/// One thread's row.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub thread: String,
    pub spans: Vec<Span>,
}

/// What the trace says of one client's connection, in trace time.
#[derive(Clone, Debug, PartialEq)]
pub struct Connection {
    /// `127.0.0.1:40154`: the client's address, as the server saw it.
    pub peer: String,
    /// The thread that accepted it (chapter 9 has a loop per thread).
    pub thread: String,
    pub accepted: f64,
    /// The first read that brought bytes.
    pub request_read: Option<f64>,
    /// The last write that finished a response.
    pub response_sent: Option<f64>,
    pub closed: Option<f64>,
    /// Every line about it after the accept, and when: what its callbacks or its task did
    /// (`read 59 bytes`, `sent 170 bytes`, `closed`; chapter 2 says `response sent`).
    pub steps: Vec<(f64, String)>,
}

/// Everything drawn from one trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The loops' threads: `main`, then any others by name.
    pub loops: Vec<Lane>,
    /// The pool's workers that ran a job, by name.
    pub workers: Vec<Lane>,
    /// In the order they were accepted.
    pub connections: Vec<Connection>,
}

/// Is this thread a pool worker? Its name says so, or its lines do.
fn is_worker(thread: &str, lines: &[&TraceLine]) -> bool {
    thread.starts_with("pool-worker") || lines.iter().any(|line| line.text.starts_with("pool: "))
}

/// `"fs: slow disk, 200 ms"` -> `"disk 200 ms"`; `"sleep: 300 ms, blocking"` -> `"sleep 300 ms"`.
fn blocked_by(text: &str) -> Option<String> {
    if let Some(rest) = text.strip_prefix("fs: slow disk, ") {
        return Some(format!("disk {rest}"));
    }
    let rest = text.strip_prefix("sleep: ")?;
    Some(format!("sleep {}", rest.split(',').next().unwrap_or(rest)))
}

/// What a loop's thread does after printing `text` (see the table at the top).
fn loop_activity(text: &str) -> Activity {
    for call in ["poll", "epoll", "kqueue", "io_uring", "accept", "read"] {
        if text.starts_with(&format!("{call}: waiting")) {
            return Activity::Waiting(call.to_string());
        }
    }
    if text == "timer fired" {
        return Activity::Timer;
    }
    blocked_by(text).map_or(Activity::Running, Activity::Blocked)
}

/// What a pool worker does after printing `text`: `None` when it is idle.
fn worker_activity(text: &str, job: &mut Option<String>) -> Option<Activity> {
    if let Some(rest) = text.strip_prefix("pool: ") {
        let mut words = rest.split(' ');
        match (words.next(), words.next()) {
            (Some("starts"), Some(id)) => *job = Some(id.to_string()),
            (Some("finished"), _) => *job = None,
            _ => {}
        }
    } else if let Some(why) = blocked_by(text) {
        return Some(Activity::Disk(why));
    }
    job.clone().map(Activity::Job)
}

/// One thread's spans: each line's activity lasts until the thread's next line, the last
/// one until `until`. Neighbours doing the same are merged, except blocked stretches and
/// disk waits, which stay one per call so that each can be labelled.
fn spans(lines: &[&TraceLine], worker: bool, until: f64) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut job = None;
    for (index, line) in lines.iter().enumerate() {
        let end = lines.get(index + 1).map_or(until, |next| next.at).max(line.at);
        let activity = if worker {
            worker_activity(&line.text, &mut job)
        } else {
            Some(loop_activity(&line.text))
        };
        let Some(activity) = activity else { continue };
        let separate = matches!(activity, Activity::Blocked(_) | Activity::Disk(_));
        match spans.last_mut() {
            Some(last) if last.activity == activity && last.end == line.at && !separate => {
                last.end = end;
            }
            _ => spans.push(Span { start: line.at, end, activity }),
        }
    }
    spans
}

/// The number after `key` in `text`: `number_after("(token 4)", "token ")` is 4.
fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Follows the connections through the lines of every thread (see the top of the file).
fn connections(lines: &[TraceLine]) -> Vec<Connection> {
    let mut found: Vec<Connection> = Vec::new();
    let mut by_fd: HashMap<u64, usize> = HashMap::new();
    let mut by_token: HashMap<u64, usize> = HashMap::new();
    // Per thread: the token whose callback runs now, and the client accepted last.
    let mut callback_of: HashMap<&str, u64> = HashMap::new();
    let mut accepted_last: HashMap<&str, usize> = HashMap::new();
    for line in lines {
        let (thread, text, at) = (line.thread.as_str(), line.text.as_str(), line.at);
        if let Some(rest) = text.strip_prefix("accept: client ") {
            let peer = rest.split(' ').next().unwrap_or(rest).to_string();
            let index = found.len();
            found.push(Connection {
                peer,
                thread: thread.to_string(),
                accepted: at,
                request_read: None,
                response_sent: None,
                closed: None,
                steps: Vec::new(),
            });
            if let Some(fd) = number_after(rest, "fd ") {
                by_fd.insert(fd, index);
            }
            if let Some(token) = number_after(rest, "token ") {
                by_token.insert(token, index);
            }
            accepted_last.insert(thread, index);
            continue;
        }
        if let Some(rest) = text.strip_prefix("token ") {
            if let Some(token) = number_after(rest, "") {
                callback_of.insert(thread, token);
            }
            continue;
        }
        // Which connection the line is about, and what it says of it.
        let (index, event) = if let Some(rest) = text.strip_prefix("fd ") {
            let Some(fd) = number_after(rest, "") else { continue };
            let Some((_, event)) = rest.split_once(": ") else { continue };
            let known = by_fd.get(&fd).copied();
            let from_callback = || {
                let index = *by_token.get(callback_of.get(thread)?)?;
                // Only a connection whose descriptor is not known yet: this is its first.
                (!by_fd.values().any(|&known| known == index)).then_some(index)
            };
            let Some(index) = known.or_else(from_callback) else { continue };
            by_fd.insert(fd, index);
            if event == "closed" {
                by_fd.remove(&fd);
            }
            (index, event)
        } else if text.starts_with("read: ") || text.starts_with("write: ") {
            // Chapter 1: `read: 91 bytes`, `write: 172 bytes, status 200`.
            let Some(&index) = accepted_last.get(thread) else { continue };
            (index, text)
        } else {
            continue;
        };
        let connection = &mut found[index];
        connection.steps.push((at, event.to_string()));
        if event == "closed" {
            connection.closed = Some(at);
        } else if ["response sent", "sent ", "spliced ", "write: "]
            .iter()
            .any(|s| event.starts_with(s))
        {
            connection.response_sent = Some(at);
        } else if let Some(count) = event
            .strip_prefix("read")
            .and_then(|rest| number_after(rest, " ").filter(|_| rest.ends_with(" bytes")))
        {
            if count > 0 && connection.request_read.is_none() {
                connection.request_read = Some(at);
            }
        }
    }
    found
}

/// Builds the lanes from a whole trace; the last state of each thread lasts until `until`.
pub fn build(lines: &[TraceLine], until: f64) -> Timeline {
    let mut threads: Vec<&str> = Vec::new();
    for line in lines {
        if !threads.contains(&line.thread.as_str()) {
            threads.push(&line.thread);
        }
    }
    let mut timeline = Timeline { loops: Vec::new(), workers: Vec::new(), connections: Vec::new() };
    for thread in threads {
        let own: Vec<&TraceLine> = lines.iter().filter(|line| line.thread == thread).collect();
        let worker = is_worker(thread, &own);
        let lane = Lane { thread: thread.to_string(), spans: spans(&own, worker, until) };
        if !worker {
            timeline.loops.push(lane);
        } else if !lane.spans.is_empty() {
            timeline.workers.push(lane);
        }
    }
    // `main` first (chapter 9's loop 0), then `loop-1`, ...; the workers by name.
    timeline.loops.sort_by_key(|lane| (lane.thread != "main", lane.thread.clone()));
    timeline.workers.sort_by(|a, b| a.thread.cmp(&b.thread));
    timeline.connections = connections(lines);
    timeline
}

#[cfg(test)]
#[path = "lanes_tests.rs"]
mod tests;
