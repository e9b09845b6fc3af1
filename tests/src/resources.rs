//! What a server process uses, as the kernel counts it: CPU time, memory, descriptors.
//!
//! The hostile-client probes (`probes/basics/exhaustion.rs`, `probes/basics/memory.rs`,
//! and more) need more than "was the answer right?". A server flooded with connections
//! must not *spin* (burn CPU in a loop that achieves nothing), a client that pipelines
//! without reading must not make it *bloat*, and clients that come and go must not make
//! it *leak* descriptors. None of that shows in a response; all of it shows in
//! `/proc/PID/`, which Linux keeps for every process. macOS and the BSDs have no `/proc`:
//! there we ask the tools they come with (`ps`, `lsof`, FreeBSD's `procstat`, the shell's
//! `ulimit`). What a system cannot show comes back `None`, and a probe that needs it
//! skips, naming it in one line (the `NO_*` sentences below): a measurement that returns
//! nothing is never a pass.

use std::fs;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

// The measurements a system may lack, each as the one line a probe that needs it skips with.
pub const NO_CPU_TIME: &str = "missing measurement on this system: the server's CPU time \
    (Linux's /proc/PID/stat, or `ps -o time=`)";
pub const NO_THREAD_TIMES: &str = "missing measurement on this system: each thread's CPU \
    time, by name (Linux's /proc/PID/task/*/schedstat)";
pub const NO_MEMORY: &str = "missing measurement on this system: the server's resident \
    memory (Linux's /proc/PID/status, or `ps -o rss=`)";
pub const NO_PEAK_MEMORY: &str = "missing measurement on this system: the most memory the \
    server has had (Linux's VmHWM in /proc/PID/status, or FreeBSD's `procstat -r`)";
pub const NO_DESCRIPTORS: &str = "missing measurement on this system: the server's open \
    descriptors (Linux's /proc/PID/fd, `lsof`, or FreeBSD's `procstat -f`)";

/// Is this Linux, with its `/proc`? Elsewhere the tools below stand in.
fn has_proc() -> bool {
    cfg!(target_os = "linux")
}

/// What `program args` printed on stdout, if it ran and succeeded.
fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// CPU time the process has used so far, user and system together: fields 14 and 15 of
/// `/proc/PID/stat`, counted in clock ticks; elsewhere `ps -o time=` (in hundredths).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    if !has_proc() {
        return ps_time(&output_of("ps", &["-o", "time=", "-p", &pid.to_string()])?);
    }
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

/// `ps -o time=`: `0:01.25` on macOS and FreeBSD, `00:00:01` on Linux, `1-02:03:04` after a
/// day: `[[D-]H:]M:S[.fraction]`.
fn ps_time(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (days, clock) = match text.split_once('-') {
        Some((days, clock)) => (days.parse::<u64>().ok()?, clock),
        None => (0, text),
    };
    let mut seconds = 0.0;
    for part in clock.split(':') {
        seconds = seconds * 60.0 + part.parse::<f64>().ok().filter(|part| *part >= 0.0)?;
    }
    Some(Duration::from_secs_f64(days as f64 * 86_400.0 + seconds))
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
/// where the kernel keeps no schedstat: every system but Linux ([`NO_THREAD_TIMES`]).
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
    /// sees a burst even if the memory was given back before it looked. `None` where the
    /// system keeps no such count for another process (macOS: [`NO_PEAK_MEMORY`]).
    pub peak: Option<u64>,
}

