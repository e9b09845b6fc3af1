//! The results, as the book's benchmark appendix shows them: a Markdown page
//! (`bench.md`, also printed in the terminal) with the tables, and the facts a reader needs
//! to trust or to reproduce them: when, on what machine, with which command.

use std::fmt::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::allocations::AllocationCount;
use crate::generator::LoadResult;
use crate::scenarios::{Outcome, Scenario};
use crate::syscalls::SyscallCount;

/// Everything one run of the harness found out.
pub struct Run {
    pub command: String,
    pub generator: String,
    /// How nginx was run, when it was.
    pub peer: Option<String>,
    pub rounds: usize,
    pub seconds: u64,
    pub runtime: Duration,
    /// `/proc/loadavg` when the run began: other work on the machine skews every number.
    pub load_before: String,
    /// The servers, in the order of the tables: the chapters, then nginx.
    pub servers: Vec<String>,
    pub scenarios: Vec<ScenarioResult>,
    pub syscall_window: Option<(String, u64)>,
    pub syscalls: Vec<(String, Result<SyscallCount, String>)>,
    pub allocation_requests: (u64, u64),
    pub allocations: Vec<(String, Result<AllocationCount, String>)>,
    /// Chapters that could not be measured, and why.
    pub skipped: Vec<(String, String)>,
}

pub struct ScenarioResult {
    pub scenario: &'static Scenario,
    /// One per server, in the order of `Run::servers`.
    pub cells: Vec<Summary>,
}

/// One server's result for one scenario, over all rounds.
#[derive(Clone, Debug)]
pub enum Summary {
    Measured {
        /// Each number's median over the rounds (errors: their sum).
        median: LoadResult,
        /// The highest peak memory of any round.
        peak_rss_kib: Option<u64>,
        /// The median, over rounds, of this server's requests/s over nginx's in that round.
        vs_nginx: Option<f64>,
        /// Rounds that did not measure (blocked or failed), if any.
        missed: Option<String>,
    },
    Blocked(String),
    Failed(String),
}

impl Summary {
    pub fn measured(&self) -> Option<&LoadResult> {
        match self {
            Summary::Measured { median, .. } => Some(median),
            _ => None,
        }
    }
}

// ANCHOR: summarize
/// Reduces the rounds of one scenario to one cell per server. `rounds[server][round]`;
/// `nginx` is nginx's index in `rounds`, if it ran.
pub fn summarize(rounds: &[Vec<Outcome>], nginx: Option<usize>) -> Vec<Summary> {
    let rate = |outcome: &Outcome| match outcome {
        Outcome::Measured { load, .. } => Some(load.requests_per_s),
        _ => None,
    };
    rounds
        .iter()
        .map(|outcomes| {
            let measured: Vec<(&LoadResult, Option<u64>)> = outcomes
                .iter()
                .filter_map(|outcome| match outcome {
                    Outcome::Measured { load, peak_rss_kib } => Some((load, *peak_rss_kib)),
                    _ => None,
                })
                .collect();
            if measured.is_empty() {
                // Every round blocked or failed: say the first reason (they are alike).
                return match outcomes.first() {
                    Some(Outcome::Blocked(why)) => Summary::Blocked(why.clone()),
                    Some(Outcome::Failed(why)) => Summary::Failed(why.clone()),
                    _ => Summary::Failed("not run".into()),
                };
            }
            let peak_rss_kib = measured.iter().filter_map(|(_, rss)| *rss).max();
            // Each number is its own median over the rounds; errors are added up, so that
            // an error in any round shows.
            let loads: Vec<&LoadResult> = measured.iter().map(|(load, _)| *load).collect();
            // The same remark from several rounds is said once.
            let mut details: Vec<&str> = Vec::new();
            for load in &loads {
                if !load.detail.is_empty() && !details.contains(&load.detail.as_str()) {
                    details.push(&load.detail);
                }
            }
            let median = LoadResult {
                requests: median_of(loads.iter().map(|load| load.requests as f64)) as u64,
                requests_per_s: median_of(loads.iter().map(|load| load.requests_per_s)),
                // A latency of zero means "not measured" (see `latency_or_dash`).
                p50_us: median_of(loads.iter().map(|load| load.p50_us).filter(|us| *us > 0.0)),
                p99_us: median_of(loads.iter().map(|load| load.p99_us).filter(|us| *us > 0.0)),
                errors: loads.iter().map(|load| load.errors).sum(),
                detail: details.join("; "),
            };
            // Ratios per round, against nginx in the same round: the machine's speed
            // drifts, but within a round both ran on the same machine, one after the other.
            let ratios: Vec<f64> = nginx
                .map(|nginx| {
                    outcomes
                        .iter()
                        .zip(&rounds[nginx])
                        .filter_map(|(ours, theirs)| Some(rate(ours)? / rate(theirs)?))
                        .filter(|ratio| ratio.is_finite())
                        .collect()
                })
                .unwrap_or_default();
            let vs_nginx = (!ratios.is_empty()).then(|| median_of(ratios.into_iter()));
            let misses = outcomes.len() - measured.len();
            let missed = (misses > 0).then(|| {
                let why = outcomes.iter().find_map(|outcome| match outcome {
                    Outcome::Blocked(why) | Outcome::Failed(why) => Some(why.as_str()),
                    Outcome::Measured { .. } => None,
                });
                format!(
                    "{misses} of {} rounds did not measure: {}",
                    outcomes.len(),
                    why.unwrap_or("?")
                )
            });
            Summary::Measured {
                median,
                peak_rss_kib,
                vs_nginx,
                missed,
            }
        })
        .collect()
}
// ANCHOR_END: summarize

