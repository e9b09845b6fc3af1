//! Chapter 8's picture: the tasks. A task runs for a tenth of a millisecond at a time, a
//! sliver under a pixel on an 800 ms axis, so the picture shows them twice over:
//!
//! - on each client's lane, the moments its task ran (a line of the trace about its
//!   connection falls in a stretch of the loop's work), drawn 3 px wide;
//! - under the axis, B's request zoomed in about a thousand times, from the loop turn that
//!   accepts it to the one that closes it: each stretch of work is one task polled, named
//!   (the listener's, B's), and what it did (accepts B, reads, answers, closes), between
//!   the waits in epoll.

use std::fmt::Write;

use crate::canvas::*;
use crate::lanes::{Activity, Connection, Lane, Span, Timeline};
use crate::scenario::Seen;
use crate::svg::{self, Layout, Picture, Swatch};

/// How wide a task's run is drawn on a client's lane, at the least.
const TICK_PX: f64 = 3.0;

/// The stretches of the loop's work during which this connection's task ran: those in
/// which a line about the connection was printed.
pub fn task_runs<'a>(timeline: &'a Timeline, connection: &Connection) -> Vec<&'a Span> {
    let Some(lane) = loop_of(timeline, connection) else { return Vec::new() };
    let mut runs: Vec<&Span> = Vec::new();
    for (at, _) in &connection.steps {
        if let Some(span) = work_at(lane, *at) {
            if !runs.iter().any(|run| std::ptr::eq(*run, span)) {
                runs.push(span);
            }
        }
    }
    runs
}

/// The loop that serves `connection`.
fn loop_of<'a>(timeline: &'a Timeline, connection: &Connection) -> Option<&'a Lane> {
    timeline.loops.iter().find(|lane| lane.thread == connection.thread)
}

/// The stretch of work (not a wait) that was going on at `at`.
fn work_at(lane: &Lane, at: f64) -> Option<&Span> {
    let working = |span: &&Span| !matches!(span.activity, Activity::Waiting(_));
    lane.spans.iter().filter(working).find(|span| span.start <= at && at <= span.end)
}

/// Marks on a client's lane where its task ran, at least [`TICK_PX`] wide.
pub fn draw_task_runs(canvas: &mut Canvas, runs: &[&Span], y: f64, height: f64) {
    for run in runs {
        if run.end <= canvas.start_ms || run.start >= canvas.end_ms() {
            continue;
        }
        let (left, right) = (canvas.x(run.start), canvas.x(run.end));
        let width = (right - left).max(TICK_PX);
        canvas.rect(left - (width - (right - left)) / 2.0, y, width, height, RUNNING);
    }
}

/// The whole of chapter 8's picture.
pub fn draw(picture: &Picture) -> String {
    let mut canvas = Canvas::new(svg::span_ms(picture.clients));
    let title = format!(
        "Chapter {}, {}: three clients, a task each, drawn from its --trace",
        picture.number, picture.name
    );
    let top = svg::heading(&mut canvas, &title, picture.clients, "");
    let layout = svg::lanes(&mut canvas, picture, top);
    let mut items = svg::legend_items(&[picture]);
    items.insert(2, (Swatch::Fill(RUNNING), "on a client's lane: its task runs".into()));
    // B's request: the one whose whole life, accept to close, fits in a millisecond.
    let bottom = match inset(&mut canvas, picture.timeline, picture.clients, 1, &layout) {
        Some(inset_bottom) => inset_bottom + 24.0,
        None => layout.axis + 36.0,
    };
    let redraw = svg::redraw_words(picture.number, picture.flags);
    let height = svg::ending(&mut canvas, &items, bottom, &redraw);
    document(&svg::description(picture.name), height, &canvas.out)
}

/// The stretch of the loop's lane that served `seen`'s connection: from the start of the
/// turn that accepted it to the end of the turn that closed it (or answered it).
pub fn window(timeline: &Timeline, seen: &Seen) -> Option<(f64, f64)> {
    let connection = svg::connection_of(timeline, seen)?;
    let lane = loop_of(timeline, connection)?;
    let first = work_at(lane, connection.accepted)?;
    let last = work_at(lane, connection.closed.or(connection.response_sent)?)?;
    Some((first.start, last.end))
}

/// Who ran in a stretch of work, and what they did: `("B's task", "reads, answers")`.
/// Tasks are known by the lines they print: the listener's prints `accept: ...`, a
/// connection's task the lines about its descriptor.
pub fn who_ran(timeline: &Timeline, clients: &[Seen], span: &Span) -> (String, String) {
    let within = |at: f64| span.start <= at && at <= span.end;
    let mut tasks: Vec<String> = Vec::new();
    let mut deeds: Vec<String> = Vec::new();
    for seen in clients {
        let Some(connection) = svg::connection_of(timeline, seen) else { continue };
        let letter = seen.request.letter;
        if within(connection.accepted) {
            tasks.push("the listener's task".into());
            deeds.push(format!("accepts {letter}"));
        }
        let steps: Vec<&str> = connection
            .steps
            .iter()
            .filter(|(at, _)| within(*at))
            .map(|(_, what)| what.as_str())
            .collect();
        if !steps.is_empty() {
            tasks.push(format!("{letter}'s task"));
            deeds.extend(steps.iter().map(|step| deed(step)));
        }
    }
    deeds.dedup();
    (tasks.join(" + "), deeds.join(", "))
}

