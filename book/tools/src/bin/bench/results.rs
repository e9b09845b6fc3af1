//! The raw results of a run, kept beside the report (`bench-results.txt`), so that the
//! report and the chart can be drawn again without running the benchmark again:
//! `cargo run --release -p book-tools --bin bench -- --redraw`. Ten minutes of load are not
//! needed to move a label.
//!
//! The format is plain text, one fact a line, its fields separated by tabs (two spaces
//! below; a tab, a newline or a backslash inside a field is written `\t`, `\n`, `\\`);
//! numbers are written in full, so that a redrawn report says exactly what the first one
//! said:
//!
//! ```text
//! measured_at  2026-11-24 17:39 UTC
//! server  ch01-blocking
//! measured  keep-alive-1  ch01-blocking  requests=9497  rate=9497.1  p50=40  p99=131
//!   errors=0  rss_kib=2252  user_us=5.5  system_us=38.6  vs_nginx=0.6   (one line)
//! blocked  idle-1k  ch01-blocking  could open only 128 of 1000 idle connections
//! ```
//!
//! Lines starting with `#` are comments. A line a reader does not know is an error: a
//! results file from a newer harness is not silently drawn half.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::allocations::AllocationCount;
use crate::chart;
use crate::cpu::CpuPerRequest;
use crate::generator::LoadResult;
use crate::report::{self, Run, ScenarioResult};
use crate::scenarios::SCENARIOS;
use crate::summary::Summary;
use crate::syscalls::SyscallCount;

/// The file's name, beside `bench.md`.
pub const FILE: &str = "bench-results.txt";

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n")
}

fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// One line: its fields, escaped and joined by tabs.
fn line(out: &mut String, fields: &[&str]) {
    let fields: Vec<String> = fields.iter().map(|field| escape(field)).collect();
    out.push_str(&fields.join("\t"));
    out.push('\n');
}

/// The whole run as text.
pub fn write(run: &Run) -> String {
    let mut out = String::from(
        "# Raw results of the workbook's benchmark harness (book/tools/src/bin/bench/results.rs).\n\
         # `cargo run --release -p book-tools --bin bench -- --redraw` draws bench.md and \
         bench.svg from them again.\n",
    );
    let out = &mut out;
    line(out, &["command", &run.command]);
    line(out, &["measured_at", &run.measured_at]);
    line(out, &["machine", &run.machine]);
    line(out, &["clock_ticks", &run.clock_ticks.to_string()]);
    line(out, &["generator", &run.generator]);
    if let Some(peer) = &run.peer {
        line(out, &["peer", peer]);
    }
    line(out, &["rounds", &run.rounds.to_string()]);
    line(out, &["seconds", &run.seconds.to_string()]);
    line(out, &["runtime_s", &run.runtime.as_secs().to_string()]);
    line(out, &["load_before", &run.load_before]);
    line(out, &["load_after", &run.load_after]);
    for server in &run.servers {
        line(out, &["server", server]);
    }
    for result in &run.scenarios {
        for (server, cell) in run.servers.iter().zip(&result.cells) {
            let id = result.scenario.id;
            match cell {
                Summary::Measured { median, peak_rss_kib, cpu, vs_nginx, missed } => {
                    let mut fields = vec![
                        format!("requests={}", median.requests),
                        format!("rate={}", median.requests_per_s),
                        format!("p50={}", median.p50_us),
                        format!("p99={}", median.p99_us),
                        format!("errors={}", median.errors),
                    ];
                    let mut optional = |key: &str, value: Option<String>| {
                        if let Some(value) = value {
                            fields.push(format!("{key}={value}"));
                        }
                    };
                    optional("detail", Some(median.detail.clone()).filter(|d| !d.is_empty()));
                    optional("rss_kib", peak_rss_kib.map(|kib| kib.to_string()));
                    optional("user_us", cpu.map(|cpu| cpu.user_us.to_string()));
                    optional("system_us", cpu.map(|cpu| cpu.system_us.to_string()));
                    optional("vs_nginx", vs_nginx.map(|ratio| ratio.to_string()));
                    optional("missed", missed.clone());
                    let mut all = vec!["measured", id, server.as_str()];
                    all.extend(fields.iter().map(String::as_str));
                    line(out, &all);
                }
                Summary::Blocked(why) => line(out, &["blocked", id, server, why]),
                Summary::Failed(why) => line(out, &["failed", id, server, why]),
            }
        }
    }
    if let Some((scenario, seconds)) = &run.syscall_window {
        line(out, &["syscall_window", scenario, &seconds.to_string()]);
    }
    for (server, count) in &run.syscalls {
        match count {
            Ok(count) => {
                let top: Vec<String> = count
                    .top
                    .iter()
                    .map(|(name, calls, errors)| format!("{name}:{calls}:{errors}"))
                    .collect();
                let (requests, total) = (count.requests.to_string(), count.total.to_string());
                line(out, &["syscalls", server, &requests, &total, &top.join(",")]);
            }
            Err(why) => line(out, &["syscalls_failed", server, why]),
        }
    }
    let (few, many) = run.allocation_requests;
    line(out, &["allocation_requests", &few.to_string(), &many.to_string()]);
    for (server, count) in &run.allocations {
        match count {
            Ok(count) => line(
                out,
                &[
                    "allocations",
                    server,
                    &count.allocations_per_request.to_string(),
                    &count.bytes_per_request.to_string(),
                ],
            ),
            Err(why) => line(out, &["allocations_failed", server, why]),
        }
    }
    for (server, why) in &run.skipped {
        line(out, &["skipped", server, why]);
    }
    out.clone()
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{what}: {text:?} is not a number"))
}

