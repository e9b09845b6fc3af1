//! The results, as the book's benchmark appendix shows them: a Markdown page
//! (`bench.md`, also printed in the terminal) with the tables, and the facts a reader needs
//! to trust or to reproduce them: when, on what machine, with which command.

use std::fmt::Write;
use std::time::Duration;

use crate::allocations::AllocationCount;
use crate::scenarios::Scenario;
use crate::summary::Summary;
use crate::syscalls::SyscallCount;
use crate::text::{
    human_duration, latency_or_dash, latency_text, memory_text, microseconds, per_request_text,
    rate_text, ratio_text,
};

/// Everything one run of the harness found out: what `results.rs` keeps, and what the
/// report and the chart are drawn from.
pub struct Run {
    pub command: String,
    /// When the run began, `2026-11-21 16:40 UTC`.
    pub measured_at: String,
    /// What it ran on: `2 CPUs (AMD EPYC), Linux 6.1.0, 23.5 GiB RAM`.
    pub machine: String,
    /// The kernel's clock ticks a second, which the CPU times are counted in.
    pub clock_ticks: u64,
    pub generator: String,
    /// How nginx was run, when it was.
    pub peer: Option<String>,
    pub rounds: usize,
    pub seconds: u64,
    pub runtime: Duration,
    /// `/proc/loadavg` when the run began: other work on the machine skews every number.
    pub load_before: String,
    /// And when it ended: a rise means something else ran meanwhile.
    pub load_after: String,
    /// The servers, in the order of the tables: the chapters, then nginx and nginx x2.
    pub servers: Vec<String>,
    pub scenarios: Vec<ScenarioResult>,
    pub syscall_window: Option<(String, u64)>,
    pub syscalls: Vec<(String, Result<SyscallCount, String>)>,
    pub allocation_requests: (u64, u64),
    pub allocations: Vec<(String, Result<AllocationCount, String>)>,
    /// Chapters that could not be measured, and why.
    pub skipped: Vec<(String, String)>,
}

/// A note under the tables: what it says, and of whom; the servers with the same note in
/// a scenario share it.
struct Note {
    scenario: String,
    servers: Vec<String>,
    text: String,
}

/// The mark of the note `text` about `server` in `scenario` (` [2]`), added to `notes`
/// or, if another server has the same note there, shared with it.
fn mark(notes: &mut Vec<Note>, scenario: &str, server: &str, text: String) -> String {
    let index = match notes.iter().position(|note| note.scenario == scenario && note.text == text) {
        Some(index) => index,
        None => {
            notes.push(Note { scenario: scenario.into(), servers: Vec::new(), text });
            notes.len() - 1
        }
    };
    notes[index].servers.push(server.to_string());
    format!(" [{}]", index + 1)
}

pub struct ScenarioResult {
    pub scenario: &'static Scenario,
    /// One per server, in the order of `Run::servers`.
    pub cells: Vec<Summary>,
}

/// The Markdown page. It has no top-level title: the book's appendix page provides one and
/// includes this file below it.
pub fn markdown(run: &Run) -> String {
    let mut page = String::new();
    let mut footnotes = Vec::new();
    header(&mut page, run);
    throughput(&mut page, run, &mut footnotes);
    idle(&mut page, run);
    syscalls(&mut page, run, &mut footnotes);
    allocations(&mut page, run, &mut footnotes);
    let out = &mut page;
    if !run.scenarios.is_empty() {
        let _ = writeln!(out, "\n### What each scenario shows\n");
    }
    for result in &run.scenarios {
        let scenario = result.scenario;
        let _ = writeln!(out, "- `{}` ({}): {}", scenario.id, scenario.title, scenario.note);
    }
    if !footnotes.is_empty() {
        let _ = writeln!(out, "\n### Notes\n");
        for (index, note) in footnotes.iter().enumerate() {
            let (servers, scenario) = (note.servers.join(", "), &note.scenario);
            let _ = writeln!(out, "{}. {servers} on `{scenario}`: {}", index + 1, note.text);
        }
    }
    for (server, why) in &run.skipped {
        let _ = writeln!(out, "\n_{server} was not measured: {why}._");
    }
    page
}