/// The middle value; with an even count, the mean of the two middle ones.
fn median_of(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The Markdown page. It has no top-level title: the book's appendix page provides one and
/// includes this file below it.
pub fn markdown(run: &Run) -> String {
    let mut page = String::new();
    let out = &mut page;
    let _ = writeln!(
        out,
        "_Measured by the workbook's benchmark harness on {} (the run took {})._\n",
        now_utc(),
        human_duration(run.runtime)
    );
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| command | `{}` |", run.command);
    let _ = writeln!(
        out,
        "| machine | {}; load average {} when the run began |",
        machine(),
        run.load_before
    );
    let _ = writeln!(out, "| load generator | {} |", run.generator);
    let _ = writeln!(
        out,
        "| peer | {} |",
        run.peer
            .as_deref()
            .unwrap_or("none (nginx is not installed)")
    );
    let _ = writeln!(
        out,
        "| method | every scenario: {} round{} of {} s per server, a fresh server each \
         time, servers taking turns within a round, so a drift in the machine's speed \
         touches all alike. Each number is the median over the rounds (errors: the sum); \
         *vs nginx* is the median of the per-round ratios; peak RSS is the server's \
         `VmHWM`, the highest of the rounds. Loopback only. |",
        run.rounds,
        if run.rounds == 1 { "" } else { "s" },
        run.seconds,
    );

    let _ = writeln!(
        out,
        "\nThe chart `bench.svg` next to this file is drawn from the same run."
    );
    let _ = writeln!(out, "\n### Throughput and latency\n");
    let _ = writeln!(
        out,
        "| scenario | server | requests/s | vs nginx | p50 | p99 | errors | peak RSS |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
    let mut footnotes = Vec::new();
    for result in run.scenarios.iter().filter(|r| r.scenario.idle == 0) {
        for (index, (server, cell)) in run.servers.iter().zip(&result.cells).enumerate() {
            let scenario = if index == 0 {
                format!("{} `{}`", result.scenario.title, result.scenario.id)
            } else {
                String::new()
            };
            let row = match cell {
                Summary::Measured {
                    median,
                    peak_rss_kib,
                    vs_nginx,
                    missed,
                } => {
                    let mut errors = rate_text(median.errors as f64);
                    if !median.detail.is_empty() {
                        footnotes.push(format!(
                            "{} on `{}`: {}",
                            server, result.scenario.id, median.detail
                        ));
                        errors.push_str(&format!(" [{}]", footnotes.len()));
                    }
                    if let Some(missed) = missed {
                        footnotes.push(format!("{} on `{}`: {missed}", server, result.scenario.id));
                        errors.push_str(&format!(" [{}]", footnotes.len()));
                    }
                    format!(
                        "{} | {} | {} | {} | {} | {} |",
                        rate_text(median.requests_per_s),
                        vs_nginx.map(ratio_text).unwrap_or_else(|| "–".into()),
                        latency_or_dash(median.p50_us),
                        latency_or_dash(median.p99_us),
                        errors,
                        peak_rss_kib.map(memory_text).unwrap_or_else(|| "–".into()),
                    )
                }
                Summary::Blocked(why) => {
                    footnotes.push(format!("{} on `{}`: {why}", server, result.scenario.id));
                    format!("blocked [{}] | | | | | |", footnotes.len())
                }
                Summary::Failed(why) => {
                    footnotes.push(format!("{} on `{}`: {why}", server, result.scenario.id));
                    format!("failed [{}] | | | | | |", footnotes.len())
                }
            };
            let _ = writeln!(out, "| {scenario} | {server} | {row}");
        }
    }

    let idle: Vec<&ScenarioResult> = run
        .scenarios
        .iter()
        .filter(|r| r.scenario.id.starts_with("idle-"))
        .collect();
    if !idle.is_empty() {
        let _ = writeln!(
            out,
            "\n### Idle connections: `/hello` latency for one client, p50 / p99 (requests/s)\n"
        );
        let mut header = "| server |".to_string();
        let mut rule = "|---|".to_string();
        for result in &idle {
            header.push_str(&format!(
                " {} idle |",
                rate_text(result.scenario.idle as f64)
            ));
            rule.push_str("---:|");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        for (index, server) in run.servers.iter().enumerate() {
            let mut row = format!("| {server} |");
            for result in &idle {
                let cell = match &result.cells[index] {
                    Summary::Measured { median, .. } => format!(
                        " {} / {} ({}/s) |",
                        latency_or_dash(median.p50_us),
                        latency_or_dash(median.p99_us),
                        rate_text(median.requests_per_s)
                    ),
                    Summary::Blocked(_) => " blocked |".to_string(),
                    Summary::Failed(_) => " failed |".to_string(),
                };
                row.push_str(&cell);
            }
            let _ = writeln!(out, "{row}");
        }
        let _ = writeln!(
            out,
            "\n*Blocked*: the server did not answer a single `/hello` within 2 s with the idle \
             connections open (chapter 1 is still waiting for the first idle client to speak)."
        );
    }

    if let Some((scenario, seconds)) = &run.syscall_window {
        let _ = writeln!(out, "\n### System calls per request\n");
        let _ = writeln!(
            out,
            "`strace -c -f` attached to a fresh server before a {seconds} s run of `{scenario}` \
             and detached after it: all the server's system calls in that window, divided by \
             the requests answered in it. strace slows every call, so a traced server finds \
             more work per `poll` turn than an untraced one; read these as the shape of the \
             work, not to the decimal.\n"
        );
        let _ = writeln!(
            out,
            "| server | syscalls/request | requests traced | most frequent, per request (of which failed) |"
        );
        let _ = writeln!(out, "|---|---:|---:|---|");
        for (server, count) in &run.syscalls {
            match count {
                Ok(count) => {
                    let requests = count.requests.max(1) as f64;
                    let top: Vec<String> = count
                        .top
                        .iter()
                        .map(|(name, calls, errors)| {
                            let mut text = format!("{name} {:.2}", *calls as f64 / requests);
                            let failed = *errors as f64 / requests;
                            if failed >= 0.005 {
                                text.push_str(&format!(" ({failed:.2})"));
                            }
                            text
                        })
                        .collect();
                    let _ = writeln!(
                        out,
                        "| {server} | {:.2} | {} | {} |",
                        count.per_request(),
                        rate_text(count.requests as f64),
                        top.join(", ")
                    );
                }
                Err(why) => {
                    let _ = writeln!(out, "| {server} | – | – | not measured: {why} |");
                }
            }
        }
    }

    if !run.allocations.is_empty() {
        let (few, many) = run.allocation_requests;
        let _ = writeln!(out, "\n### Heap allocations per `/hello` request\n");
        let _ = writeln!(
            out,
            "`valgrind --tool=dhat` counts every allocation from start to exit. Each chapter ran \
             under it twice, answering exactly {few} and then {many} `/hello` requests over one \
             connection; the difference divided by {} is what one request costs, start-up and \
             shutdown cancelled out. For chapters 1 and 2 a request includes its connection.\n",
            many - few
        );
        let _ = writeln!(out, "| server | allocations/request | bytes/request |");
        let _ = writeln!(out, "|---|---:|---:|");
        for (server, count) in &run.allocations {
            match count {
                Ok(count) => {
                    let _ = writeln!(
                        out,
                        "| {server} | {:.2} | {:.0} |",
                        count.blocks_per_request, count.bytes_per_request
                    );
                }
                Err(why) => {
                    let _ = writeln!(out, "| {server} | – | not measured: {why} |");
                }
            }
        }
    }

    let _ = writeln!(out, "\n### What each scenario shows\n");
    for result in &run.scenarios {
        let _ = writeln!(
            out,
            "- `{}` ({}): {}",
            result.scenario.id, result.scenario.title, result.scenario.note
        );
    }
    if !footnotes.is_empty() {
        let _ = writeln!(out, "\n### Notes\n");
        for (index, note) in footnotes.iter().enumerate() {
            let _ = writeln!(out, "{}. {note}", index + 1);
        }
    }
    for (server, why) in &run.skipped {
        let _ = writeln!(out, "\n_{server} was not measured: {why}._");
    }
    page
}

/// The 1, 5 and 15 minute load averages, `0.12 0.30 0.25`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

/// `2 CPUs (AMD EPYC), Linux 6.1.0, 23.5 GiB RAM`, from `/proc`.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
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
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    utc_text(seconds)
}

fn utc_text(seconds: u64) -> String {
    let (year, month, day) = shared::http::date::civil_from_days((seconds / 86_400) as i64);
    let minutes = (seconds % 86_400) / 60;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
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
fn latency_or_dash(us: f64) -> String {
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

    fn measured(rate: f64) -> Outcome {
        Outcome::Measured {
            load: LoadResult {
                requests_per_s: rate,
                ..LoadResult::default()
            },
            peak_rss_kib: Some(rate as u64),
        }
    }

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
    }

    #[test]
    fn medians_and_ratios_per_round() {
        // Two servers, three rounds; the second is "nginx".
        let rounds = vec![
            vec![measured(10.0), measured(30.0), measured(20.0)],
            vec![measured(100.0), measured(100.0), measured(50.0)],
        ];
        let cells = summarize(&rounds, Some(1));
        let Summary::Measured {
            median,
            vs_nginx,
            peak_rss_kib,
            missed,
        } = &cells[0]
        else {
            panic!("measured");
        };
        assert_eq!(median.requests_per_s, 20.0);
        assert_eq!(*peak_rss_kib, Some(30));
        // Ratios 0.1, 0.3, 0.4: the median is 0.3.
        assert_eq!(*vs_nginx, Some(0.3));
        assert!(missed.is_none());
    }

    #[test]
    fn an_even_number_of_rounds_takes_the_middle_two() {
        assert_eq!(median_of([4.0, 1.0].into_iter()), 2.5);
        assert_eq!(median_of([3.0, 1.0, 2.0].into_iter()), 2.0);
        assert_eq!(median_of(std::iter::empty()), 0.0);
    }

    #[test]
    fn all_rounds_blocked_is_blocked() {
        let rounds = vec![vec![
            Outcome::Blocked("stuck".into()),
            Outcome::Blocked("stuck".into()),
        ]];
        assert!(matches!(&summarize(&rounds, None)[0], Summary::Blocked(why) if why == "stuck"));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(utc_text(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_text(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_text(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
