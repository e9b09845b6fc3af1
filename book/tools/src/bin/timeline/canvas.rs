//! The drawing's primitives: an SVG text built element by element, the time scale, the
//! colours, and the parts every picture has (lane names, the time axis, the SVG document
//! around them).

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
/// The kernel walking `poll`'s list (chapter 7's picture): a pattern defined in `svg.rs`.
pub const WALKING: &str = "url(#walk)";

/// `&`, `<`, `>` and `"` as XML wants them in text and attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// About how wide `text` is at `size` px in DejaVu Sans (a little more, to be safe:
/// 12 px text is 6-6.5 px a character): enough to decide whether a label fits.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.56
}

/// The SVG's elements, one a line, and the time scale: `span_ms` from `start_ms` (0 but in
/// a zoomed view) across the plot.
pub struct Canvas {
    pub out: String,
    pub start_ms: f64,
    pub span_ms: f64,
}

impl Canvas {
    /// A picture whose time axis starts when A connects.
    pub fn new(span_ms: f64) -> Canvas {
        Canvas { out: String::new(), start_ms: 0.0, span_ms }
    }

    pub fn x(&self, ms: f64) -> f64 {
        let fraction = (ms - self.start_ms).clamp(0.0, self.span_ms) / self.span_ms;
        PLOT_LEFT + fraction * (PLOT_RIGHT - PLOT_LEFT)
    }

    /// Where the axis ends.
    pub fn end_ms(&self) -> f64 {
        self.start_ms + self.span_ms
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
        if span.end <= self.start_ms || span.start >= self.end_ms() {
            return (left, 0.0);
        }
        let width = (right - left).max(2.0);
        self.rect(left, y, width, height, fill);
        (left, width)
    }

    /// `text` in lines no wider than `width`, broken between words; returns how far down
    /// the last line's baseline is from the first's. (A line of prose is narrower than
    /// [`text_width`] says, which is meant for a label that must fit: about 6 px a
    /// character at 12 px, not 6.7.)
    pub fn paragraph(&mut self, x: f64, y: f64, width: f64, fill: &str, text: &str) -> f64 {
        const SIZE: f64 = 12.0;
        let wide = |line: &str| line.chars().count() as f64 * SIZE * 0.52;
        let mut lines: Vec<String> = Vec::new();
        for word in text.split(' ') {
            match lines.last_mut() {
                Some(line) if wide(&format!("{line} {word}")) <= width => {
                    line.push(' ');
                    line.push_str(word);
                }
                _ => lines.push(word.to_string()),
            }
        }
        for (index, line) in lines.iter().enumerate() {
            self.text(x, y + 16.0 * index as f64, SIZE, fill, "", line);
        }
        16.0 * lines.len().saturating_sub(1) as f64
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

/// The step between the axis's ticks: a round number of milliseconds, at most 12 ticks.
/// 100 ms for the usual 800 ms; a fraction of a millisecond for a zoomed view.
pub fn tick_step(span_ms: f64) -> f64 {
    let steps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0];
    let fits = steps.into_iter().find(|step| span_ms / step <= 12.0);
    fits.unwrap_or_else(|| (span_ms / 12.0 / 100.0).ceil() * 100.0)
}

/// A tick's value with as many decimals as the step needs: `100`, `150.8`, `150.85`.
pub fn tick_text(tick: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10()).ceil() as usize };
    format!("{tick:.decimals$}")
}

/// The time axis under the lanes, its ticks, and the grid above it.
pub fn draw_axis(canvas: &mut Canvas, top: f64, axis: f64) {
    let step = tick_step(canvas.span_ms);
    let first = (canvas.start_ms / step).ceil() as i64;
    let ticks: Vec<f64> = (first..)
        .map(|n| n as f64 * step)
        .take_while(|&tick| tick <= canvas.end_ms() + step * 1e-6)
        .collect();
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
        let label = tick_text(tick, step);
        canvas.text(x, axis + 19.0, 12.0, MUTED, r#"text-anchor="middle""#, &label);
    }
    let caption = r#"text-anchor="end""#;
    canvas.text(PLOT_LEFT - 14.0, axis + 19.0, 12.0, MUTED, caption, "ms after A connects");
}

/// The SVG document around the drawing `body`: its size, title, patterns and card.
pub fn document(title: &str, height: f64, body: &str) -> String {
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Verdana, sans-serif" font-size="13">
<title>{}</title>
<defs>
<pattern id="blocked" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="{BLOCKED}"/><rect width="3" height="8" fill="#e07b6e"/></pattern>
<pattern id="disk" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="{JOB}"/><rect width="3" height="8" fill="#7cc8bf"/></pattern>
<pattern id="walk" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#3d3d3d"/><rect width="2" height="6" fill="#9a9a9a"/></pattern>
</defs>
<!-- A light card, so the drawing reads the same in mdBook's dark themes. -->
<rect x="0.5" y="0.5" width="{}" height="{}" rx="8" fill="#ffffff" stroke="#c8c8c8"/>
{body}</svg>
"##,
        escape(title),
        WIDTH - 1.0,
        height - 1.0,
    )
}

#[cfg(test)]
#[path = "canvas_tests.rs"]
mod tests;
