//! The scenarios: the same loads, applied to every server, one at a time.
//!
//! Each scenario is meant to show one thing a reader of the book should *see*:
//!
//! - keep-alive at 1, 50 and 500 connections: what a connection per request costs
//!   (chapters 1 and 2 must reconnect for every request), and how each server copes with
//!   many clients at once;
//! - pipelining: sixteen requests at once on a connection, which only an event loop that
//!   keeps reading after the first answer can turn into throughput;
//! - a big static file: memory and copying (chapters 1-5 read the whole file, 6-10 a chunk
//!   at a time, chapter 11 and nginx hand it to the kernel, by `splice` and `sendfile`);
//! - a 64 KiB file and pipelined 64 KiB echoes: is there work for a second core? Only
//!   where the server's share of the work clearly outweighs the generator's, and the
//!   echo shows that it does not, the file that it does (see their notes);
//! - idle connections: thousands of clients that connect and say nothing while one client
//!   measures `/hello`. `poll(2)` hands the kernel the whole list of sockets on every turn,
//!   so each idle socket makes every turn a little slower; nginx's `epoll` does not care.

use std::time::Duration;

use crate::cpu::{self, CpuPerRequest};
use crate::generator::{Generator, Load, LoadResult};
use crate::probes::{self, IdleError};
use crate::targets::{Kind, Site, Target};

pub struct Scenario {
    /// Short name, for `--scenarios` and the tables.
    pub id: &'static str,
    pub title: &'static str,
    /// One line for the book: what this scenario shows.
    pub note: &'static str,
    pub path: &'static str,
    /// Bytes of request body (a `POST`); 0 for a `GET`.
    pub body: usize,
    pub connections: usize,
    pub pipeline: usize,
    /// Connections opened and left silent during the measurement.
    pub idle: usize,
}

const HELLO: &str = "/hello";
const FILE: &str = "/files/big.bin";
const MEDIUM_FILE: &str = "/files/medium.bin";
const ECHO: &str = "/echo";

pub const SCENARIOS: [Scenario; 11] = [
    Scenario {
        id: "keep-alive-1",
        title: "/hello, 1 connection",
        note: "One client, one request at a time: the round trip through each server's loop. \
               Chapters 1-2 close after every answer, so each request also pays a new connection.",
        path: HELLO,
        body: 0,
        connections: 1,
        pipeline: 1,
        idle: 0,
    },
    Scenario {
        id: "keep-alive-50",
        title: "/hello, 50 connections",
        note: "Fifty clients at once, each reusing its connection where the server allows it \
               (keep-alive, from chapter 3).",
        path: HELLO,
        body: 0,
        connections: 50,
        pipeline: 1,
        idle: 0,
    },
    Scenario {
        id: "keep-alive-500",
        title: "/hello, 500 connections",
        note: "Five hundred clients: now every `poll` turn hands the kernel hundreds of sockets.",
        path: HELLO,
        body: 0,
        connections: 500,
        pipeline: 1,
        idle: 0,
    },
    Scenario {
        id: "pipelined-16",
        title: "/hello, 50 connections, 16 pipelined",
        note: "Each connection sends 16 requests before reading. A server without pipelining \
               answers the first and closes; the other 15 are lost (not counted as answers). \
               wrk times whole batches of 16, so it times nothing for a server that closes \
               after the first answer, and its pipelined p99 is sometimes a bogus 0: both \
               shown as –.",
        path: HELLO,
        body: 0,
        connections: 50,
        pipeline: 16,
        idle: 0,
    },
    Scenario {
        id: "file-8mib",
        title: "8 MiB file, 10 connections",
        note: "Ten clients download an 8 MiB file (multiply requests/s by 8 for MiB/s). \
               Chapters 1-5 read the whole file into memory per request, chapters 6-10 a \
               chunk at a time (compare their peak memory); chapter 11 moves it by \
               `splice` through a pipe, nginx by `sendfile`, neither touching the bytes.",
        path: FILE,
        body: 0,
        connections: 10,
        pipeline: 1,
        idle: 0,
    },
    Scenario {
        id: "file-64k",
        title: "64 KiB file, 50 connections",
        note: "Fifty clients download a 64 KiB file, again and again. For a request of a \
               hundred bytes the server reads 64 KiB and sends it, and on loopback the sender \
               does much of the receiver's TCP work too: the server's share is several times \
               the generator's, so a second loop has a core's worth of work to take. \
               (Chapters 6-9 read files on their thread pool, so even one loop uses more than \
               one core here; nginx uses `sendfile`.)",
        path: MEDIUM_FILE,
        body: 0,
        connections: 50,
        pipeline: 1,
        idle: 0,
    },
    Scenario {
        id: "pipelined-echo-64k",
        title: "POST /echo 64 KiB, 50 connections, 16 pipelined",
        note: "Each connection sends 16 `POST /echo` requests of 64 KiB before reading, and \
               each answer carries the 64 KiB back: a megabyte each way per batch. It looks \
               like the server's work, but on loopback a sender does much of the receiver's TCP \
               work too, and the generator sends as many bytes as the server: its CPU per \
               request is about the server's. With two cores and the generator on one, a \
               second loop finds no spare core here (compare `file-64k`). nginx needs its \
               echo module, and answers chunked.",
        path: ECHO,
        body: 64 * 1024,
        connections: 50,
        pipeline: 16,
        idle: 0,
    },
    Scenario {
        id: "idle-0",
        title: "/hello, 1 client, no idle connections",
        note: "The baseline for the idle sweep: one client, nothing else connected.",
        path: HELLO,
        body: 0,
        connections: 1,
        pipeline: 1,
        idle: 0,
    },
    Scenario {
        id: "idle-1k",
        title: "/hello, 1 client, 1,000 idle connections",
        note: "A thousand connections that say nothing. Chapter 1 is stuck on the first of \
               them; a `poll` loop pays for all of them on every turn.",
        path: HELLO,
        body: 0,
        connections: 1,
        pipeline: 1,
        idle: 1_000,
    },
    Scenario {
        id: "idle-5k",
        title: "/hello, 1 client, 5,000 idle connections",
        note: "Five thousand idle connections.",
        path: HELLO,
        body: 0,
        connections: 1,
        pipeline: 1,
        idle: 5_000,
    },
    Scenario {
        id: "idle-10k",
        title: "/hello, 1 client, 10,000 idle connections",
        note: "Ten thousand idle connections: the C10K problem, on a laptop's budget.",
        path: HELLO,
        body: 0,
        connections: 1,
        pipeline: 1,
        idle: 10_000,
    },
];

