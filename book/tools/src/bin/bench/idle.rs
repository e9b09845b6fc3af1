//! The chart's last panel: `/hello` latency (p50) for one client while 0 to 10,000 idle
//! connections are open, on a log scale, in two plots side by side on the same scale: the
//! loops that wait with `poll` (chapters 2 to 6, and chapter 7 run with `--backend poll`),
//! which hand the kernel every connection on every turn, and those that wait with `epoll`
//! (chapters 7 to 9, nginx), whose turn costs the same however many are idle. Six lines or
//! so a plot, each named at its end. A server that could not answer at all with idle
//! connections open (chapter 1, stuck on the first of them) is said under the plots.

use std::fmt::Write;

use crate::chart::{chapter_number, color, dash, escape, panel_title, text, INK, MUTED, WIDTH};
use crate::report::{Run, ScenarioResult};
use crate::summary::Summary;
use crate::text::{latency_text, rate_text};

/// Does this server wait with `poll`? The workbook's chapters 2 to 6 do, and chapter 7 run
/// with `--backend poll`; chapter 1 blocks instead, and the rest wait with `epoll`.
pub fn waits_with_poll(server: &str) -> bool {
    server.ends_with(" (poll)") || chapter_number(server).is_some_and(|n| (2..=6).contains(&n))
}

const PLOT_HEIGHT: f64 = 190.0;
/// Left of a plot: the latency labels; right of it: the lines' names.
const LABELS_LEFT: f64 = 50.0;
const NAMES_RIGHT: f64 = 148.0;

/// Axis labels for powers of ten of microseconds: `10 µs`, `1 ms`, `10 s`.
pub fn decade_text(us: f64) -> String {
    if us < 1e3 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.0} ms", us / 1e3)
    } else {
        format!("{:.0} s", us / 1e6)
    }
}

/// Moves labels wanted at `wanted` (heights, any order) apart by at least `gap`, as little
/// as it can, keeping their order and staying within `top` and `bottom`: labels that would
/// overlap form a group, centred on where its labels want to be, and groups that then
/// overlap merge, until none do.
pub fn spread(wanted: &[f64], gap: f64, top: f64, bottom: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by(|&a, &b| wanted[a].total_cmp(&wanted[b]));
    // Each group: the wanted heights of its labels, and where its first label goes.
    let mut groups: Vec<(Vec<f64>, f64)> = Vec::new();
    for &index in &order {
        groups.push((vec![wanted[index]], wanted[index]));
        // Merge with the group above while the two overlap.
        while groups.len() > 1 {
            let (above, this) = (&groups[groups.len() - 2], &groups[groups.len() - 1]);
            if above.1 + gap * above.0.len() as f64 <= this.1 {
                break;
            }
            let (mut merged, _) = groups.pop().unwrap_or_default();
            let (mut heights, _) = groups.pop().unwrap_or_default();
            heights.append(&mut merged);
            let mean = heights.iter().sum::<f64>() / heights.len() as f64;
            let first = mean - gap * (heights.len() - 1) as f64 / 2.0;
            let last = bottom - gap * (heights.len() - 1) as f64;
            groups.push((heights, first.min(last).max(top)));
        }
    }
    let mut placed = vec![0.0; wanted.len()];
    let mut slot = 0;
    for (heights, first) in &groups {
        for k in 0..heights.len() {
            placed[order[slot]] = first + gap * k as f64;
            slot += 1;
        }
    }
    placed
}

