//! The row "a big download costs bounded memory" (chapter 6 on).
//!
//! - [`big_download_memory`]: four clients download one big file at once. Does each cost
//!   the server the whole file, or a chunk of it?
//!
//! It watches the server process's memory (via [`crate::resources`]), so it starts its
//! own server and skips for someone else's.

use std::time::{Duration, Instant};

use crate::client::{Client, ReadError};
use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{leak, rule, size, Rule, FLOODS};
use crate::probes::pid;
use crate::probes::{
    broken, check, connect, exchange, expect_status, get, make_site, measured, needs_own_server,
    seconds, sending, still_serves, Outcome, Probed, Target, PATIENCE,
};
use crate::probes::{probe, Module, Probe};
use crate::resources::{self, growth_note, mebibytes};
use crate::server::Options;
use shared::files::MAX_FILE;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("big_download_memory", Capability::BoundedDownload, big_download_memory),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::BoundedDownload,
        description: "a big download costs bounded memory",
        chapters: [
            No(leak(format!(
                "ch01 reads a file whole into memory before sending it: a download costs the \
                whole file, so files over {} are refused.",
                size(MAX_FILE)
            ))),
            No(leak(format!(
                "ch02 reads a file whole into memory before sending it: every download in \
                flight holds its whole file, so files over {} are refused.",
                size(MAX_FILE)
            ))),
            No("ch03 reads a file whole into memory before sending it: the file waits in the \
                connection's output buffer for as long as the client takes to read it."),
            No("ch04 reads a file whole into memory before sending it: timers change when \
                the loop waits, not how much a download holds."),
            No("ch05 reads a file whole into memory before sending it: its promise of a \
                file's contents is a promise of all of them at once."),
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
        ],
        note: None,
    }
}
// ANCHOR_END: row

/// The file [`big_download_memory`] serves, how many clients fetch it at once, and how much
/// more memory that may cost the server at its peak. Read whole, it would cost 96 MiB per
/// client (384 MiB); a chunk at a time (256 KiB), a chunk per client plus what the kernel
/// buffers, a few MiB. The bound sits far from both.
pub(super) const DOWNLOAD_BYTES: usize = 96 << 20;
pub(super) const DOWNLOADERS: usize = 4;
pub(super) const DOWNLOAD_GROWTH_BOUND: u64 = 64 << 20;
/// How long each turn of [`big_download_memory`] waits on one client before it moves on.
const TURN: Duration = Duration::from_millis(10);

/// One client of [`big_download_memory`].
struct Download {
    client: Client,
    /// The body's length, once the head has come.
    length: Option<usize>,
    received: usize,
}

impl Download {
    fn done(&self) -> bool {
        self.length == Some(self.received)
    }
}

