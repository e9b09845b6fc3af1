//! The picture: one panel per question the benchmark answers, stacked, written as SVG text
//! by hand, 880 px wide: the book's text column (`book/theme/code-column.css`), so that it
//! shows at its own size and no text is smaller than 12 px.
//!
//! 1. How many `/hello` requests a second, as clients grow (1, 50, 500 connections)?
//! 2. Pipelining: 16 requests sent before reading, `/hello` and 64 KiB echoes.
//! 3. Files: requests a second for 8 MiB and 64 KiB, and the memory a download holds.
//! 4. What one `/hello` costs the server: CPU time, system calls, heap allocations.
//! 5. Idle connections: `/hello` latency beside 0 to 10,000 of them, the loops that wait
//!    with `poll` and those that wait with `epoll` side by side.
//!
//! Panels 1 to 4 (`panels.rs`) are bars, a row per server, each column on its own scale
//! with its values written at the bars' ends; panel 5 (`idle.rs`) is lines, each named at
//! its end. SVG is just text: a rectangle is `<rect x= y= width= height=>`, a line is
//! `<line x1= y1= x2= y2=>`. Writing it ourselves keeps the harness free of dependencies,
//! and the book's chart is redrawn by every run (or by `--redraw`), never by hand.

use std::fmt::Write;

use crate::report::Run;
use crate::{idle, panels};

pub const WIDTH: f64 = 880.0;
pub const INK: &str = "#222222";
pub const MUTED: &str = "#555555";
/// A white outline under a label, so it stays readable where it crosses a line or a bar.
pub const HALO: &str = " stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"";

/// Colour-blind-safe colours: Okabe and Ito's for chapters 1-6, three of Paul Tol's for
/// 7-9; nginx in greys.
pub fn color(server: &str) -> &'static str {
    const PALETTE: [&str; 9] = [
        "#D55E00", "#E69F00", "#009E73", "#0072B2", "#CC79A7", "#56B4E9", "#882255", "#117733",
        "#332288",
    ];
    if server.starts_with("nginx") {
        return if server == "nginx" { "#333333" } else { "#999999" };
    }
    PALETTE[(chapter_number(server).unwrap_or(1).max(1) - 1) % PALETTE.len()]
}

/// `ch07-epoll (poll)` -> 7; nginx -> `None`.
pub fn chapter_number(server: &str) -> Option<usize> {
    server.strip_prefix("ch")?.get(..2)?.parse().ok()
}

/// The other way of running a chapter (poll instead of epoll, one loop instead of two) is
/// drawn paler and dashed, beside the chapter's own colour.
pub fn is_variant(server: &str) -> bool {
    server.ends_with(" (poll)") || server.ends_with(" x1")
}

pub fn dash(server: &str) -> &'static str {
    if server.starts_with("nginx") {
        " stroke-dasharray=\"6 4\""
    } else if is_variant(server) {
        " stroke-dasharray=\"2 3\""
    } else {
        ""
    }
}

pub fn opacity(server: &str) -> &'static str {
    if is_variant(server) {
        " fill-opacity=\"0.5\""
    } else {
        ""
    }
}

/// About how wide `text` is at `size` px in DejaVu Sans (a little more, to be safe):
/// enough to decide whether a label fits.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// A `<text>` element; `attributes` such as `font-weight="bold"`.
pub fn text(
    out: &mut String, (x, y): (f64, f64), size: f64, fill: &str, attributes: &str, text: &str,
) {
    let _ = writeln!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" fill=\"{fill}\" {attributes}>{}</text>",
        escape(text)
    );
}

/// A panel's title and, under it, what to read it by; returns where its body starts.
pub fn panel_title(out: &mut String, top: f64, title: &str, note: &str) -> f64 {
    text(out, (16.0, top + 16.0), 15.0, INK, "font-weight=\"bold\"", title);
    text(out, (16.0, top + 34.0), 12.0, MUTED, "", note);
    top + 46.0
}

pub fn svg(run: &Run) -> String {
    let mut body = String::new();
    let out = &mut body;
    text(
        out,
        (16.0, 28.0),
        17.0,
        INK,
        "font-weight=\"bold\"",
        "The benchmark: each chapter against nginx",
    );
    let generator = run.generator.split(',').next().unwrap_or("");
    let about = format!("{} · {} · {generator}", run.machine, run.measured_at);
    text(out, (16.0, 48.0), 12.0, MUTED, "", &about);
    let mut y = 62.0;
    for question in &panels::QUESTIONS {
        if let Some(bottom) = panels::draw(out, run, question, y) {
            y = bottom + 18.0;
        }
    }
    if let Some(bottom) = idle::draw(out, run, y) {
        y = bottom + 18.0;
    }
    let height = y.ceil();
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"DejaVu Sans, Verdana, sans-serif\" \
         font-size=\"12\">\n<title>The workbook's benchmark: requests per second, what a \
         request costs, and latency beside idle connections, each chapter against nginx\
         </title>\n<!-- A light card, so the chart reads the same in mdBook's dark themes. -->\n\
         <rect x=\"0.5\" y=\"0.5\" width=\"{}\" height=\"{}\" rx=\"8\" fill=\"#ffffff\" \
         stroke=\"#c8c8c8\"/>\n{body}</svg>\n",
        WIDTH - 1.0,
        height - 1.0
    )
}