/// The process's resident memory, from `/proc/PID/status`; elsewhere `ps -o rss=` (KiB), and
/// the peak from FreeBSD's `procstat -r` ("maximum RSS ... KB").
pub fn memory(pid: u32) -> Option<Memory> {
    if !has_proc() {
        let pid = pid.to_string();
        let resident = kib_number(&output_of("ps", &["-o", "rss=", "-p", &pid])?)?;
        let peak = output_of("procstat", &["-r", &pid]).and_then(|rusage| procstat_peak(&rusage));
        return Some(Memory { resident, peak });
    }
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    // Lines like "VmRSS:\t    2048 kB".
    let kibibytes = |name: &str| -> Option<u64> {
        let line = status.lines().find(|line| line.starts_with(name))?;
        let number = line[name.len()..].trim().strip_suffix("kB")?.trim();
        number.parse::<u64>().ok().map(|kib| kib * 1024)
    };
    Some(Memory { resident: kibibytes("VmRSS:")?, peak: Some(kibibytes("VmHWM:")?) })
}

/// `procstat -r PID`: `  1234 ch02-poll  maximum RSS  2652 KB`, among other lines.
fn procstat_peak(rusage: &str) -> Option<u64> {
    rusage.lines().find_map(|line| kib_number(line.split("maximum RSS").nth(1)?))
}

/// `  2652` or ` 2652 KB`: a number of KiB, in bytes.
fn kib_number(text: &str) -> Option<u64> {
    let number = text.trim();
    let number = number.strip_suffix("KB").unwrap_or(number).trim();
    number.parse::<u64>().ok().map(|kib| kib * 1024)
}