// ANCHOR: big_download_memory
/// Four clients download one 96 MiB file at once, each taking a little in turn, so that
/// all four are in flight from the first byte to the last. A server that reads the file
/// whole before sending it holds it once per client; one that sends it a chunk at a time
/// holds a chunk per client. Its peak memory tells which: the growth must stay under 64
/// MiB, and every download must arrive whole (its byte count; the file is all zeros, made
/// in an instant as a sparse file).
///
/// Chapters that read files whole refuse one this big (a 500, from shared's
/// `files::MAX_FILE`), rather than take 96 MiB per request: that refusal is their
/// limitation too.
pub fn big_download_memory(target: &Target) -> Probed {
    needs_own_server(target)?;
    let site = make_site(0)?;
    std::fs::File::create(site.root.join("huge.bin"))
        .and_then(|file| file.set_len(DOWNLOAD_BYTES as u64))
        .map_err(|error| broken(format!("cannot make huge.bin: {error}")))?;
    let mut server =
        target.start(Options { root: Some(site.root.clone()), ..Options::default() })?;
    let pid = pid(&server)?;
    // At rest after a file was served, so that what the first file costs once (a thread
    // pool's first jobs, say) counts as rest.
    expect_status(&exchange(&server, &get("/files/hello.txt"))?, &[200], "GET /files/hello.txt")?;
    let at_rest = measured(resources::memory(pid), resources::NO_MEMORY)?;
    measured(at_rest.peak, resources::NO_PEAK_MEMORY)?;

    let what = format!("GET /files/huge.bin ({} MiB)", DOWNLOAD_BYTES >> 20);
    let mut downloads = Vec::with_capacity(DOWNLOADERS);
    for _ in 0..DOWNLOADERS {
        let mut client = connect(&server)?;
        sending(&mut client, &get("/files/huge.bin"), &what)?;
        downloads.push(Download { client, length: None, received: 0 });
    }
    let started = Instant::now();
    let mut progress_at = started;
    while !downloads.iter().all(Download::done) {
        for (index, download) in downloads.iter_mut().enumerate() {
            let what = format!("{what}, client {} of {DOWNLOADERS}", index + 1);
            let turn_ends = Instant::now() + TURN;
            let Some(length) = download.length else {
                // Not every chapter answers all four at once (chapter 1 takes one client at
                // a time), so a head that is not here yet is waited for in later turns.
                let head = match download.client.read_head(turn_ends, false) {
                    Ok(head) => head,
                    Err(ReadError::TimedOut { .. }) => continue,
                    Err(error) => return Err(broken(format!("{what}: {error}"))),
                };
                progress_at = Instant::now();
                let status = head.response.status;
                if (500..600).contains(&status) {
                    let mut refusal = head.response;
                    refusal.body = download
                        .client
                        .read_body(head.body_length, Instant::now() + PATIENCE)
                        .map_err(|error| broken(format!("{what}: {error}")))?;
                    return Ok(Outcome::Lacks(format!(
                        "{what} was refused with {}, rather than sent",
                        refusal.summary()
                    )));
                }
                expect_status(&head.response, &[200], &what)?;
                check!(
                    head.body_length == DOWNLOAD_BYTES,
                    "{what}: Content-Length {}, expected {DOWNLOAD_BYTES}",
                    head.body_length
                );
                download.length = Some(head.body_length);
                continue;
            };
            if download.received == length {
                continue;
            }
            // Read for the whole turn, not once: a server that sends one download at a
            // time (chapter 1) would otherwise take minutes, 64 KiB a turn.
            while download.received < length {
                match download.client.read_some(length - download.received, turn_ends) {
                    Ok(bytes) => {
                        download.received += bytes.len();
                        progress_at = Instant::now();
                    }
                    Err(ReadError::TimedOut { .. }) => break,
                    Err(error) => {
                        return Err(broken(format!(
                            "{what}: {error} ({} of {length} body bytes had come)",
                            download.received
                        )))
                    }
                }
            }
        }
        if progress_at.elapsed() > PATIENCE {
            let received: Vec<String> =
                downloads.iter().map(|download| mebibytes(download.received as u64)).collect();
            return Err(broken(format!(
                "{what} by {DOWNLOADERS} clients at once: no progress for {} s (each had {})",
                PATIENCE.as_secs(),
                received.join(", ")
            )));
        }
    }
    let took = started.elapsed();
    let loaded = measured(resources::memory(pid), resources::NO_MEMORY)?;
    let growth = measured(loaded.peak, resources::NO_PEAK_MEMORY)?.saturating_sub(at_rest.resident);
    // Shown with `cargo test -p suite big_download -- --nocapture`: the measurement.
    println!(
        "{}: {DOWNLOADERS} downloads of {} at once in {}: peak memory {} over {} at rest",
        server.label,
        mebibytes(DOWNLOAD_BYTES as u64),
        seconds(took),
        mebibytes(growth),
        mebibytes(at_rest.resident)
    );
    drop(downloads);
    still_serves(&mut server, "four big downloads at once")?;
    if growth >= DOWNLOAD_GROWTH_BOUND {
        return Ok(Outcome::Lacks(format!(
            "{DOWNLOADERS} clients downloading a {} file at once grew the server's memory by \
             {} at its peak {}: each holds much of the file",
            mebibytes(DOWNLOAD_BYTES as u64),
            mebibytes(growth),
            growth_note(at_rest.resident, DOWNLOAD_GROWTH_BOUND)
        )));
    }
    Ok(Outcome::Works)
}
// ANCHOR_END: big_download_memory

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("big_download_memory", FLOODS, format!(
            "{} clients download a {} file at once, each a little at a time: every download \
             arrives whole, and the server's peak memory grows by less than {}. Send a file a \
             piece at a time. (Before chapter 6, refusing so big a file with a 5xx is the \
             expected lack.)",
            DOWNLOADERS, size(DOWNLOAD_BYTES as u64), size(DOWNLOAD_GROWTH_BOUND))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        DOWNLOADERS.to_string(),
        size(DOWNLOAD_BYTES as u64),
        size(DOWNLOAD_GROWTH_BOUND),
        size(MAX_FILE),
    ]
}
