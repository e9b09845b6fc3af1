//! The bar panels of the chart: one per question ([`QUESTIONS`]), a row per server with
//! its name down the left, and a column per measure (requests a second in one scenario,
//! peak memory, CPU per request, ...), each on its own scale: pipelined `/hello` runs to a
//! million requests a second, and on one shared axis it would flatten every other bar to a
//! sliver. Every bar has its value written at its end, so no axis is needed to read it.

use crate::chart::{color, escape, is_variant, opacity, short_number, text, text_width, HALO, INK};
use crate::chart::{panel_title, MUTED, WIDTH};
use crate::report::Run;
use crate::summary::Summary;
use crate::text::{memory_text, microseconds, per_request_text, rate_text};

/// What a column of bars shows.
pub enum Measure {
    /// Requests a second in a scenario (by its id).
    Rate(&'static str),
    /// The server's peak memory in a scenario.
    Memory(&'static str),
    /// CPU time per request in a scenario: user time dark, system time pale, stacked.
    Cpu(&'static str),
    /// System calls per request (strace), in the scenario the run counted them in.
    Syscalls,
    /// Heap allocations per `/hello` (our counter, `alloc_counter.rs`).
    Allocations,
}

pub struct Column {
    pub head: &'static str,
    pub measure: Measure,
}

/// One panel: a question, how to read the answer, and its columns.
pub struct Question {
    pub title: &'static str,
    pub note: &'static str,
    pub columns: &'static [Column],
}

pub const QUESTIONS: [Question; 4] = [
    Question {
        title: "How many /hello requests a second, as clients grow?",
        note:
            "keep-alive where the server allows it; longer is better; each column on its own scale",
        columns: &[
            Column { head: "1 connection", measure: Measure::Rate("keep-alive-1") },
            Column { head: "50 connections", measure: Measure::Rate("keep-alive-50") },
            Column { head: "500 connections", measure: Measure::Rate("keep-alive-500") },
        ],
    },
    Question {
        title: "Pipelining: 16 requests sent before reading the answers",
        note: "requests a second on 50 connections; longer is better",
        columns: &[
            Column { head: "/hello", measure: Measure::Rate("pipelined-16") },
            Column {
                head: "POST /echo, 64 KiB each way",
                measure: Measure::Rate("pipelined-echo-64k"),
            },
        ],
    },
    Question {
        title: "Files: requests a second, and the memory a download holds",
        note: "longer is better for requests, shorter for memory",
        columns: &[
            Column { head: "8 MiB file, 10 conns: req/s", measure: Measure::Rate("file-8mib") },
            Column { head: "its peak memory", measure: Measure::Memory("file-8mib") },
            Column { head: "64 KiB file, 50 conns: req/s", measure: Measure::Rate("file-64k") },
        ],
    },
    Question {
        title: "What one /hello costs the server",
        note: "per request, /hello on 50 connections; shorter is better",
        columns: &[
            Column { head: "CPU µs: user | system", measure: Measure::Cpu("keep-alive-50") },
            Column { head: "system calls", measure: Measure::Syscalls },
            Column { head: "heap allocations", measure: Measure::Allocations },
        ],
    },
];

/// One server's value in a column.
enum Value {
    /// A bar (`first`, and `second` stacked after it), with the words at its end.
    Bar { first: f64, second: f64, words: String, hover: String },
    /// No bar: `blocked`, `failed`, `n/a`, and why.
    Missing(&'static str, String),
}

/// A server's value in a column, from the run.
fn value(run: &Run, measure: &Measure, server: usize) -> Value {
    let name = &run.servers[server];
    let cell = |id: &str| {
        let result = run.scenarios.iter().find(|result| result.scenario.id == id)?;
        result.cells.get(server)
    };
    let missing = |cell: Option<&Summary>| match cell {
        Some(Summary::Blocked(why)) => Value::Missing("blocked", why.clone()),
        Some(Summary::Failed(why)) => Value::Missing("failed", why.clone()),
        _ => Value::Missing("n/a", "not measured".into()),
    };
    let bar =
        |first: f64, words: String, hover: String| Value::Bar { first, second: 0.0, words, hover };
    match measure {
        Measure::Rate(id) => match cell(id).and_then(Summary::measured) {
            Some(load) => bar(
                load.requests_per_s,
                short_number(load.requests_per_s),
                format!("{name}: {} requests/s", rate_text(load.requests_per_s)),
            ),
            None => missing(cell(id)),
        },
        Measure::Memory(id) => match cell(id) {
            Some(Summary::Measured { peak_rss_kib: Some(kib), .. }) => {
                let mib = *kib as f64 / 1024.0;
                let words =
                    if mib < 10.0 { format!("{mib:.1} MiB") } else { format!("{mib:.0} MiB") };
                bar(mib, words, format!("{name}: peak {}", memory_text(*kib)))
            }
            other => missing(other),
        },
        Measure::Cpu(id) => match cell(id).and_then(Summary::cpu) {
            Some(cpu) => Value::Bar {
                first: cpu.user_us,
                second: cpu.system_us,
                words: microseconds(cpu.total_us()),
                hover: format!(
                    "{name}: {} µs user + {} µs system",
                    microseconds(cpu.user_us),
                    microseconds(cpu.system_us)
                ),
            },
            None => missing(cell(id)),
        },
        Measure::Syscalls => match run.syscalls.iter().find(|(server, _)| server == name) {
            Some((_, Ok(count))) => {
                let calls = count.per_request();
                bar(calls, format!("{calls:.2}"), format!("{name}: {calls:.2} system calls"))
            }
            Some((_, Err(why))) => Value::Missing("n/a", why.clone()),
            None => Value::Missing("n/a", "not counted".into()),
        },
        Measure::Allocations => match run.allocations.iter().find(|(server, _)| server == name) {
            Some((_, Ok(count))) => {
                let allocations = count.allocations_per_request.max(0.0);
                let words = per_request_text(count.allocations_per_request, 1);
                // nginx's calls to `malloc` are pools, which it then carves up itself.
                let pools = if name.starts_with("nginx") { " (pools from malloc)" } else { "" };
                bar(allocations, words, format!("{name}: {allocations:.2} allocations{pools}"))
            }
            Some((_, Err(why))) => Value::Missing("n/a", why.clone()),
            None => Value::Missing("n/a", "not counted".into()),
        },
    }
}

/// Height of one server's row.
const ROW: f64 = 19.0;
/// Room at a bar's end for its value.
const WORDS: f64 = 58.0;
const GAP: f64 = 22.0;

/// One question's panel, its top at `top`; returns its bottom, or `None` if the run
/// measured nothing it asks about (a column with no value at all is left out).
pub fn draw(out: &mut String, run: &Run, question: &Question, top: f64) -> Option<f64> {
    let columns: Vec<(&Column, Vec<Value>)> = question
        .columns
        .iter()
        .map(|column| {
            let values = (0..run.servers.len()).map(|server| value(run, &column.measure, server));
            (column, values.collect::<Vec<Value>>())
        })
        .filter(|(_, values)| values.iter().any(|value| matches!(value, Value::Bar { .. })))
        .collect();
    if columns.is_empty() {
        return None;
    }
    let body = panel_title(out, top, question.title, question.note);
    let names_right =
        16.0 + run.servers.iter().map(|server| text_width(server, 12.0)).fold(0.0, f64::max);
    let rows_top = body + 22.0;
    for (row, server) in run.servers.iter().enumerate() {
        let y = rows_top + ROW * row as f64 + 13.0;
        text(out, (names_right, y), 12.0, INK, "text-anchor=\"end\"", server);
    }
    let left = names_right + 12.0;
    let width = (WIDTH - 16.0 - left - GAP * (columns.len() - 1) as f64) / columns.len() as f64;
    for (index, (column, values)) in columns.iter().enumerate() {
        let x0 = left + (width + GAP) * index as f64;
        text(out, (x0, body + 12.0), 12.0, INK, "font-weight=\"bold\"", column.head);
        let largest = values
            .iter()
            .map(|value| match value {
                Value::Bar { first, second, .. } => first + second,
                Value::Missing(..) => 0.0,
            })
            .fold(0.0, f64::max);
        let scale = (width - WORDS) / if largest > 0.0 { largest } else { 1.0 };
        let bottom = rows_top + ROW * run.servers.len() as f64;
        let _ = std::fmt::Write::write_fmt(
            out,
            format_args!(
                "<line x1=\"{x0:.1}\" x2=\"{x0:.1}\" y1=\"{rows_top:.1}\" y2=\"{bottom:.1}\" stroke=\"#888888\"/>\n"
            ),
        );
        for (row, (server, value)) in run.servers.iter().zip(values).enumerate() {
            let y = rows_top + ROW * row as f64 + 3.0;
            match value {
                Value::Bar { first, second, words, hover } => {
                    let (first_end, end) = (x0 + first * scale, x0 + (first + second) * scale);
                    // Stacked: the second part paler (CPU: system time after user time).
                    let pale = if is_variant(server) { 0.2 } else { 0.4 };
                    let _ = std::fmt::Write::write_fmt(
                        out,
                        format_args!(
                            "<rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"13\" fill=\"{c}\"{}><title>{h}</title></rect>\n\
                             <rect x=\"{first_end:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"13\" fill=\"{c}\" fill-opacity=\"{pale}\"><title>{h}</title></rect>\n",
                            (first_end - x0).max(1.0),
                            opacity(server),
                            end - first_end,
                            c = color(server),
                            h = escape(hover),
                        ),
                    );
                    text(out, (end + 4.0, y + 11.0), 12.0, INK, HALO.trim_start(), words);
                }
                Value::Missing(word, why) => {
                    let _ = std::fmt::Write::write_fmt(
                        out,
                        format_args!(
                            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{MUTED}\">{word}<title>{}</title></text>\n",
                            x0 + 4.0,
                            y + 11.0,
                            escape(why)
                        ),
                    );
                }
            }
        }
    }
    Some(rows_top + ROW * run.servers.len() as f64)
}
