//! The bar panels at the top of the chart: small multiples, one panel per scenario
//! (keep-alive `/hello`, pipelined `/hello`, pipelined 64 KiB echoes) and one of CPU per
//! request, one horizontal bar per server, the servers' names down the left.
//!
//! Each panel has its own scale: pipelined `/hello` runs to a million requests per second,
//! and on one shared axis it would flatten every other bar to a sliver.

use std::fmt::Write;

use crate::chart::{color, escape, is_variant, nice_scale, opacity, short_number, HALO, RIGHT};
use crate::report::{Run, ScenarioResult};
use crate::summary::Summary;
use crate::text::{microseconds, rate_text};

/// The bar panels: server names right-aligned up to here, the panels after it.
const NAMES_RIGHT: f64 = 150.0;
const PANEL_GAP: f64 = 18.0;
/// Height of one server's row in the bar panels.
pub const ROW: f64 = 18.0;
/// The scenarios with a bar panel each, with a caption short enough for a panel, and the
/// one whose CPU per request gets a panel.
const BAR_SCENARIOS: [(&str, &str); 3] = [
    ("keep-alive-50", "/hello, 50 connections"),
    ("pipelined-16", "/hello, 16 pipelined"),
    ("pipelined-echo-64k", "POST 64 KiB, 16 pipelined"),
];
const CPU_SCENARIO: &str = "keep-alive-50";
/// At most this many values under a panel: more would run into each other.
const PANEL_TICKS: f64 = 4.0;

/// All the panels, their top edge at `top`.
pub fn draw(out: &mut String, run: &Run, top: f64) {
    let bottom = top + ROW * run.servers.len() as f64;
    server_names(out, run, top);
    let panel_width = (RIGHT - NAMES_RIGHT - PANEL_GAP * 3.0) / 4.0;
    for (slot, (id, caption)) in BAR_SCENARIOS.iter().enumerate() {
        let left = NAMES_RIGHT + 10.0 + (panel_width + PANEL_GAP) * slot as f64;
        if let Some(result) = run.scenarios.iter().find(|r| r.scenario.id == *id) {
            let panel = Panel { left, right: left + panel_width - 10.0, top, bottom };
            rate_panel(out, run, result, caption, panel);
        }
    }
    if let Some(result) = run.scenarios.iter().find(|r| r.scenario.id == CPU_SCENARIO) {
        let left = NAMES_RIGHT + 10.0 + (panel_width + PANEL_GAP) * 3.0;
        cpu_panel(out, run, result, Panel { left, right: RIGHT, top, bottom });
    }
}

/// The servers' names, one per row, right-aligned against the bar panels.
fn server_names(out: &mut String, run: &Run, top: f64) {
    for (row, server) in run.servers.iter().enumerate() {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{}\">{}</text>",
            NAMES_RIGHT,
            top + ROW * row as f64 + 13.0,
            if server.starts_with("nginx") { "#333333" } else { "#000000" },
            escape(server)
        );
    }
}