/// How many file descriptors the process has open: the entries of `/proc/PID/fd`;
/// elsewhere what `lsof` lists (one `fN` line each), or FreeBSD's `procstat -f`.
pub fn open_descriptors(pid: u32) -> Option<usize> {
    if !has_proc() {
        return lsof_descriptors(pid).or_else(|| procstat_descriptors(pid));
    }
    Some(fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// `lsof -F f` prints `p1234`, then `f0`, `f1`, ... for the numbered descriptors (`-d`
/// leaves out `cwd`, `txt` and the like). None listed means lsof saw no such process.
fn lsof_descriptors(pid: u32) -> Option<usize> {
    let pid = pid.to_string();
    let listed =
        output_of("lsof", &["-n", "-P", "-a", "-p", &pid, "-d", "0-2147483647", "-F", "f"])?;
    lsof_count(&listed)
}

fn lsof_count(listed: &str) -> Option<usize> {
    count_nonzero(listed.lines().filter(|line| numbered(line.strip_prefix('f'))).count())
}

/// `procstat -f PID`: a heading, then one line per file, `PID COMM FD ...`; the numbered
/// ones are the descriptors (the others: `text`, `cwd`, `root`, `jail`).
fn procstat_descriptors(pid: u32) -> Option<usize> {
    procstat_count(&output_of("procstat", &["-f", &pid.to_string()])?)
}

fn procstat_count(listed: &str) -> Option<usize> {
    let descriptors = listed.lines().filter(|line| numbered(line.split_whitespace().nth(2)));
    count_nonzero(descriptors.count())
}

fn numbered(text: Option<&str>) -> bool {
    text.is_some_and(|text| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
}

/// Every process has stdin at least: a count of none is a count that did not work.
fn count_nonzero(count: usize) -> Option<usize> {
    (count > 0).then_some(count)
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

/// This process's own limits on open descriptors, from `/proc/self/limits`; elsewhere
/// from the shell's `ulimit -n` and `ulimit -Hn`. A server we start inherits them.
pub fn own_descriptor_limits() -> Option<DescriptorLimits> {
    if !has_proc() {
        let limits = output_of("sh", &["-c", "ulimit -n; ulimit -Hn"])?;
        let mut limits = limits.lines().map(|limit| limit.parse().unwrap_or(u64::MAX));
        return Some(DescriptorLimits { soft: limits.next()?, hard: limits.next()? });
    }
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

    /// On Linux from /proc; elsewhere from the tools that stand in (macOS and FreeBSD come
    /// with `ps`, `sh`, and `lsof` or `procstat`), which must measure it too.
    #[test]
    fn reads_our_own_process() {
        let pid = std::process::id();
        // Burn CPU until the clock shows it: the flood probes rely on seeing a busy loop.
        let before = cpu_time(pid).expect(NO_CPU_TIME);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while cpu_time(pid).expect(NO_CPU_TIME) < before + Duration::from_millis(50) {
            assert!(std::time::Instant::now() < deadline, "CPU time never grew");
            // `black_box` keeps the compiler from proving the loop useless and dropping it.
            for n in 0..100_000u64 {
                std::hint::black_box(n * n);
            }
        }
        let memory = memory(pid).expect(NO_MEMORY);
        assert!(memory.resident > 0 && memory.peak.is_none_or(|peak| peak >= memory.resident));
        assert_eq!(memory.peak.is_some(), !cfg!(target_os = "macos"), "{NO_PEAK_MEMORY}");
        // At least stdin, stdout and stderr.
        assert!(open_descriptors(pid).expect(NO_DESCRIPTORS) >= 3);
        let limits = own_descriptor_limits().expect("ulimit -n");
        assert!(limits.soft >= 3 && limits.hard >= limits.soft);
    }

    #[test]
    fn reads_what_the_tools_of_macos_and_freebsd_print() {
        assert_eq!(ps_time("0:01.25"), Some(Duration::from_millis(1250)));
        assert_eq!(ps_time(" 00:00:01\n"), Some(Duration::from_secs(1)));
        assert_eq!(ps_time("1-02:03:04"), Some(Duration::from_secs(86_400 + 7_384)));
        assert_eq!(ps_time(""), None, "nothing printed is no time at all");
        assert_eq!(kib_number("  2652\n"), Some(2652 * 1024));
        let rusage = "  PID COMM             RESOURCE                          VALUE
 1234 ch02-poll        user time                    00:00:00.000000
 1234 ch02-poll        maximum RSS                             2652 KB
";
        assert_eq!(procstat_peak(rusage), Some(2652 * 1024));
        let files = "  PID COMM                FD T V FLAGS    REF  OFFSET PRO NAME
 1234 ch02-poll         text v r r-------   -       - -   /work/ch02-poll
 1234 ch02-poll          cwd v d r-------   -       - -   /work
 1234 ch02-poll            0 v c rw------   3       0 -   /dev/null
 1234 ch02-poll            1 p - rw------   1       0 -   -
 1234 ch02-poll            3 s - rw------   1       0 TCP 127.0.0.1:8080 127.0.0.1:0
";
        assert_eq!(procstat_count(files), Some(3));
        assert_eq!(lsof_count("p1234\nf0\nf1\nf2\nf7\n"), Some(4));
        assert_eq!(lsof_count(""), None, "none listed: lsof did not see the process");
    }

    /// Where `ps` and `lsof` are installed beside `/proc` (on Linux), they must agree with
    /// it on a child that holds its three standard descriptors and sleeps.
    #[test]
    fn the_tools_agree_with_proc_where_both_are_here() {
        let tools = output_of("ps", &["-p", "1"]).is_some() && output_of("lsof", &["-v"]).is_some();
        if !has_proc() || !tools {
            crate::harness::print_uncaptured(
                "SKIPPED: resources::the_tools_agree_with_proc_where_both_are_here: no /proc, \
                 ps or lsof here to compare",
            );
            return;
        }
        let mut sleeper = Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = sleeper.id().to_string();
        let resident =
            output_of("ps", &["-o", "rss=", "-p", &pid]).and_then(|rss| kib_number(&rss));
        let time = output_of("ps", &["-o", "time=", "-p", &pid]).and_then(|time| ps_time(&time));
        let (memory, descriptors) = (memory(sleeper.id()), open_descriptors(sleeper.id()));
        let listed = lsof_descriptors(sleeper.id());
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        let (resident, memory) = (resident.expect("ps -o rss="), memory.expect("VmRSS").resident);
        assert!(resident.abs_diff(memory) <= 256 << 10, "ps {resident}, /proc {memory}");
        assert!(time.expect("ps -o time=") < Duration::from_secs(1), "a sleeper's CPU time");
        assert_eq!(listed, descriptors, "lsof and /proc/PID/fd");
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