/// `read 59 bytes` -> `reads`, `sent 170 bytes` (chapter 2: `response sent`) -> `answers`, `closed` ->
/// `closes`.
fn deed(step: &str) -> String {
    if step.starts_with("read 0 bytes") {
        "reads the end".into()
    } else if step.starts_with("read ") {
        "reads".into()
    } else if step.starts_with("response sent") || step.starts_with("sent ") {
        "answers".into()
    } else if step == "closed" {
        "closes".into()
    } else {
        step.split([' ', ':']).next().unwrap_or(step).to_string()
    }
}

/// `1143.2` -> `1,100`: a factor said roughly, two figures at most.
fn roughly(factor: f64) -> String {
    let unit = 10f64.powf((factor.max(1.0).log10().floor() - 1.0).max(0.0));
    let rounded = ((factor / unit).round() * unit) as u64;
    let digits = rounded.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// The zoomed view of `clients[zoomed]`'s turns, under the main axis, joined to where
/// they are on it; returns its bottom edge, or `None` if the trace did not follow the
/// client that far.
fn inset(
    canvas: &mut Canvas, timeline: &Timeline, clients: &[Seen], zoomed: usize, layout: &Layout,
) -> Option<f64> {
    let seen = clients.get(zoomed)?;
    let lane = loop_of(timeline, svg::connection_of(timeline, seen)?)?;
    let (start, end) = window(timeline, seen)?;
    // A little of the waits on either side.
    let margin = ((end - start) * 0.12).max(0.02);
    let (start, span) = (start - margin, end - start + 2.0 * margin);
    let mut zoom = Canvas { out: String::new(), start_ms: start, span_ms: span };

    // Where the window is on the main axis, and lines from there to the zoomed view.
    let frame_top = layout.axis + 62.0;
    let (y, axis) = (frame_top + 78.0, frame_top + 134.0);
    let bottom = axis + 32.0;
    let (left, right) = (canvas.x(start), canvas.x(start + span));
    let dashed = r#"stroke-width="1" stroke-dasharray="4,3""#;
    canvas.line((left, layout.axis), (left, layout.axis + 28.0), INK, dashed);
    canvas.line((left, layout.axis + 28.0), (PLOT_LEFT, frame_top), MUTED, dashed);
    canvas.line((right, layout.axis + 28.0), (PLOT_RIGHT, frame_top), MUTED, dashed);
    let _ = writeln!(
        canvas.out,
        r##"<rect x="8" y="{frame_top:.1}" width="{:.1}" height="{:.1}" rx="6" fill="#fafafa" stroke="#c8c8c8"/>"##,
        WIDTH - 16.0,
        bottom - frame_top
    );

    let title = format!(
        "{}'s request, about {} times closer: the loop turn by turn, {} to {} ms",
        seen.request.letter,
        roughly(canvas.span_ms / span),
        tick_text(start, 0.01),
        tick_text(start + span, 0.01)
    );
    zoom.text(20.0, frame_top + 22.0, 13.0, INK, r#"font-weight="bold""#, &title);
    let words = "Each dark stretch is one task, polled: it runs until it awaits something that \
                 is not ready, and the loop waits in epoll again.";
    zoom.text(20.0, frame_top + 40.0, 12.0, MUTED, "", words);

    lane_name(&mut zoom, y + 15.0, "loop", "main thread");
    let mut taken_to = f64::MIN; // where the last label above the lane ends
    for span in &lane.spans {
        if span.end <= zoom.start_ms || span.start >= zoom.end_ms() {
            continue;
        }
        if let Activity::Waiting(call) = &span.activity {
            let (left, width) = zoom.span(span, y, 30.0, WAITING);
            let labels = [format!("waiting in {call}"), call.clone()];
            zoom.label_in(left, width, y + 19.0, &labels, WAITING);
            continue;
        }
        let (left, width) = zoom.span(span, y, 30.0, RUNNING);
        let (task, what) = who_ran(timeline, clients, span);
        let middle = left + width / 2.0;
        let wide = text_width(&task, 12.0).max(text_width(&what, 12.0)) * 1.1;
        // Unnamed (it printed nothing), or no room beside the last label: no label.
        if task.is_empty() || middle - wide / 2.0 < taken_to + 6.0 {
            continue;
        }
        let centred = r#"text-anchor="middle""#;
        zoom.text(middle, y - 7.0, 12.0, INK, r#"text-anchor="middle" font-weight="bold""#, &task);
        zoom.text(middle, y + 45.0, 12.0, INK, centred, &what);
        taken_to = middle + wide / 2.0;
    }
    draw_axis(&mut zoom, y - 20.0, axis);
    canvas.out.push_str(&zoom.out);
    Some(bottom)
}

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