/// Where a bar panel is drawn: its plot area, one row per server from the top.
#[derive(Clone, Copy)]
struct Panel {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

/// A panel's title, its vertical grid with the values under it, and its frame.
/// Its scale ends a third beyond the longest bar (`largest`), to leave room for the
/// bar's label. Returns where on the panel a value lies.
fn panel_frame(
    out: &mut String, panel: Panel, title: &str, subtitle: &str, largest: f64,
    label: impl Fn(f64) -> String,
) -> impl Fn(f64) -> f64 {
    let Panel { left, right, top, bottom } = panel;
    let (scale_top, step) = nice_scale(largest * 1.35, PANEL_TICKS);
    let _ = writeln!(
        out,
        "<text x=\"{left:.1}\" y=\"{:.1}\" font-weight=\"bold\">{}</text>\
         <text x=\"{left:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555555\">{}</text>",
        top - 18.0,
        escape(title),
        top - 5.0,
        escape(subtitle)
    );
    let x = move |value: f64| left + (value / scale_top).min(1.0) * (right - left);
    let mut tick = 0.0;
    while tick <= scale_top + step / 2.0 {
        let _ = writeln!(
            out,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\" \
             stroke=\"#e4e4e4\"/><text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\" \
             font-size=\"10\" fill=\"#555555\">{2}</text>",
            x(tick),
            bottom + 13.0,
            label(tick)
        );
        tick += step;
    }
    let _ = writeln!(
        out,
        "<line x1=\"{left:.1}\" x2=\"{left:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\" \
         stroke=\"#333333\"/>"
    );
    x
}

// ANCHOR: bars
/// One scenario's requests per second: a bar per server, the value at its end.
fn rate_panel(out: &mut String, run: &Run, result: &ScenarioResult, caption: &str, panel: Panel) {
    let Panel { left, top, .. } = panel;
    let largest = result
        .cells
        .iter()
        .filter_map(Summary::measured)
        .map(|load| load.requests_per_s)
        .fold(1.0, f64::max);
    let x = panel_frame(out, panel, result.scenario.id, caption, largest, short_number);
    for (row, (server, cell)) in run.servers.iter().zip(&result.cells).enumerate() {
        let y = top + ROW * row as f64 + 3.0;
        match cell.measured() {
            Some(load) => {
                let end = x(load.requests_per_s);
                let _ = writeln!(
                    out,
                    "<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                     fill=\"{}\"{}><title>{}, {}: {} requests/s</title></rect>\
                     <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\"{HALO}>{}</text>",
                    end - left,
                    ROW - 6.0,
                    color(server),
                    opacity(server),
                    escape(server),
                    result.scenario.id,
                    rate_text(load.requests_per_s),
                    end + 3.0,
                    y + 10.0,
                    short_number(load.requests_per_s)
                );
            }
            None => not_measured(out, cell, left, y),
        }
    }
}
// ANCHOR_END: bars

/// CPU per request in one scenario: user time dark, system time pale, stacked.
fn cpu_panel(out: &mut String, run: &Run, result: &ScenarioResult, panel: Panel) {
    let Panel { left, top, .. } = panel;
    let largest =
        result.cells.iter().filter_map(Summary::cpu).map(|cpu| cpu.total_us()).fold(1.0, f64::max);
    let title = format!("CPU, {}", result.scenario.id);
    let subtitle = "µs/request: user | system";
    let x = panel_frame(out, panel, &title, subtitle, largest, |us| format!("{us:.0}"));
    for (row, (server, cell)) in run.servers.iter().zip(&result.cells).enumerate() {
        let y = top + ROW * row as f64 + 3.0;
        let Some(cpu) = cell.cpu() else {
            not_measured(out, cell, left, y);
            continue;
        };
        let (user_end, end) = (x(cpu.user_us), x(cpu.total_us()));
        let _ = writeln!(
            out,
            "<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" \
             fill=\"{c}\" fill-opacity=\"{user}\"><title>{name}: user {} µs/request</title>\
             </rect><rect x=\"{user_end:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" \
             fill=\"{c}\" fill-opacity=\"{system}\"><title>{name}: system {} µs/request</title>\
             </rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\"{HALO}>{}</text>",
            user_end - left,
            microseconds(cpu.user_us),
            end - user_end,
            microseconds(cpu.system_us),
            end + 3.0,
            y + 10.0,
            microseconds(cpu.total_us()),
            h = ROW - 6.0,
            c = color(server),
            name = escape(server),
            // Pale as a whole for the other way of running a chapter, as in the other panels.
            user = if is_variant(server) { 0.5 } else { 1.0 },
            system = if is_variant(server) { 0.2 } else { 0.4 },
        );
    }
}

/// "n/a" where a bar would be: the server was blocked, failed, or could not be read.
fn not_measured(out: &mut String, cell: &Summary, left: f64, y: f64) {
    let why = match cell {
        Summary::Blocked(why) | Summary::Failed(why) => why.as_str(),
        Summary::Measured { .. } => "not measured",
    };
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#777777\">n/a<title>{}\
         </title></text>",
        left + 3.0,
        y + 10.0,
        escape(why)
    );
}
