//! Heap allocations per `/hello` request, counted with valgrind's DHAT.
//!
//! The fast path of a good server allocates nothing per request: buffers are reused, the
//! answer to `/hello` is a constant. To check that without changing a line of the chapter,
//! we run it under `valgrind --tool=dhat`, which counts every `malloc` ("blocks") from
//! start to exit, and apply exactly N requests over one connection (the workbook's own
//! `load --requests N`). Doing it twice, with N1 and N2 requests, and subtracting cancels
//! everything that is not per request (start-up, the one connection, shutdown):
//!
//! ```text
//! allocations per request = (blocks with N2 - blocks with N1) / (N2 - N1)
//! ```
//!
//! Chapters 1 and 2 close after every answer, so for them "per request" also includes
//! accepting and dropping a connection.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::process::run_bounded;
use crate::targets::{Site, Target};

#[derive(Clone, Debug)]
pub struct AllocationCount {
    pub blocks_per_request: f64,
    pub bytes_per_request: f64,
}

// ANCHOR: count
pub fn count(
    valgrind: &Path, load_program: &Path, target: &Target, site: &Site, requests: (u64, u64),
) -> Result<AllocationCount, String> {
    // Tried and seen: under valgrind 3.19 chapter 10 never acts on its SIGTERM (so DHAT never
    // writes its totals), and with two loops it loses requests. Valgrind does not follow
    // io_uring (it cannot see what the kernel does in the rings), so a chapter named for
    // io_uring is not run under it: a minute and a half of waiting, to learn nothing.
    if target.name.contains("io-uring") {
        return Err(
            "valgrind does not follow io_uring (under it the chapter ignores SIGTERM)".into()
        );
    }
    let (few, many) = requests;
    let (few_blocks, few_bytes) = run(valgrind, load_program, target, site, few)?;
    let (many_blocks, many_bytes) = run(valgrind, load_program, target, site, many)?;
    let extra = (many - few) as f64;
    Ok(AllocationCount {
        blocks_per_request: (many_blocks as f64 - few_blocks as f64) / extra,
        bytes_per_request: (many_bytes as f64 - few_bytes as f64) / extra,
    })
}

/// Runs the chapter under DHAT, sends exactly `requests` requests, stops it with SIGTERM
/// (DHAT writes its totals as the program exits), and returns (blocks, bytes) allocated.
fn run(
    valgrind: &Path, load_program: &Path, target: &Target, site: &Site, requests: u64,
) -> Result<(u64, u64), String> {
    let log = site.scratch.join(format!("dhat-{}-{requests}.log", target.name));
    let wrapper = [
        valgrind.display().to_string(),
        "--tool=dhat".to_string(),
        format!("--dhat-out-file={}", site.scratch.join("dhat.json").display()),
        format!("--log-file={}", log.display()),
    ];
    let mut server = target.start_under(site, &wrapper)?;
    let output = run_bounded(
        Command::new(load_program)
            .args(["--connections", "1", "--duration", "120"])
            .args(["--requests", &requests.to_string()])
            .arg(format!("http://{}/hello", server.address)),
        Duration::from_secs(130),
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
    server.guard.signal("TERM").map_err(|error| format!("cannot stop {}: {error}", target.name))?;
    if server.guard.wait_for_exit(Duration::from_secs(20)).is_none() {
        return Err(format!("{} did not exit on SIGTERM within 20 s", target.name));
    }
    let text = fs::read_to_string(&log).map_err(|error| format!("no DHAT log: {error}"))?;
    parse_total(&text).ok_or_else(|| "no \"Total:\" line in the DHAT log".into())
}
// ANCHOR_END: count

/// Reads `==123== Total:     749,499 bytes in 15,876 blocks` -> (blocks, bytes).
pub fn parse_total(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|line| line.contains("Total:"))?;
    let rest = line.split("Total:").nth(1)?;
    let number = |word: &str| word.replace(',', "").parse::<u64>().ok();
    let words: Vec<&str> = rest.split_whitespace().collect();
    // ["749,499", "bytes", "in", "15,876", "blocks"]
    match words.as_slice() {
        [bytes, "bytes", "in", blocks, "blocks"] => Some((number(blocks)?, number(bytes)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_dhat_total() {
        let text =
            "==1== \n==1== Total:     749,499 bytes in 15,876 blocks\n==1== At t-gmax: 2 bytes";
        assert_eq!(parse_total(text), Some((15_876, 749_499)));
    }
}
