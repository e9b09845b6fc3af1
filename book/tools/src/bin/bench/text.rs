//! Numbers as a person reads them (`128,774`, `1.23 ms`, `2.0 MiB`), and the facts about
//! the machine and the moment that the report and the chart print beside them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cpu::CpuPerRequest;

/// The 1, 5 and 15 minute load averages, `0.12 0.30 0.25`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// `2 CPUs (AMD EPYC), Linux 6.1.0, 23.5 GiB RAM`, from `/proc`.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|text| text.trim().to_string())
        .unwrap_or_default();
    let memory_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    format!(
        "{cpus} CPU{} ({model}), Linux {kernel}, {} RAM",
        if cpus == 1 { "" } else { "s" },
        memory_text(memory_kib)
    )
}

/// The current time in UTC, `2026-11-21 16:40 UTC`, without a date library: days since
/// 1970 to a civil date is Howard Hinnant's well-known algorithm.
pub fn now_utc() -> String {
    let seconds =
        SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0);
    utc_text(seconds)
}

fn utc_text(seconds: u64) -> String {
    let (year, month, day) = shared::http::date::civil_from_days((seconds / 86_400) as i64);
    let minutes = (seconds % 86_400) / 60;
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", minutes / 60, minutes % 60)
}

/// `128774.2` -> `128,774`; small numbers keep a decimal.
pub fn rate_text(value: f64) -> String {
    if value < 100.0 && value.fract() != 0.0 {
        return format!("{value:.1}");
    }
    let digits = format!("{:.0}", value.max(0.0));
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// Microseconds, shown in the unit a person would pick.
pub fn latency_text(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 10_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else if us < 1_000_000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// A latency of exactly zero means the generator timed nothing (wrk, for a pipelined
/// batch that a closing server never finished): a dash, not a fake "0 µs".
pub fn latency_or_dash(us: f64) -> String {
    if us > 0.0 {
        latency_text(us)
    } else {
        "–".to_string()
    }
}

pub fn memory_text(kib: u64) -> String {
    if kib < 1024 {
        format!("{kib} KiB")
    } else if kib < 1024 * 1024 {
        format!("{:.1} MiB", kib as f64 / 1024.0)
    } else {
        format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0))
    }
}

pub fn ratio_text(ratio: f64) -> String {
    if ratio < 0.1 {
        format!("{ratio:.3}x")
    } else {
        format!("{ratio:.2}x")
    }
}

/// CPU time per request as the tables show it: `2.1 + 4.3 = 6.4` (user + system =
/// total, µs), or a dash when it could not be read.
pub fn cpu_text(cpu: Option<CpuPerRequest>) -> String {
    match cpu {
        Some(cpu) => format!(
            "{} + {} = {}",
            microseconds(cpu.user_us),
            microseconds(cpu.system_us),
            microseconds(cpu.total_us())
        ),
        None => "–".to_string(),
    }
}

/// `0.83`, `6.4`, `112`: two significant figures or so, the precision a clock tick allows.
pub fn microseconds(us: f64) -> String {
    if us < 1.0 {
        format!("{us:.2}")
    } else if us < 100.0 {
        format!("{us:.1}")
    } else {
        rate_text(us.round())
    }
}

/// A difference of two counts per request, with `decimals` decimals. Two runs can differ by
/// a block or two of start-up work, so a figure that rounds to zero is shown as 0, not as
/// a puzzling `-0.00`.
pub fn per_request_text(value: f64, decimals: usize) -> String {
    let smallest = 0.5 / 10f64.powi(decimals as i32);
    let value = if value.abs() < smallest { 0.0 } else { value };
    format!("{value:.decimals$}")
}

pub fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 60 {
        format!("{seconds} s")
    } else {
        format!("{} min {} s", seconds / 60, seconds % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(rate_text(128_774.4), "128,774");
        assert_eq!(rate_text(999.0), "999");
        assert_eq!(rate_text(1000.0), "1,000");
        assert_eq!(rate_text(12.25), "12.2");
        assert_eq!(latency_text(58.0), "58 µs");
        assert_eq!(latency_text(1_234.0), "1.23 ms");
        assert_eq!(latency_text(56_700.0), "56.7 ms");
        assert_eq!(memory_text(2048), "2.0 MiB");
        let cpu = CpuPerRequest { user_us: 2.14, system_us: 4.3 };
        assert_eq!(cpu_text(Some(cpu)), "2.1 + 4.3 = 6.4");
        assert_eq!(microseconds(0.834), "0.83");
        assert_eq!(microseconds(1234.4), "1,234");
        assert_eq!(per_request_text(-0.0004, 2), "0.00");
        assert_eq!(per_request_text(-0.4, 0), "0");
        assert_eq!(per_request_text(2.999, 2), "3.00");
        assert_eq!(per_request_text(-1.0, 2), "-1.00");
    }

    #[test]
    fn civil_dates() {
        assert_eq!(utc_text(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_text(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_text(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
