//! Heap allocations per `/hello` request, counted by a library of ours that the server
//! loads with `LD_PRELOAD` (`alloc_counter.rs`, beside this file).
//!
//! The fast path of a good server allocates nothing per request: buffers are reused, the
//! answer to `/hello` is a constant. To check that without changing a line of the chapter,
//! the harness builds `alloc_counter.rs` into a shared library with the toolchain's
//! `rustc`, starts the server with the library preloaded, and reads the counts that it
//! keeps in a file while the server runs. After a warm-up, the server answers exactly N1
//! and then N2 `/hello` requests, each batch over one connection (the workbook's own
//! `load --requests N`), and the counts are read before, between and after. Subtracting
//! the two batches cancels what is not per request (the connection, its buffers):
//!
//! ```text
//! allocations per request = ((after - between) - (between - before)) / (N2 - N1)
//! ```
//!
//! Chapters 1 and 2 close after every answer, so for them "per request" also includes
//! accepting and dropping a connection. nginx is counted too, as it is: its figure is its
//! calls to `malloc` (a pool for each connection and each request, among others), not
//! what it then carves out of its pools.
//!
//! Valgrind's DHAT counted the same allocations before (as many, chapter by chapter), but
//! only once the server had exited, and not in chapter 10: valgrind cannot follow what the
//! kernel does in io_uring's rings.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::process::run_bounded;
use crate::targets::{Site, Target};

/// The counter's source, kept in the bench's binary, so the harness can build it wherever
/// it runs.
const COUNTER_SOURCE: &str = include_str!("alloc_counter.rs");
/// Where the counter finds its file: the environment variable it reads, and the file's
/// size (two `u64`s: allocations, bytes).
const COUNTS_VARIABLE: &str = "WORKBOOK_ALLOCATION_COUNTS";
const COUNTS_SIZE: usize = 16;
/// Requests (over a few connections, so that each of chapter 9's loops gets some) that
/// fill every pool and cache before the counting starts.
const WARM_UP: (usize, u64) = (4, 400);

#[derive(Clone, Debug)]
pub struct AllocationCount {
    pub allocations_per_request: f64,
    pub bytes_per_request: f64,
}

/// What the counter's file says: allocations and bytes so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub allocations: u64,
    pub bytes: u64,
}

/// Builds the counter into `folder` with the toolchain's `rustc` (`$RUSTC`, else `rustc`
/// on the `PATH`), and returns where the library is.
pub fn build_counter(folder: &Path) -> Result<PathBuf, String> {
    let source = folder.join("alloc_counter.rs");
    let library = folder.join("liballoc_counter.so");
    // `LD_PRELOAD` is a list split at spaces and colons: a path with one would be two.
    if library.to_string_lossy().contains([' ', ':']) {
        return Err(format!("{} has a space or a colon in it", library.display()));
    }
    fs::write(&source, COUNTER_SOURCE)
        .map_err(|error| format!("cannot write {}: {error}", source.display()))?;
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = run_bounded(
        Command::new(&rustc)
            .args(["-O", "--crate-type", "cdylib", "-C", "panic=abort", "--edition", "2021"])
            .arg("-o")
            .arg(&library)
            .arg(&source),
        Duration::from_secs(120),
    )
    .map_err(|error| format!("cannot run {}: {error}", rustc.to_string_lossy()))?;
    if !output.status.is_some_and(|status| status.success()) {
        return Err(format!(
            "{} could not build the counter: {}",
            rustc.to_string_lossy(),
            output.stderr.trim()
        ));
    }
    Ok(library)
}

// ANCHOR: count
/// Counts `target`'s allocations per `/hello` with the counter `library`, over `requests`
/// = (N1, N2) requests.
pub fn count(
    library: &Path, load_program: &Path, target: &Target, site: &Site, requests: (u64, u64),
) -> Result<AllocationCount, String> {
    let file = site.scratch.join(format!("allocations-{}.bin", target.name.replace(' ', "-")));
    fs::write(&file, [0; COUNTS_SIZE])
        .map_err(|error| format!("cannot write {}: {error}", file.display()))?;
    let server = target.start_with(
        site,
        &[("LD_PRELOAD", library.as_os_str()), (COUNTS_VARIABLE, file.as_os_str())],
    )?;
    // Every program allocates as it starts: none at all means that the library was not
    // loaded, and every count after this would be a meaningless zero.
    if read_counts(&file)?.allocations == 0 {
        return Err("the counter counted nothing: LD_PRELOAD did not take".into());
    }
    let (few, many) = requests;
    apply(load_program, server.address, WARM_UP)?;
    let before = read_counts(&file)?;
    apply(load_program, server.address, (1, few))?;
    let between = read_counts(&file)?;
    apply(load_program, server.address, (1, many))?;
    let after = read_counts(&file)?;
    Ok(per_request(before, between, after, requests))
}
// ANCHOR_END: count

/// Sends exactly `requests` `/hello` requests over `connections` connections with `load`,
/// and insists that every one was answered.
fn apply(
    load_program: &Path, address: SocketAddr, (connections, requests): (usize, u64),
) -> Result<(), String> {
    let output = run_bounded(
        Command::new(load_program)
            .args(["--connections", &connections.to_string(), "--duration", "60"])
            .args(["--requests", &requests.to_string()])
            .arg(format!("http://{address}/hello")),
        Duration::from_secs(70),
    )
    .map_err(|error| format!("cannot run load: {error}"))?;
    let answered = crate::generator::parse_own(&output.stdout)
        .ok_or_else(|| format!("could not read load's output: {}", output.stderr))?;
    if answered.requests != requests || answered.errors > 0 {
        return Err(format!(
            "asked for {requests} requests, got {} answered and {} errors",
            answered.requests, answered.errors
        ));
    }
    Ok(())
}

fn read_counts(file: &Path) -> Result<Counts, String> {
    let bytes =
        fs::read(file).map_err(|error| format!("cannot read {}: {error}", file.display()))?;
    parse_counts(&bytes).ok_or_else(|| format!("{} is not {COUNTS_SIZE} bytes", file.display()))
}

/// The file's two native-endian `u64`s, as the counter wrote them.
pub fn parse_counts(bytes: &[u8]) -> Option<Counts> {
    let bytes: &[u8; COUNTS_SIZE] = bytes.try_into().ok()?;
    let (allocations, bytes) = bytes.split_at(8);
    Some(Counts {
        allocations: u64::from_ne_bytes(allocations.try_into().ok()?),
        bytes: u64::from_ne_bytes(bytes.try_into().ok()?),
    })
}

/// Per request, from the readings before, between and after the batches of N1 and N2
/// requests: the second batch's counts less the first's, over N2 - N1. (It can come out a
/// hair below zero, when something the first batch left behind was done during the second.)
pub fn per_request(
    before: Counts, between: Counts, after: Counts, (few, many): (u64, u64),
) -> AllocationCount {
    let extra = |of: fn(Counts) -> u64| {
        let first = of(between) as f64 - of(before) as f64;
        let second = of(after) as f64 - of(between) as f64;
        (second - first) / (many - few) as f64
    };
    AllocationCount {
        allocations_per_request: extra(|counts| counts.allocations),
        bytes_per_request: extra(|counts| counts.bytes),
    }
}

#[cfg(test)]
#[path = "allocations_tests.rs"]
mod tests;