/// The result of one round of one scenario against one server.
#[derive(Clone, Debug)]
pub enum Outcome {
    Measured {
        load: LoadResult,
        peak_rss_kib: Option<u64>,
        /// The server's CPU time per request answered (`None`: could not be read).
        cpu: Option<CpuPerRequest>,
    },
    /// The server could not serve the scenario at all (chapter 1 behind an idle client).
    Blocked(String),
    /// Something went wrong that is not the server's lesson (it would not start, it
    /// crashed, the generator failed).
    Failed(String),
}

// ANCHOR: run_once
/// One round: a fresh server, the idle connections if any, a probe that it answers, the
/// load with the server's CPU time read just before and just after it, its peak memory;
/// then the server is killed and the idle connections closed.
pub fn run_once(
    target: &Target, site: &Site, generator: &Generator, scenario: &Scenario, duration: Duration,
) -> Outcome {
    if let Kind::Nginx { echo: None, .. } = &target.kind {
        if scenario.path == ECHO {
            return Outcome::Failed(
                "this nginx has no echo module (Debian: libnginx-mod-http-echo)".into(),
            );
        }
    }
    let mut server = match target.start(site) {
        Ok(server) => server,
        Err(error) => return Outcome::Failed(error),
    };
    let has_stats = match &target.kind {
        Kind::Chapter { .. } => true,
        Kind::Nginx { status_page, .. } => *status_page,
    };
    let idle = if scenario.idle > 0 {
        match probes::open_idle(server.address, scenario.idle, has_stats) {
            Ok(idle) => idle,
            Err(IdleError::Blocked(why)) => return Outcome::Blocked(why),
            Err(IdleError::OurLimit(why)) => return Outcome::Failed(why),
        }
    } else {
        Vec::new()
    };
    // Before measuring, one request with a deadline: a server that cannot answer even that
    // is blocked, and the generator would only collect timeouts. (It also makes sure that
    // nginx's workers are up before we list them.)
    match probes::request(server.address, scenario.path, scenario.body, probes::PROBE_LIMIT) {
        Ok((200, _)) => {}
        Ok((status, _)) => return Outcome::Failed(format!("{} answered {status}", scenario.path)),
        Err(error) => return Outcome::Blocked(format!("{}: {error}", scenario.path)),
    }
    let load = Load {
        path: scenario.path.to_string(),
        body: scenario.body,
        connections: scenario.connections,
        pipeline: scenario.pipeline,
        duration,
    };
    let pids = server.pids();
    let before = cpu::sample(&pids);
    let result = generator.run(server.address, &load);
    let after = cpu::sample(&pids);
    let peak_rss_kib = server.peak_rss_kib();
    if let Some(status) = server.guard.exited() {
        return Outcome::Failed(format!("{} died during the load ({status})", target.name));
    }
    // Kill the server before closing the idle connections: otherwise it would spend its
    // last moments handling ten thousand hang-ups.
    drop(server);
    drop(idle);
    match result {
        Ok(load) => {
            let cpu = match (before, after) {
                (Ok(before), Ok(after)) => cpu::per_request(before, after, load.requests),
                _ => None,
            };
            Outcome::Measured { load, peak_rss_kib, cpu }
        }
        Err(error) => Outcome::Failed(error),
    }
}
// ANCHOR_END: run_once

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::{BIG_FILE, MEDIUM_FILE as MEDIUM_FILE_NAME};

    #[test]
    fn the_file_scenario_asks_for_the_file_the_site_has() {
        assert_eq!(FILE, format!("/files/{BIG_FILE}"));
        assert_eq!(MEDIUM_FILE, format!("/files/{MEDIUM_FILE_NAME}"));
    }

    #[test]
    fn scenario_names_are_unique() {
        for (index, scenario) in SCENARIOS.iter().enumerate() {
            assert!(SCENARIOS[..index].iter().all(|other| other.id != scenario.id));
        }
    }
}
