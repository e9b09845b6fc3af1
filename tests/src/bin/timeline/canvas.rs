//! The drawing's primitives: an SVG text built element by element, the time scale, the
//! colours, and the parts every picture has (lane names, the time axis).

use std::fmt::Write;

use crate::lanes::Span;
use crate::scenario::LASTS_MS;

pub const WIDTH: f64 = 880.0;
/// The time axis runs from here to `PLOT_RIGHT`; the lanes' names sit left of it.
pub const PLOT_LEFT: f64 = 168.0;
pub const PLOT_RIGHT: f64 = 858.0;
/// The axis shows at least as long as the scenario lasts, so that every chapter's
/// picture has the same scale.
pub const MIN_SPAN_MS: f64 = LASTS_MS as f64;

pub const INK: &str = "#222222";
pub const MUTED: &str = "#555555";
pub const WAITING: &str = "#e3e3e3";
pub const RUNNING: &str = "#2a5d8f";
pub const TIMER: &str = "#8e44ad";
pub const BLOCKED: &str = "#c0392b";
pub const JOB: &str = "#2a9d8f";
pub const NOT_ACCEPTED: &str = "#f2b8b5";
pub const ACCEPTED: &str = "#cfe0f1";
pub const ANSWERED: &str = "#3c9a4a";
pub const HELD_UP: &str = "#b03a2e";

/// `&`, `<`, `>` and `"` as XML wants them in text and attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// About how wide `text` is at `size` px in DejaVu Sans (a little more, to be safe:
/// 12 px text is 6-6.5 px a character): enough to decide whether a label fits.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.56
}

/// The SVG's elements, one a line, and the time scale.
pub struct Canvas {
    pub out: String,
    pub span_ms: f64,
}

impl Canvas {
    pub fn x(&self, ms: f64) -> f64 {
        PLOT_LEFT + ms.clamp(0.0, self.span_ms) / self.span_ms * (PLOT_RIGHT - PLOT_LEFT)
    }

    pub fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, fill: &str) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{height:.1}" fill="{fill}"/>"#
        );
    }

    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, style: &str) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" {style}/>"#
        );
    }

    pub fn dot(&mut self, x: f64, y: f64) {
        let _ = writeln!(
            self.out,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="6" fill="{ANSWERED}" stroke="#ffffff" stroke-width="1.5"/>"##
        );
    }

    /// `attributes` such as `font-weight="bold"` or `text-anchor="end"`.
    pub fn text(&mut self, x: f64, y: f64, size: f64, fill: &str, attributes: &str, text: &str) {
        let _ = writeln!(
            self.out,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" fill="{fill}" {attributes}>{}</text>"#,
            escape(text)
        );
    }

    /// A span of a thread's lane, at least 2 px wide so that a 50 µs callback shows; none
    /// for a span outside the axis (before A came).
    pub fn span(&mut self, span: &Span, y: f64, height: f64, fill: &str) -> (f64, f64) {
        let (left, right) = (self.x(span.start), self.x(span.end));
        if span.end <= 0.0 || span.start >= self.span_ms {
            return (left, 0.0);
        }
        let width = (right - left).max(2.0);
        self.rect(left, y, width, height, fill);
        (left, width)
    }

    /// The first of `labels` that fits in the middle of a span, on a patch of `background`
    /// (white bold text), or grey on a waiting span.
    pub fn label_in(&mut self, left: f64, width: f64, y: f64, labels: &[String], background: &str) {
        let waiting = background == WAITING;
        let size = |label: &String| text_width(label, 12.0) * if waiting { 1.0 } else { 1.1 };
        let Some(label) = labels.iter().find(|label| size(label) + 10.0 <= width) else { return };
        let middle = left + width / 2.0;
        if waiting {
            self.text(middle, y, 12.0, MUTED, r#"text-anchor="middle""#, label);
        } else {
            let patch = size(label) + 6.0;
            self.rect(middle - patch / 2.0, y - 12.0, patch, 16.0, background);
            let bold = r#"text-anchor="middle" font-weight="bold""#;
            self.text(middle, y, 12.0, "#ffffff", bold, label);
        }
    }
}

/// A lane's name, in two lines: `loop` in bold, `main thread` under it.
pub fn lane_name(canvas: &mut Canvas, y_middle: f64, name: &str, detail: &str) {
    canvas.text(16.0, y_middle - 2.0, 13.0, INK, r#"font-weight="bold""#, name);
    canvas.text(16.0, y_middle + 13.0, 12.0, MUTED, "", detail);
}

/// The time axis under the lanes, a tick every 100 ms, and the grid above it.
pub fn draw_axis(canvas: &mut Canvas, top: f64, axis: f64) {
    let step = if canvas.span_ms > 1200.0 { 200.0 } else { 100.0 };
    let ticks: Vec<f64> =
        (0..).map(|n| n as f64 * step).take_while(|&tick| tick <= canvas.span_ms).collect();
    // The grid first: everything else is drawn over it.
    let grid = std::mem::take(&mut canvas.out);
    for &tick in &ticks {
        let x = canvas.x(tick);
        canvas.line((x, top), (x, axis), "#ececec", "");
    }
    canvas.out.push_str(&grid);
    let thick = r#"stroke-width="1.5""#;
    canvas.line((PLOT_LEFT, axis), (PLOT_RIGHT, axis), MUTED, thick);
    for &tick in &ticks {
        let x = canvas.x(tick);
        canvas.line((x, axis), (x, axis + 5.0), MUTED, thick);
        canvas.text(x, axis + 19.0, 12.0, MUTED, r#"text-anchor="middle""#, &format!("{tick:.0}"));
    }
    let caption = r#"text-anchor="end""#;
    canvas.text(PLOT_LEFT - 14.0, axis + 19.0, 12.0, MUTED, caption, "ms after A connects");
}
