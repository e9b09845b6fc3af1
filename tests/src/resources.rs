//! What a server process uses, as the kernel counts it: CPU time, memory, descriptors.
//!
//! The hostile-client probes (`probes/floods.rs`, `probes/faults.rs`) need more than "was
//! the answer right?". A server flooded with connections must not *spin* (burn CPU in a
//! loop that achieves nothing), a client that pipelines without reading must not make it
//! *bloat*, and clients that come and go must not make it *leak* descriptors. None of that
//! shows in a response; all of it shows in `/proc/PID/`, which Linux keeps for every
//! process. Elsewhere these functions answer `None`, and the probes that need them say so.

use std::fs;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// CPU time the process has used so far, user and system together: fields 14 and 15 of
/// `/proc/PID/stat`, counted in clock ticks.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "1234 (ch02-poll) S 1 ...": the name in parentheses may itself hold spaces or
    // parentheses, so the fields are counted from the *last* ')'.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // after_name starts at field 3 (the state), so field 14 is at index 11.
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    let ticks = clock_ticks_per_second();
    Some(Duration::from_secs_f64((user + system) as f64 / ticks as f64))
}

/// `sysconf(_SC_CLK_TCK)`, asked of `getconf` because std cannot call sysconf. Almost
/// always 100.
fn clock_ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .filter(|&ticks| ticks > 0)
            .unwrap_or(100)
    })
}

/// Resident memory, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// `VmRSS`: what the process has in RAM now.
    pub resident: u64,
    /// `VmHWM` ("high water mark"): the most it ever had. A probe that compares peaks
    /// sees a burst even if the memory was given back before it looked.
    pub peak: u64,
}

/// The process's resident memory, from `/proc/PID/status`.
pub fn memory(pid: u32) -> Option<Memory> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    // Lines like "VmRSS:\t    2048 kB".
    let kibibytes = |name: &str| -> Option<u64> {
        let line = status.lines().find(|line| line.starts_with(name))?;
        let number = line[name.len()..].trim().strip_suffix("kB")?.trim();
        number.parse::<u64>().ok().map(|kib| kib * 1024)
    };
    Some(Memory { resident: kibibytes("VmRSS:")?, peak: kibibytes("VmHWM:")? })
}

/// How many file descriptors the process has open: the entries of `/proc/PID/fd`.
pub fn open_descriptors(pid: u32) -> Option<usize> {
    Some(fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// How many files a process may have open. `u64::MAX` stands for "unlimited".
#[derive(Clone, Copy, Debug)]
pub struct DescriptorLimits {
    /// The limit that applies (`ulimit -n`).
    pub soft: u64,
    /// How far the process may raise `soft` itself (`ulimit -Hn`); nginx does, with
    /// `worker_rlimit_nofile`.
    pub hard: u64,
}

/// This process's own limits on open descriptors, from `/proc/self/limits`. A server we
/// start inherits them.
pub fn own_descriptor_limits() -> Option<DescriptorLimits> {
    let limits = fs::read_to_string("/proc/self/limits").ok()?;
    // "Max open files            20000                20000                files"
    let line = limits.lines().find(|line| line.starts_with("Max open files"))?;
    let mut words = line["Max open files".len()..].split_whitespace();
    // "unlimited" does not parse, and is plenty.
    let mut limit = || Some(words.next()?.parse().unwrap_or(u64::MAX));
    Some(DescriptorLimits { soft: limit()?, hard: limit()? })
}

/// "12.3 MiB", for messages.
pub fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_our_own_process() {
        let pid = std::process::id();
        if fs::metadata(format!("/proc/{pid}")).is_err() {
            crate::harness::print_uncaptured(
                "SKIPPED: resources::reads_our_own_process: no /proc here (not Linux), \
                 nothing to read",
            );
            return;
        }
        // Burn CPU until the clock shows it: the flood probes rely on seeing a busy loop.
        let before = cpu_time(pid).expect("/proc/PID/stat");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while cpu_time(pid).expect("/proc/PID/stat") < before + Duration::from_millis(50) {
            assert!(std::time::Instant::now() < deadline, "CPU time never grew");
            // `black_box` keeps the compiler from proving the loop useless and dropping it.
            for n in 0..100_000u64 {
                std::hint::black_box(n * n);
            }
        }
        let memory = memory(pid).expect("VmRSS and VmHWM");
        assert!(memory.resident > 0 && memory.peak >= memory.resident);
        // At least stdin, stdout and stderr.
        assert!(open_descriptors(pid).expect("/proc/PID/fd") >= 3);
        let limits = own_descriptor_limits().expect("/proc/self/limits");
        assert!(limits.soft >= 3 && limits.hard >= limits.soft);
    }
}
