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

/// One thread of a process, and the CPU time it has used so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadTime {
    /// The thread's id (its directory under `/proc/PID/task/`).
    pub id: u32,
    /// Its name (`comm`): `loop-1`, `pool-worker-0`, or the program's name for the first.
    pub name: String,
    pub cpu: Duration,
}

/// CPU time each thread of the process has used so far: the first field of
/// `/proc/PID/task/TID/schedstat`, in nanoseconds. (The ticks of [`cpu_time`] are 10 ms
/// each: too coarse to see a hundred requests, which take a few milliseconds.) `None`
/// where the kernel keeps no schedstat.
pub fn thread_cpu_times(pid: u32) -> Option<Vec<ThreadTime>> {
    let mut threads = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let path = entry.ok()?.path();
        // A thread that ended since the directory was listed is simply left out.
        let Ok(schedstat) = fs::read_to_string(path.join("schedstat")) else { continue };
        let Some(Ok(nanoseconds)) = schedstat.split_whitespace().next().map(str::parse) else {
            continue;
        };
        let id = path.file_name()?.to_str()?.parse().ok()?;
        let name = fs::read_to_string(path.join("comm")).unwrap_or_default().trim().to_string();
        threads.push(ThreadTime { id, name, cpu: Duration::from_nanos(nanoseconds) });
    }
    // Every process has a thread; none listed means the files are not there.
    (!threads.is_empty()).then_some(threads)
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

/// "(20.4 MiB at rest; the growth bound is 64.0 MiB)", after how much a server's memory
/// grew: what the growth is measured from, and what it is held to. The bound is on the
/// growth, not on the memory: a reader who read "the bound is 24.0 MiB" beside 22.5 MiB at
/// rest would think 24.0 MiB the most the server may use.
pub fn growth_note(at_rest: u64, bound: u64) -> String {
    format!("({} at rest; the growth bound is {})", mebibytes(at_rest), mebibytes(bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growth_is_said_with_its_own_bound() {
        assert_eq!(
            growth_note(22 << 20, 24 << 20),
            "(22.0 MiB at rest; the growth bound is 24.0 MiB)"
        );
    }

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

    /// The threads probe (`spread_over_loops`) tells a thread that served from one that
    /// slept by the CPU time each used: a thread that burns CPU must show it, by name.
    #[test]
    fn sees_each_thread_by_name() {
        let pid = std::process::id();
        if thread_cpu_times(pid).is_none() {
            crate::harness::print_uncaptured(
                "SKIPPED: resources::sees_each_thread_by_name: no /proc/PID/task/*/schedstat \
                 here, nothing to read",
            );
            return;
        }
        let burner = std::thread::Builder::new().name("suite-burner".into());
        let burner = burner.spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let threads = thread_cpu_times(pid).expect("schedstat");
                let mine = threads.iter().find(|thread| thread.name == "suite-burner");
                if mine.is_some_and(|thread| thread.cpu >= Duration::from_millis(5)) {
                    return true;
                }
                if std::time::Instant::now() >= deadline {
                    return false;
                }
                for n in 0..100_000u64 {
                    std::hint::black_box(n * n);
                }
            }
        });
        assert!(burner.expect("spawn").join().expect("join"), "the burner's CPU time never grew");
    }
}