/// `129000` -> `129k`, `23640` -> `23.6k`.
pub fn short_number(value: f64) -> String {
    if value >= 1e6 {
        format!("{:.2}M", value / 1e6)
    } else if value >= 1e5 {
        format!("{:.0}k", value / 1e3)
    } else if value >= 1e3 {
        format!("{:.1}k", value / 1e3)
    } else if value >= 10.0 || value == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A small run, as the harness would have measured it.
    pub fn run() -> Run {
        use crate::allocations::AllocationCount;
        use crate::cpu::CpuPerRequest;
        use crate::generator::LoadResult;
        use crate::report::ScenarioResult;
        use crate::scenarios::SCENARIOS;
        use crate::summary::Summary;
        use crate::syscalls::SyscallCount;
        let servers = ["ch01-blocking", "ch07-epoll", "ch07-epoll (poll)", "nginx", "nginx x2"];
        let cell = |index: usize, scenario: usize| match index {
            0 if scenario > 7 => Summary::Blocked("stuck".into()),
            _ => Summary::Measured {
                median: LoadResult {
                    requests: 1000,
                    requests_per_s: 1e3 * (index + 1) as f64 * (scenario + 1) as f64,
                    p50_us: 50.0 * (index + 1) as f64 * (1 + scenario % 4) as f64,
                    p99_us: 90.0 * (index + 1) as f64,
                    errors: if index == 3 && scenario == 3 { 2 } else { 0 },
                    detail: String::new(),
                },
                peak_rss_kib: Some(2048 * (index as u64 + 1)),
                cpu: Some(CpuPerRequest { user_us: 1.5, system_us: 5.25 * (index + 1) as f64 }),
                vs_nginx: (index > 0).then_some(0.95),
                missed: None,
            },
        };
        let counted = |server: &&str| server.to_string();
        Run {
            command: "bench".into(),
            measured_at: "2026-11-24 17:39 UTC".into(),
            machine: "2 CPUs (AMD EPYC), Linux 6.1.0, 23.5 GiB RAM".into(),
            clock_ticks: 100,
            generator: "wrk 4.1.0, 1 thread".into(),
            peer: Some("nginx/1.22.1".into()),
            rounds: 1,
            seconds: 1,
            runtime: std::time::Duration::from_secs(61),
            load_before: "0.00 0.00 0.00".into(),
            load_after: "0.50 0.10 0.00".into(),
            servers: servers.iter().map(counted).collect(),
            scenarios: SCENARIOS
                .iter()
                .enumerate()
                .map(|(number, scenario)| ScenarioResult {
                    scenario,
                    cells: (0..servers.len()).map(|index| cell(index, number)).collect(),
                })
                .collect(),
            syscall_window: Some(("keep-alive-50".into(), 2)),
            syscalls: servers
                .iter()
                .map(|server| {
                    let top = vec![("recvfrom".to_string(), 2000, 10), ("sendto".into(), 1000, 0)];
                    (counted(server), Ok(SyscallCount { requests: 1000, total: 3100, top }))
                })
                .collect(),
            allocation_requests: (500, 2500),
            allocations: servers[..3]
                .iter()
                .map(|server| {
                    let count =
                        AllocationCount { allocations_per_request: 3.0, bytes_per_request: 128.0 };
                    (counted(server), Ok(count))
                })
                .collect(),
            skipped: vec![("ch10-ring".into(), "no such folder".into())],
        }
    }

    #[test]
    fn short_numbers_read_well() {
        assert_eq!(short_number(129_400.0), "129k");
        assert_eq!(short_number(23_640.0), "23.6k");
        assert_eq!(short_number(1_501_532.0), "1.50M");
        assert_eq!(short_number(68.5), "68");
        assert_eq!(short_number(7.02), "7.02");
        assert_eq!(short_number(0.0), "0");
    }

    #[test]
    fn a_panel_per_question_every_server_and_text_no_smaller_than_12_px() {
        let svg = svg(&run());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"880\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        for title in [
            "How many /hello requests a second, as clients grow?",
            "Pipelining: 16 requests sent before reading the answers",
            "Files: requests a second, and the memory a download holds",
            "What one /hello costs the server",
            "Idle connections: /hello latency for one client",
        ] {
            assert!(svg.contains(title), "no panel {title:?}");
        }
        for server in run().servers {
            assert!(svg.contains(&format!(">{}<", escape(&server))), "{server}");
        }
        // Every size said is 12 px or more.
        for size in svg.split("font-size=\"").skip(1) {
            let size: f64 = size.split('"').next().and_then(|n| n.parse().ok()).expect("a size");
            assert!(size >= 12.0, "text of {size} px");
        }
        // To look at it: BENCH_CHART=/tmp/chart.svg cargo test -p book-tools --bin bench
        if let Some(path) = std::env::var_os("BENCH_CHART") {
            std::fs::write(path, svg).expect("the chart can be written where asked");
        }
    }

    #[test]
    fn chapters_keep_their_colours() {
        assert_eq!(color("ch01-blocking"), "#D55E00");
        assert_eq!(color("ch03-event-loop"), "#009E73");
        assert_eq!(color("ch09-multicore x1"), color("ch09-multicore x2"));
        assert_ne!(color("ch07-epoll"), color("ch01-blocking"));
        assert_eq!(color("nginx"), "#333333");
        assert!(is_variant("ch07-epoll (poll)") && !is_variant("ch07-epoll"));
        assert_eq!(chapter_number("ch07-epoll (poll)"), Some(7));
        assert_eq!(chapter_number("nginx x2"), None);
    }
}