/// The panel, its top at `top`; its bottom, or `None` if the run has no idle sweep.
pub fn draw(out: &mut String, run: &Run, top: f64) -> Option<f64> {
    let sweep: Vec<&ScenarioResult> =
        run.scenarios.iter().filter(|r| r.scenario.id.starts_with("idle-")).collect();
    if sweep.is_empty() {
        return None;
    }
    let p50 = |server: usize| -> Option<Vec<f64>> {
        sweep.iter().map(|result| result.cells[server].measured().map(|load| load.p50_us)).collect()
    };
    // Servers with a value at every step; the others could not answer beside idle ones.
    let drawn: Vec<(usize, Vec<f64>)> =
        (0..run.servers.len()).filter_map(|server| Some((server, p50(server)?))).collect();
    let values = drawn.iter().flat_map(|(_, values)| values.iter().copied()).filter(|us| *us > 0.0);
    let (low, high) =
        values.fold((f64::INFINITY, 1.0f64), |(low, high), us| (low.min(us), high.max(us)));
    let low_decade = if low.is_finite() { low.log10().floor() } else { 1.0 };
    let high_decade = high.log10().ceil().max(low_decade + 1.0);

    let body = panel_title(
        out,
        top,
        "Idle connections: /hello latency for one client while thousands say nothing",
        "p50, log scale, lower is better; both plots on the same scale",
    );
    let plot_top = body + 30.0;
    let plot_bottom = plot_top + PLOT_HEIGHT;
    let y = |us: f64| {
        let fraction = (us.max(1.0).log10() - low_decade) / (high_decade - low_decade);
        plot_bottom - fraction * PLOT_HEIGHT
    };
    let half = (WIDTH - 32.0) / 2.0;
    let groups = [
        ("Waiting with poll: every turn hands over every socket", true),
        ("Waiting with epoll: the kernel keeps the list", false),
    ];
    for (slot, (heading, poll)) in groups.into_iter().enumerate() {
        let left = 16.0 + half * slot as f64 + LABELS_LEFT;
        let right = 16.0 + half * (slot + 1) as f64 - NAMES_RIGHT;
        text(
            out,
            (16.0 + half * slot as f64, body + 12.0),
            12.0,
            INK,
            "font-weight=\"bold\"",
            heading,
        );
        // The grid: a line per power of ten, and the idle counts under the plot.
        let mut decade = low_decade;
        while decade <= high_decade {
            let at = y(10f64.powf(decade));
            let _ = writeln!(
                out,
                "<line x1=\"{left:.1}\" x2=\"{right:.1}\" y1=\"{at:.1}\" y2=\"{at:.1}\" stroke=\"#e4e4e4\"/>"
            );
            text(
                out,
                (left - 6.0, at + 4.0),
                12.0,
                MUTED,
                "text-anchor=\"end\"",
                &decade_text(10f64.powf(decade)),
            );
            decade += 1.0;
        }
        let step = (right - left - 20.0) / (sweep.len().max(2) - 1) as f64;
        let x = |index: usize| left + 10.0 + step * index as f64;
        for (index, result) in sweep.iter().enumerate() {
            let label = rate_text(result.scenario.idle as f64);
            text(
                out,
                (x(index), plot_bottom + 18.0),
                12.0,
                MUTED,
                "text-anchor=\"middle\"",
                &label,
            );
        }
        let _ = writeln!(
            out,
            "<line x1=\"{left:.1}\" x2=\"{right:.1}\" y1=\"{plot_bottom:.1}\" y2=\"{plot_bottom:.1}\" stroke=\"#888888\"/>"
        );
        text(
            out,
            ((left + right) / 2.0, plot_bottom + 34.0),
            12.0,
            MUTED,
            "text-anchor=\"middle\"",
            "idle connections",
        );
        // The lines, then their names at their ends, moved apart where they would overlap.
        let lines: Vec<&(usize, Vec<f64>)> = drawn
            .iter()
            .filter(|(server, _)| waits_with_poll(&run.servers[*server]) == poll)
            .collect();
        for (server, values) in &lines {
            let name = &run.servers[*server];
            let points: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(index, us)| format!("{:.1},{:.1}", x(index), y(*us)))
                .collect();
            let _ = writeln!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>",
                points.join(" "),
                color(name),
                dash(name)
            );
            for (index, us) in values.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>{}, {} idle: p50 {}</title></circle>",
                    x(index),
                    y(*us),
                    color(name),
                    escape(name),
                    rate_text(sweep[index].scenario.idle as f64),
                    latency_text(*us)
                );
            }
        }
        let ends: Vec<f64> =
            lines.iter().map(|(_, values)| y(*values.last().unwrap_or(&1.0))).collect();
        let placed = spread(&ends, 15.0, plot_top - 6.0, plot_bottom + 4.0);
        // A thin grey line from each end to its name, a swatch of the line, the name.
        let name_x = right + 8.0;
        for ((server, _), (end, at)) in lines.iter().zip(ends.iter().zip(&placed)) {
            let name = &run.servers[*server];
            let _ = writeln!(
                out,
                "<line x1=\"{:.1}\" y1=\"{end:.1}\" x2=\"{name_x:.1}\" y2=\"{at:.1}\" stroke=\"#b0b0b0\"/>\n\
                 <line x1=\"{name_x:.1}\" y1=\"{at:.1}\" x2=\"{:.1}\" y2=\"{at:.1}\" stroke=\"{}\" stroke-width=\"2.5\"{}/>",
                x(sweep.len() - 1) + 5.0,
                name_x + 16.0,
                color(name),
                dash(name)
            );
            text(out, (name_x + 20.0, at + 4.0), 12.0, INK, "", name);
        }
    }
    let mut bottom = plot_bottom + 40.0;
    // Who could not answer at all, and from how many idle connections on.
    for (server, name) in run.servers.iter().enumerate() {
        let first = sweep.iter().find(|result| matches!(result.cells[server], Summary::Blocked(_)));
        if let Some(result) = first {
            let words = format!(
                "Not drawn: {name}, blocked from {} idle connections on (it waits for the first to speak).",
                rate_text(result.scenario.idle as f64)
            );
            bottom += 18.0;
            text(out, (16.0, bottom), 12.0, MUTED, "", &words);
        }
    }
    Some(bottom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_move_apart_as_little_as_they_can() {
        assert_eq!(spread(&[10.0, 50.0], 15.0, 0.0, 100.0), [10.0, 50.0]);
        // Three crowded labels, centred on where they want to be, in their order.
        assert_eq!(spread(&[50.0, 45.0, 55.0], 15.0, 0.0, 100.0), [50.0, 35.0, 65.0]);
        // At the bottom, the crowd is pushed back up; at the top, down.
        assert_eq!(spread(&[100.0, 100.0], 15.0, 0.0, 100.0), [85.0, 100.0]);
        assert_eq!(spread(&[0.0, 1.0], 15.0, 0.0, 100.0), [0.0, 15.0]);
        // A group that grows into the one above it merges with it.
        assert_eq!(spread(&[10.0, 30.0, 31.0, 32.0], 10.0, 0.0, 100.0), [10.0, 21.0, 31.0, 41.0]);
        assert_eq!(decade_text(100_000.0), "100 ms");
        assert_eq!(decade_text(10.0), "10 µs");
    }

    #[test]
    fn poll_loops_and_epoll_loops_are_told_apart() {
        assert!(waits_with_poll("ch02-poll") && waits_with_poll("ch06-thread-pool"));
        assert!(waits_with_poll("ch07-epoll (poll)"));
        assert!(!waits_with_poll("ch07-epoll") && !waits_with_poll("ch09-multicore x2"));
        assert!(!waits_with_poll("ch01-blocking") && !waits_with_poll("nginx x2"));
    }
}