/// A run, from text [`write`] wrote.
pub fn read(text: &str) -> Result<Run, String> {
    let mut run = Run {
        command: String::new(),
        measured_at: String::new(),
        machine: String::new(),
        clock_ticks: 100,
        generator: String::new(),
        peer: None,
        rounds: 0,
        seconds: 0,
        runtime: Duration::ZERO,
        load_before: String::new(),
        load_after: String::new(),
        servers: Vec::new(),
        scenarios: Vec::new(),
        syscall_window: None,
        syscalls: Vec::new(),
        allocation_requests: (0, 0),
        allocations: Vec::new(),
        skipped: Vec::new(),
    };
    // (scenario, server, cell), in the order of the file.
    let mut cells: Vec<(String, String, Summary)> = Vec::new();
    for (index, text) in text.lines().enumerate() {
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let fields: Vec<String> = text.split('\t').map(unescape).collect();
        let field = |n: usize| {
            fields.get(n).cloned().ok_or_else(|| format!("line {}: too few fields", index + 1))
        };
        let value = || field(1);
        match fields[0].as_str() {
            "command" => run.command = value()?,
            "measured_at" => run.measured_at = value()?,
            "machine" => run.machine = value()?,
            "clock_ticks" => run.clock_ticks = number(&value()?, "clock_ticks")?,
            "generator" => run.generator = value()?,
            "peer" => run.peer = Some(value()?),
            "rounds" => run.rounds = number(&value()?, "rounds")?,
            "seconds" => run.seconds = number(&value()?, "seconds")?,
            "runtime_s" => run.runtime = Duration::from_secs(number(&value()?, "runtime_s")?),
            "load_before" => run.load_before = value()?,
            "load_after" => run.load_after = value()?,
            "server" => run.servers.push(value()?),
            "measured" => {
                let mut median = LoadResult::default();
                let (mut rss, mut user, mut system, mut vs_nginx, mut missed) =
                    (None, None, None, None, None);
                for pair in &fields[3..] {
                    let (key, value) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("line {}: {pair:?} is not key=value", index + 1))?;
                    match key {
                        "requests" => median.requests = number(value, key)?,
                        "rate" => median.requests_per_s = number(value, key)?,
                        "p50" => median.p50_us = number(value, key)?,
                        "p99" => median.p99_us = number(value, key)?,
                        "errors" => median.errors = number(value, key)?,
                        "detail" => median.detail = value.to_string(),
                        "rss_kib" => rss = Some(number(value, key)?),
                        "user_us" => user = Some(number(value, key)?),
                        "system_us" => system = Some(number(value, key)?),
                        "vs_nginx" => vs_nginx = Some(number(value, key)?),
                        "missed" => missed = Some(value.to_string()),
                        other => return Err(format!("line {}: unknown {other}", index + 1)),
                    }
                }
                let cpu = user
                    .zip(system)
                    .map(|(user_us, system_us)| CpuPerRequest { user_us, system_us });
                let cell = Summary::Measured { median, peak_rss_kib: rss, cpu, vs_nginx, missed };
                cells.push((field(1)?, field(2)?, cell));
            }
            "blocked" => cells.push((field(1)?, field(2)?, Summary::Blocked(field(3)?))),
            "failed" => cells.push((field(1)?, field(2)?, Summary::Failed(field(3)?))),
            "syscall_window" => {
                run.syscall_window = Some((field(1)?, number(&field(2)?, "syscall_window")?))
            }
            "syscalls" => {
                let top = field(4)?
                    .split(',')
                    .filter(|entry| !entry.is_empty())
                    .map(|entry| {
                        let parts: Vec<&str> = entry.split(':').collect();
                        match parts[..] {
                            [name, calls, errors] => Ok((
                                name.to_string(),
                                number(calls, "calls")?,
                                number(errors, "errors")?,
                            )),
                            _ => Err(format!(
                                "line {}: {entry:?} is not name:calls:errors",
                                index + 1
                            )),
                        }
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                let count = SyscallCount {
                    requests: number(&field(2)?, "requests")?,
                    total: number(&field(3)?, "total")?,
                    top,
                };
                run.syscalls.push((field(1)?, Ok(count)));
            }
            "syscalls_failed" => run.syscalls.push((field(1)?, Err(field(2)?))),
            "allocation_requests" => {
                run.allocation_requests =
                    (number(&field(1)?, "allocations")?, number(&field(2)?, "allocations")?)
            }
            "allocations" => {
                let count = AllocationCount {
                    allocations_per_request: number(&field(2)?, "allocations")?,
                    bytes_per_request: number(&field(3)?, "bytes")?,
                };
                run.allocations.push((field(1)?, Ok(count)));
            }
            "allocations_failed" => run.allocations.push((field(1)?, Err(field(2)?))),
            "skipped" => run.skipped.push((field(1)?, field(2)?)),
            other => return Err(format!("line {}: unknown record {other:?}", index + 1)),
        }
    }
    // The scenarios in the harness's order, each with a cell per server.
    for scenario in SCENARIOS.iter() {
        let of_scenario: Vec<&(String, String, Summary)> =
            cells.iter().filter(|(id, _, _)| id == scenario.id).collect();
        if of_scenario.is_empty() {
            continue;
        }
        let cells = run
            .servers
            .iter()
            .map(|server| {
                let cell = of_scenario.iter().find(|(_, name, _)| name == server);
                cell.map_or_else(|| Summary::Failed("not run".into()), |(_, _, cell)| cell.clone())
            })
            .collect();
        run.scenarios.push(ScenarioResult { scenario, cells });
    }
    if let Some((id, _, _)) = cells.iter().find(|(id, _, _)| !SCENARIOS.iter().any(|s| s.id == id))
    {
        return Err(format!("no scenario {id} in this harness"));
    }
    Ok(run)
}

/// Writes `bench.md` and `bench.svg` (and the raw results, when given) into `folder`.
pub fn write_files(folder: &Path, run: &Run, results: Option<String>) -> Result<(), String> {
    fs::create_dir_all(folder)
        .map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
    let mut files = vec![("bench.md", report::markdown(run)), ("bench.svg", chart::svg(run))];
    files.extend(results.map(|text| (FILE, text)));
    for (name, text) in files {
        let path = folder.join(name);
        fs::write(&path, text)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        eprintln!("bench: wrote {}", path.display());
    }
    Ok(())
}

/// `--redraw`: the report and the chart again, from the raw results of the last run in
/// `folder`; written there, or with `write` false only printed.
pub fn redraw(folder: &Path, write: bool) -> Result<(), String> {
    let path = folder.join(FILE);
    let text = fs::read_to_string(&path).map_err(|error| {
        format!("cannot read {}: {error} (a full run writes it)", path.display())
    })?;
    let run = read(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    if write {
        write_files(folder, &run, None)?;
    } else {
        println!("{}", report::markdown(&run));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_reads_back_as_it_was_written() {
        let run = crate::chart::tests::run();
        let text = write(&run);
        let again = read(&text).expect("reads");
        assert_eq!(write(&again), text);
        assert_eq!(again.servers, run.servers);
        assert_eq!(again.scenarios.len(), run.scenarios.len());
        // What the page says is the same, to the letter.
        assert_eq!(crate::report::markdown(&again), crate::report::markdown(&run));
        assert_eq!(crate::chart::svg(&again), crate::chart::svg(&run));
    }

    #[test]
    fn text_fields_keep_their_tabs_and_newlines() {
        for text in ["a\tb", "two\nlines", "back\\slash\\t", ""] {
            assert_eq!(unescape(&escape(text)), text);
        }
        let error = |text: &str| read(text).err().unwrap_or_default();
        assert!(error("no-such-record\t1\n").contains("unknown record"));
        assert!(error("measured\tno-such\tch01\trate=1\n").contains("no-such"));
        assert!(error("rounds\tmany\n").contains("not a number"));
    }
}