/// When, where, with what, and how: what a reader needs to trust or repeat the numbers.
fn header(out: &mut String, run: &Run) {
    let _ = writeln!(
        out,
        "_Measured by the workbook's benchmark harness on {} (the run took {})._\n",
        run.measured_at,
        human_duration(run.runtime)
    );
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| command | `{}` |", run.command);
    let _ = writeln!(
        out,
        "| machine | {}; load average {} when the run began, {} when it ended |",
        run.machine, run.load_before, run.load_after
    );
    let _ = writeln!(out, "| load generator | {} |", run.generator);
    let peer = run.peer.as_deref().unwrap_or("none (nginx is not installed)");
    let _ = writeln!(out, "| peer | {peer} |");
    let _ = writeln!(
        out,
        "| method | every scenario: {} round{} of {} s per server, a fresh server each \
         time, servers taking turns within a round, so a drift in the machine's speed \
         touches all alike. Each number is the median over the rounds (errors: the sum); \
         *vs nginx* is the median of the per-round ratios to the nginx with as many worker \
         processes as the server has loops (`nginx x2` for `x2`); peak RSS is the server's \
         `VmHWM`, the highest of the rounds (summed over nginx's processes). Loopback only. |",
        run.rounds,
        if run.rounds == 1 { "" } else { "s" },
        run.seconds,
    );
    let _ = writeln!(
        out,
        "| CPU/request | the server's `utime` and `stime` from `/proc/PID/stat`, read just \
         before and just after each measured run, divided by the requests answered: µs of \
         user + system = total. Threads are counted with their process; nginx x2 is its \
         master and workers added up. The kernel counts in ticks of 1/{} s, so a figure is \
         good to one tick ({}) divided by the requests of a run. |",
        run.clock_ticks,
        latency_text(1e6 / run.clock_ticks.max(1) as f64),
    );
    let _ = writeln!(
        out,
        "\nThe chart `bench.svg` next to this file is drawn from the same run, whose raw \
         results are kept beside it in `{}`: `cargo run --release -p book-tools --bin bench -- \
         --redraw` draws both again from them.",
        crate::results::FILE
    );
}

/// A table per scenario (but the idle sweep), a row per server: few enough columns, with
/// short heads, to fit the book's text column.
fn throughput(out: &mut String, run: &Run, notes: &mut Vec<Note>) {
    // `--no-scenarios` and `--scenarios idle-0,...`: no table to introduce.
    if run.scenarios.iter().all(|result| result.scenario.idle > 0) {
        return;
    }
    let _ = writeln!(out, "\n### Throughput, latency and CPU\n");
    let _ = writeln!(
        out,
        "For each server: requests answered a second; *vs nginx*, that over its nginx's; the \
         p50 and p99 latency; *CPU µs*, the server's CPU time per request, user and system \
         together (the chart shows them apart for `keep-alive-50`, and `{}` keeps them); its \
         peak memory. A mark like [1] points to a note at the end.",
        crate::results::FILE
    );
    for result in run.scenarios.iter().filter(|r| r.scenario.idle == 0) {
        let id = result.scenario.id;
        let _ = writeln!(out, "\n#### {} (`{id}`)\n", result.scenario.title);
        let _ = writeln!(out, "| server | requests/s | vs nginx | p50 | p99 | CPU µs | peak RSS |");
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
        for (server, cell) in run.servers.iter().zip(&result.cells) {
            let mut note = |text: String| mark(notes, id, server, text);
            let row = match cell {
                Summary::Measured { median, peak_rss_kib, cpu, vs_nginx, missed } => {
                    let mut marks = String::new();
                    if median.errors > 0 {
                        marks
                            .push_str(&note(format!("{} errors", rate_text(median.errors as f64))));
                    }
                    if let Some(missed) = missed {
                        marks.push_str(&note(missed.clone()));
                    }
                    // What the generator said beside its numbers (wrk's pipelined p99 of
                    // 0, reconnects): on the p99, which it is most often about.
                    let said = if median.detail.is_empty() {
                        String::new()
                    } else {
                        note(median.detail.clone())
                    };
                    format!(
                        "{}{marks} | {} | {} | {}{said} | {} | {} |",
                        rate_text(median.requests_per_s),
                        vs_nginx.map(ratio_text).unwrap_or_else(|| "–".into()),
                        latency_or_dash(median.p50_us),
                        latency_or_dash(median.p99_us),
                        cpu.map(|cpu| microseconds(cpu.total_us())).unwrap_or_else(|| "–".into()),
                        peak_rss_kib.map(memory_text).unwrap_or_else(|| "–".into()),
                    )
                }
                Summary::Blocked(why) => format!("blocked{} | | | | | |", note(why.clone())),
                Summary::Failed(why) => format!("failed{} | | | | | |", note(why.clone())),
            };
            let _ = writeln!(out, "| {server} | {row}");
        }
    }
}

