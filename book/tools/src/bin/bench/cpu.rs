//! How much CPU a server spends per request, as the kernel counts it.
//!
//! Requests per second say how fast; they do not say at what cost. A server that answers
//! as fast as nginx while burning twice its CPU would lose on a busy machine, and a
//! multi-loop server can look fast only because it took the generator's core. So around
//! every measured run we read the server's CPU time from `/proc/PID/stat` (fields 14 and
//! 15, `utime` and `stime`, in clock ticks), just before the load starts and just after it
//! ends, and divide the difference by the requests the generator saw answered.
//!
//! A process's line already includes all of its threads (chapter 6's pool, chapter 9's
//! loops). nginx with workers is several processes, so a server is a list of PIDs, and
//! their times are added up. One tick is 10 ms on almost every Linux, so a run should be
//! long enough to use a few hundred of them: at 1 s and 10,000 requests/s the figure is
//! good to about 1 µs per request.

use std::fs;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::process::run_bounded;

/// CPU time used so far by a set of processes, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub user: u64,
    pub system: u64,
}

/// CPU time per request, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuPerRequest {
    pub user_us: f64,
    pub system_us: f64,
}

impl CpuPerRequest {
    pub fn total_us(&self) -> f64 {
        self.user_us + self.system_us
    }
}

/// Adds up the CPU time of `pids` so far. An error if any of them is gone: a sum that
/// silently lost a worker would look like a cheaper server.
pub fn sample(pids: &[u32]) -> Result<CpuTime, String> {
    let mut total = CpuTime::default();
    for pid in pids {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_err(|error| format!("cannot read /proc/{pid}/stat: {error}"))?;
        let time = parse_stat(&stat).ok_or_else(|| format!("cannot read /proc/{pid}/stat"))?;
        total.user += time.user;
        total.system += time.system;
    }
    Ok(total)
}

/// What was spent between two samples, per request answered in between.
pub fn per_request(before: CpuTime, after: CpuTime, requests: u64) -> Option<CpuPerRequest> {
    if requests == 0 {
        return None;
    }
    let us_per_tick = 1e6 / clock_ticks_per_second() as f64;
    let per = |ticks: u64| ticks as f64 * us_per_tick / requests as f64;
    Some(CpuPerRequest {
        user_us: per(after.user.checked_sub(before.user)?),
        system_us: per(after.system.checked_sub(before.system)?),
    })
}

/// `utime` and `stime` from one `/proc/PID/stat` line.
fn parse_stat(stat: &str) -> Option<CpuTime> {
    // "1234 (nginx: worker) S 1 ...": the name in parentheses may hold spaces and
    // parentheses itself, so the fields are counted from the *last* ')'. What follows
    // starts at field 3 (the state): field 14 is at index 11.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    Some(CpuTime { user: fields.get(11)?.parse().ok()?, system: fields.get(12)?.parse().ok()? })
}

/// `sysconf(_SC_CLK_TCK)`, asked of `getconf` because the standard library cannot call
/// `sysconf`. Almost always 100; 100 is also the answer when `getconf` is missing.
pub fn clock_ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        run_bounded(Command::new("getconf").arg("CLK_TCK"), Duration::from_secs(5))
            .ok()
            .and_then(|output| output.stdout.trim().parse().ok())
            .filter(|&ticks| ticks > 0)
            .unwrap_or(100)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_user_and_system_time_after_an_awkward_name() {
        let stat = "4242 (nginx: a (b) c) S 1 4242 4242 0 -1 4194560 1 0 0 0 \
                    731 269 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat(stat), Some(CpuTime { user: 731, system: 269 }));
        assert_eq!(parse_stat("4242 (short) S 1"), None);
    }

    #[test]
    fn divides_ticks_by_requests() {
        let before = CpuTime { user: 100, system: 50 };
        let after = CpuTime { user: 200, system: 350 };
        let tick_us = 1e6 / clock_ticks_per_second() as f64;
        let cpu = per_request(before, after, 1_000).expect("requests were answered");
        assert!((cpu.user_us - 100.0 * tick_us / 1_000.0).abs() < 1e-9);
        assert!((cpu.system_us - 300.0 * tick_us / 1_000.0).abs() < 1e-9);
        assert_eq!(per_request(before, after, 0), None);
        // A process that went back in time is a different process: no figure.
        assert_eq!(per_request(after, before, 10), None);
    }
}
