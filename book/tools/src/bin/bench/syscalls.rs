//! System calls per request, counted with `strace -c`.
//!
//! Every system call is a trip into the kernel and back. An event loop that does
//! `poll + read + write` per request is doing three; one that also reads until `EAGAIN`
//! and rebuilds its `poll` list every turn does more. This counts them honestly: a fresh
//! server, `strace -c -f` attached *before* the load starts and detached *after* it ends,
//! so every call the server made while serving those requests is in the count, and the
//! count is divided by the requests the load generator saw answered.
//!
//! One caveat, printed with the numbers: `strace` slows every call down a lot, so the
//! server runs slower while traced and may find more work ready per `poll` turn than it
//! would untraced. The count per request is still the right order of magnitude.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::generator::{Generator, Load};
use crate::process::Guard;
use crate::targets::{Site, Target};

#[derive(Clone, Debug)]
pub struct SyscallCount {
    pub requests: u64,
    pub total: u64,
    /// The most frequent calls: name, calls, of which failed (`EAGAIN` and the like).
    pub top: Vec<(String, u64, u64)>,
}

impl SyscallCount {
    pub fn per_request(&self) -> f64 {
        self.total as f64 / self.requests.max(1) as f64
    }
}

// ANCHOR: count
pub fn count(
    strace: &Path, target: &Target, site: &Site, generator: &Generator, load: &Load,
) -> Result<SyscallCount, String> {
    let server = target.start(site)?;
    // An answer first: nginx's master listens before its workers exist.
    crate::probes::get(server.address, "/hello", crate::probes::PROBE_LIMIT)?;
    let summary = site.scratch.join(format!("strace-{}.txt", server.name));
    let _ = fs::remove_file(&summary);
    // Every process of the server (nginx's master and workers); `-f` adds each one's
    // threads (chapter 6's pool, chapter 9's loops).
    let pids = server.pids();
    let mut command = Command::new(strace);
    command.args(["-c", "-f", "-U", "calls,errors,name", "-o"]).arg(&summary);
    for pid in &pids {
        command.args(["-p", &pid.to_string()]);
    }
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut tracer =
        Guard::spawn(&mut command).map_err(|error| format!("cannot run strace: {error}"))?;

    // strace says "Process N attached" for each process once it is in place; only then
    // may the load begin.
    let stderr = tracer.child().stderr.take();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let Some(stderr) = stderr else { return };
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut said = Vec::new();
    let mut attached = 0;
    while attached < pids.len() {
        match receiver.recv_timeout(Duration::from_secs(5)) {
            Ok(line) if line.contains("attached") => attached += 1,
            Ok(line) => said.push(line),
            // Not permitted to trace (a container without CAP_SYS_PTRACE, say), or hung.
            Err(_) => return Err(format!("strace did not attach: {}", said.join(" "))),
        }
    }

    let result = generator.run(server.address, load)?;
    // SIGINT makes strace detach and write its summary.
    tracer.signal("INT").map_err(|error| format!("cannot stop strace: {error}"))?;
    if tracer.wait_for_exit(Duration::from_secs(10)).is_none() {
        return Err("strace did not finish within 10 s".into());
    }
    drop(server);
    let text = fs::read_to_string(&summary)
        .map_err(|error| format!("no strace summary ({}): {error}", summary.display()))?;
    let mut count = parse_summary(&text).ok_or("could not read strace's summary")?;
    count.requests = result.requests;
    Ok(count)
}
// ANCHOR_END: count

/// Reads `strace -c -U calls,errors,name` output:
///
/// ```text
///     calls    errors syscall
/// --------- --------- ----------------
///     51234     17000 read
///     17100           write
/// --------- --------- ----------------
///     68334     17000 total
/// ```
pub fn parse_summary(text: &str) -> Option<SyscallCount> {
    let mut rows = Vec::new();
    let mut total = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(first), Some(name)) = (words.first(), words.last()) else {
            continue;
        };
        let Ok(calls) = first.parse::<u64>() else {
            continue; // the header and the dashed rules
        };
        let errors = if words.len() == 3 { words[1].parse().unwrap_or(0) } else { 0 };
        if *name == "total" {
            total = Some(calls);
        } else {
            rows.push((name.to_string(), calls, errors));
        }
    }
    rows.sort_by_key(|row| std::cmp::Reverse(row.1)); // most calls first
    rows.truncate(6);
    Some(SyscallCount { requests: 0, total: total?, top: rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_summary_table() {
        let text = "    calls    errors syscall
--------- --------- ----------------
       17100           write
    51234     17000 read
--------- --------- ----------------
    68334     17000 total
";
        let count = parse_summary(text).expect("parses");
        assert_eq!(count.total, 68334);
        assert_eq!(count.top[0], ("read".to_string(), 51234, 17000));
        assert_eq!(count.top[1], ("write".to_string(), 17100, 0));
    }
}