/// The idle sweep: one row per server, one column per number of idle connections; once
/// for latency and throughput, once for CPU.
fn idle(out: &mut String, run: &Run) {
    let sweep: Vec<&ScenarioResult> =
        run.scenarios.iter().filter(|r| r.scenario.id.starts_with("idle-")).collect();
    if sweep.is_empty() {
        return;
    }
    let mut header = "| server |".to_string();
    let mut rule = "|---|".to_string();
    for result in &sweep {
        header.push_str(&format!(" {} idle |", rate_text(result.scenario.idle as f64)));
        rule.push_str("---:|");
    }
    let table = |out: &mut String, cell: &dyn Fn(&Summary) -> String| {
        let _ = writeln!(out, "{header}\n{rule}");
        for (index, server) in run.servers.iter().enumerate() {
            let mut row = format!("| {server} |");
            for result in &sweep {
                let text = match &result.cells[index] {
                    Summary::Blocked(_) => "blocked".to_string(),
                    Summary::Failed(_) => "failed".to_string(),
                    measured => cell(measured),
                };
                row.push_str(&format!(" {text} |"));
            }
            let _ = writeln!(out, "{row}");
        }
    };
    let _ = writeln!(out, "\n### Idle connections: `/hello` latency for one client, p50 / p99\n");
    table(out, &|cell| match cell.measured() {
        Some(median) => {
            format!("{} / {}", latency_or_dash(median.p50_us), latency_or_dash(median.p99_us))
        }
        None => "–".into(),
    });
    let _ = writeln!(
        out,
        "\n*Blocked*: the server did not answer a single `/hello` within 2 s with the idle \
         connections open (chapter 1 is still waiting for the first idle client to speak)."
    );
    let _ = writeln!(
        out,
        "\n### Idle connections: server CPU per `/hello`, µs\n\n\
         What each answer costs the server while the idle connections sit there (user and \
         system time together; the raw results keep them apart): a `poll` loop pays for \
         every one of them on every turn, an `epoll` loop for none.\n"
    );
    table(out, &|cell| match cell.cpu() {
        Some(cpu) => microseconds(cpu.total_us()),
        None => "–".into(),
    });
}

fn syscalls(out: &mut String, run: &Run, notes: &mut Vec<Note>) {
    let Some((scenario, seconds)) = &run.syscall_window else { return };
    let _ = writeln!(out, "\n### System calls per request\n");
    let _ = writeln!(
        out,
        "`strace -c -f` attached to a fresh server (every process and thread of it) before a \
         {seconds} s run of `{scenario}` and detached after it: all the server's system calls \
         in that window, divided by the requests answered in it. strace slows every call, so \
         a traced server finds more work per `poll` turn than an untraced one; read these as \
         the shape of the work, not to the decimal. *Calls* are all of them per request, \
         *requests* those answered while traced, and the last column the most frequent calls \
         per request (in brackets, how many of them failed), down to 0.01.\n"
    );
    let _ = writeln!(out, "| server | calls | requests | most frequent, per request (failed) |");
    let _ = writeln!(out, "|---|---:|---:|---|");
    for (server, count) in &run.syscalls {
        let count = match count {
            Ok(count) => count,
            Err(why) => {
                let mark = mark(notes, "strace -c -f", server, format!("not measured: {why}"));
                let _ = writeln!(out, "| {server} | –{mark} | – | |");
                continue;
            }
        };
        let requests = count.requests.max(1) as f64;
        // The calls that happen once in a hundred requests or more: four at most, to fit.
        let top: Vec<String> = count
            .top
            .iter()
            .filter(|(_, calls, _)| *calls as f64 / requests >= 0.005)
            .take(4)
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
}

fn allocations(out: &mut String, run: &Run, notes: &mut Vec<Note>) {
    if run.allocations.is_empty() {
        return;
    }
    let (few, many) = run.allocation_requests;
    let _ = writeln!(out, "\n### Heap allocations per `/hello` request\n");
    let _ = writeln!(
        out,
        "A counter loaded into the server with `LD_PRELOAD` (`book/tools/src/bin/bench/\
         alloc_counter.rs`) counts every call into glibc's allocator that allocates (`malloc`, \
         `calloc`, `realloc`, the aligned ones), as the server runs. After a warm-up, each \
         server answered exactly {few} and then {many} `/hello` requests over one connection; \
         the second batch's count less the first's, divided by {}, is what one request costs, \
         the connection's own cost cancelled out. For chapters 1 and 2 a request includes its \
         connection; for nginx the count is of the pools it takes from `malloc`, not of what \
         it carves out of them. A figure below zero means the first batch allocated a \
         little that the second did not (a pool or a table filling up once), spread over the \
         requests.\n",
        many - few
    );
    let _ = writeln!(out, "| server | allocations/request | bytes/request |");
    let _ = writeln!(out, "|---|---:|---:|");
    for (server, count) in &run.allocations {
        match count {
            Ok(count) => {
                let _ = writeln!(
                    out,
                    "| {server} | {} | {} |",
                    per_request_text(count.allocations_per_request, 2),
                    per_request_text(count.bytes_per_request, 0)
                );
            }
            Err(why) => {
                let mark = mark(notes, "alloc_counter.rs", server, format!("not measured: {why}"));
                let _ = writeln!(out, "| {server} | –{mark} | – |");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_without_scenarios_shows_its_counts_alone() {
        // `--no-scenarios`: the system calls and allocations, and no empty tables.
        let mut run = crate::chart::tests::run();
        run.scenarios.clear();
        let page = super::markdown(&run);
        assert!(page.contains("| ch07-epoll | 3.00 | 128 |"));
        assert!(page.contains("### System calls per request"));
        assert!(!page.contains("### Throughput") && !page.contains("### What each scenario"));
        assert!(crate::chart::svg(&run).trim_end().ends_with("</svg>"));
    }
}
