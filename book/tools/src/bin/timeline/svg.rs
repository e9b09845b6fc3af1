//! Draws a [`Timeline`] as a self-contained SVG, 880 px wide: the book's code column
//! (`book/theme/code-column.css`), so it shows at its own size, text 12-16 px.
//!
//! Top to bottom: the loop's thread (or chapter 9's loops), one lane per client, the pool's
//! workers; then the time axis, a legend of what is in the picture, and how to redraw it.
//! The lanes and labels depend only on the chapter; only the times vary from run to run.
//! Its pieces (heading, lanes, legend, ending) also draw chapter 7's two panels
//! (`compare.rs`) and chapter 8's tasks (`tasks.rs`).

use std::fmt::Write;

use crate::canvas::*;
use crate::lanes::{Activity, Connection, Lane, Span, Timeline};
use crate::scenario::{Seen, FS_DELAY_MS};
use crate::tasks;

/// What to draw: the chapter, what its trace says, and what its clients saw.
pub struct Picture<'a> {
    /// `ch04-scheduler`
    pub name: &'a str,
    pub number: u8,
    /// In milliseconds from A's connect, like `clients`.
    pub timeline: &'a Timeline,
    pub clients: &'a [Seen],
    /// Flags beyond the scenario's (`--workers 1`), said in the footnote.
    pub flags: &'a [String],
    /// Mark on each client's lane when its task ran (chapter 8, see `tasks.rs`).
    pub tasks: bool,
}

/// The words for a loop's work in this chapter.
fn running_words(number: u8) -> &'static str {
    match number {
        1 => "working",
        2..=7 => "running callbacks",
        _ => "running tasks",
    }
}

/// One loop's lane: waiting at the back, blocked stretches over it, the work on top, and a
/// mark over each timer, which runs too briefly to see otherwise.
fn draw_loop(canvas: &mut Canvas, lane: &Lane, y: f64) {
    const HEIGHT: f64 = 30.0;
    for span in &lane.spans {
        if let Activity::Waiting(call) = &span.activity {
            let (left, width) = canvas.span(span, y, HEIGHT, WAITING);
            canvas.label_in(left, width, y + 19.0, &[format!("waiting in {call}")], WAITING);
        }
    }
    for span in &lane.spans {
        if let Activity::Blocked(why) = &span.activity {
            let (left, width) = canvas.span(span, y, HEIGHT, "url(#blocked)");
            let labels = [format!("blocked: {why}"), why.clone(), "blocked".to_string()];
            canvas.label_in(left, width, y + 19.0, &labels, BLOCKED);
        }
    }
    for span in &lane.spans {
        let fill = match span.activity {
            Activity::Running => RUNNING,
            Activity::Timer => TIMER,
            _ => continue,
        };
        let (left, width) = canvas.span(span, y, HEIGHT, fill);
        if span.activity == Activity::Timer {
            let middle = left + width / 2.0;
            let _ = writeln!(
                canvas.out,
                r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {middle:.1},{:.1}" fill="{TIMER}"/>"#,
                middle - 5.0,
                y - 8.0,
                middle + 5.0,
                y - 8.0,
                y - 1.0
            );
        }
    }
}

/// One pool worker's lane: its jobs, and the disk waits inside them.
fn draw_worker(canvas: &mut Canvas, lane: &Lane, y: f64) {
    const HEIGHT: f64 = 22.0;
    for span in &lane.spans {
        match &span.activity {
            Activity::Job(_) => {
                canvas.span(span, y, HEIGHT, JOB);
            }
            Activity::Disk(why) => {
                let (left, width) = canvas.span(span, y, HEIGHT, "url(#disk)");
                canvas.label_in(left, width, y + 15.5, std::slice::from_ref(why), JOB);
            }
            _ => {}
        }
    }
}

/// "answered after 302 ms", and how long of that it was held up by others (from when its
/// own work, a sleep or the disk, could have been done).
fn answer_words(seen: &Seen) -> (String, Option<f64>) {
    let Some((at, status)) = seen.answered else {
        return (format!("no answer: {}", seen.error.as_deref().unwrap_or("?")), None);
    };
    let took = at - seen.connected;
    let status = if status == 200 { String::new() } else { format!(" (status {status})") };
    let held_up = took - seen.request.own_ms as f64;
    // Tenths of a millisecond for a fast answer, where "0 ms" would look like nothing.
    let took = if took < 10.0 { format!("{took:.1}") } else { format!("{took:.0}") };
    (format!("answered after {took} ms{status}"), (held_up >= 10.0).then_some(held_up))
}

/// One client's lane: connected but not yet accepted, accepted and waiting for its answer,
/// answered; where its task ran (`runs`, in chapter 8); a dashed line where its own work
/// was done, and under the bar in red, how long after that it still waited.
fn draw_client(
    canvas: &mut Canvas, seen: &Seen, connection: Option<&Connection>, runs: &[&Span], y: f64,
) {
    const HEIGHT: f64 = 22.0;
    let start = seen.connected;
    let end = seen.answered.map_or(canvas.span_ms, |(at, _)| at);
    let accepted = connection.map_or(end, |connection| connection.accepted.clamp(start, end));
    if accepted - start >= 1.0 {
        let (left, right) = (canvas.x(start), canvas.x(accepted));
        canvas.rect(left, y, right - left, HEIGHT, NOT_ACCEPTED);
    }
    let (left, right) = (canvas.x(accepted), canvas.x(end));
    canvas.rect(left, y, (right - left).max(2.0), HEIGHT, ACCEPTED);
    tasks::draw_task_runs(canvas, runs, y, HEIGHT);
    let due = canvas.x(start + seen.request.own_ms as f64);
    let (words, held_up) = answer_words(seen);
    if held_up.is_some() {
        let bottom = y + HEIGHT + 1.5;
        canvas.line((due, bottom), (right, bottom), HELD_UP, r#"stroke-width="3""#);
    }
    let dashed = r#"stroke-width="1.5" stroke-dasharray="3,2""#;
    canvas.line((due, y - 4.0), (due, y + HEIGHT + 4.0), INK, dashed);
    // After the answer if there is room, else inside the bar, before the answer.
    let late = held_up.map(|ms| format!(" · held up {ms:.0} ms")).unwrap_or_default();
    let width = text_width(&words, 12.0) + text_width(&late, 12.0) * 1.1;
    // Inside, a patch of the bar's colour under the words keeps the dashed line from
    // crossing them (it still shows above and below the bar).
    let (x, style) = if right + 10.0 + width <= WIDTH - 8.0 {
        (right + 10.0, "")
    } else {
        // Within the bar: the bar's colour elsewhere would say the client was accepted.
        let patch_left = (right - 14.0 - width).max(left);
        let patch_width = (right - 6.0 - patch_left).max(0.0);
        canvas.rect(patch_left, y + 3.0, patch_width, HEIGHT - 6.0, ACCEPTED);
        (right - 10.0, r#"text-anchor="end""#)
    };
    if seen.answered.is_some() {
        canvas.dot(right, y + HEIGHT / 2.0); // over the patch
    }
    let _ = writeln!(
        canvas.out,
        r#"<text x="{x:.1}" y="{:.1}" font-size="12" fill="{INK}" {style} xml:space="preserve">{}<tspan fill="{HELD_UP}" font-weight="bold">{}</tspan></text>"#,
        y + 15.5,
        escape(&words),
        escape(&late)
    );
}

/// One entry of the legend: a swatch (a fill, a line, a dot) and its words.
pub enum Swatch {
    Fill(&'static str),
    /// The dashed line where a client's own work is done.
    Due,
    /// The red line under a client held up.
    HeldUp,
    Answer,
}

/// The legend, in as many rows as it needs; returns the height it took.
fn draw_legend(canvas: &mut Canvas, items: &[(Swatch, String)], top: f64) -> f64 {
    let (mut x, mut y) = (16.0, top);
    for (swatch, words) in items {
        let width = 22.0 + text_width(words, 12.0) + 14.0;
        if x + width > WIDTH - 8.0 {
            (x, y) = (16.0, y + 22.0);
        }
        match swatch {
            Swatch::Fill(fill) => canvas.rect(x, y, 16.0, 14.0, fill),
            Swatch::Due => {
                let dashed = r#"stroke-width="1.5" stroke-dasharray="3,2""#;
                canvas.line((x + 8.0, y - 1.0), (x + 8.0, y + 15.0), INK, dashed);
            }
            Swatch::HeldUp => {
                canvas.line((x, y + 7.0), (x + 16.0, y + 7.0), HELD_UP, r#"stroke-width="3""#)
            }
            Swatch::Answer => canvas.dot(x + 8.0, y + 7.0),
        }
        canvas.text(x + 22.0, y + 12.0, 12.0, INK, "", words);
        x += width;
    }
    y + 14.0 - top
}

/// What the legend lists: what these pictures show (one, or chapter 7's two panels),
/// and nothing else.
pub fn legend_items(pictures: &[&Picture]) -> Vec<(Swatch, String)> {
    let lanes = pictures.iter().flat_map(|picture| {
        let timeline = picture.timeline;
        timeline.loops.iter().chain(&timeline.workers)
    });
    let activities: Vec<&Activity> =
        lanes.flat_map(|lane| lane.spans.iter().map(|span| &span.activity)).collect();
    let mut calls: Vec<&str> = Vec::new();
    for activity in &activities {
        if let Activity::Waiting(call) = activity {
            if !calls.contains(&call.as_str()) {
                calls.push(call);
            }
        }
    }
    let has = |wanted: fn(&Activity) -> bool| activities.iter().any(|activity| wanted(activity));
    let number = pictures.first().map_or(0, |picture| picture.number);
    let mut items = vec![
        (Swatch::Fill(WAITING), format!("idle: waiting in {}", calls.join(" or "))),
        (Swatch::Fill(RUNNING), running_words(number).to_string()),
    ];
    if has(|activity| matches!(activity, Activity::Timer)) {
        items.push((Swatch::Fill(TIMER), "running a timer".into()));
    }
    if has(|activity| matches!(activity, Activity::Blocked(_))) {
        items.push((Swatch::Fill("url(#blocked)"), "blocked: every client waits".into()));
    }
    if pictures.iter().any(|picture| !picture.timeline.workers.is_empty()) {
        items.push((Swatch::Fill(JOB), "a worker runs a job".into()));
        items.push((Swatch::Fill("url(#disk)"), "the worker waits on the disk".into()));
    }
    let clients = || {
        pictures.iter().flat_map(|picture| picture.clients.iter().map(move |seen| (picture, seen)))
    };
    let not_accepted = clients().any(|(picture, seen)| {
        let connection = connection_of(picture.timeline, seen);
        connection.is_some_and(|connection| connection.accepted - seen.connected >= 1.0)
    });
    if not_accepted {
        items.push((Swatch::Fill(NOT_ACCEPTED), "connected, not yet accepted".into()));
    }
    items.push((Swatch::Fill(ACCEPTED), "accepted, waiting for its answer".into()));
    items.push((Swatch::Answer, "answer received".into()));
    items.push((Swatch::Due, "its own work done (sleep, disk)".into()));
    if clients().any(|(_, seen)| answer_words(seen).1.is_some()) {
        items.push((Swatch::HeldUp, "held up: waiting for the server after that".into()));
    }
    items
}

/// The connection the trace followed for this client.
pub fn connection_of<'a>(timeline: &'a Timeline, seen: &Seen) -> Option<&'a Connection> {
    timeline.connections.iter().find(|connection| connection.peer == seen.local)
}

/// The loop that handed a worker its first job: the one that read a request last before it.
fn pool_owner<'a>(timeline: &'a Timeline, worker: &Lane) -> Option<&'a str> {
    let job_start = worker.spans.first()?.start;
    let asked = timeline.connections.iter().filter_map(|connection| {
        let read = connection.request_read.filter(|&read| read <= job_start)?;
        Some((read, connection.thread.as_str()))
    });
    asked.max_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, thread)| thread)
}

/// `main` -> loop 0, `loop-1` -> loop 1.
fn loop_number(thread: &str) -> &str {
    thread.strip_prefix("loop-").unwrap_or("0")
}

/// The lane names of a loop: `loop` and `main thread`.
fn loop_name(number: u8, lane: &Lane, several: bool) -> (String, String) {
    match (number, several) {
        (1, _) => ("server".into(), "main thread".into()),
        (_, false) => ("loop".into(), "main thread".into()),
        (_, true) if lane.thread == "main" => ("loop 0".into(), "main thread".into()),
        (_, true) => {
            (format!("loop {}", loop_number(&lane.thread)), format!("thread {}", lane.thread))
        }
    }
}

/// How long the time axis runs: the scenario's 800 ms at least, and past the last answer.
pub fn span_ms(clients: &[Seen]) -> f64 {
    let answers = clients.iter().filter_map(|seen| seen.answered.map(|(at, _)| at));
    let last = answers.fold(0.0, f64::max);
    MIN_SPAN_MS.max(((last + 60.0) / 100.0).ceil() * 100.0)
}

/// The picture's title, and under it the scenario (and `more` after it); returns where the
/// lanes can start.
pub fn heading(canvas: &mut Canvas, title: &str, clients: &[Seen], more: &str) -> f64 {
    canvas.text(16.0, 28.0, 16.0, INK, r#"font-weight="bold""#, title);
    let asks: Vec<String> = clients
        .iter()
        .map(|seen| {
            format!("{}: {} at {} ms", seen.request.letter, seen.request.line, seen.request.at_ms)
        })
        .collect();
    let scenario = format!("{} · every disk access {FS_DELAY_MS} ms{more}", asks.join(" · "));
    canvas.text(16.0, 48.0, 12.0, MUTED, "", &scenario);
    66.0
}

/// Where [`lanes`] drew each lane (its top edge), and where the axis is.
pub struct Layout {
    pub loops: Vec<f64>,
    pub clients: Vec<f64>,
    pub axis: f64,
}

/// The lanes, top to bottom (loops, clients, workers), and the time axis under them.
pub fn lanes(canvas: &mut Canvas, picture: &Picture, top: f64) -> Layout {
    let timeline = picture.timeline;
    let several_loops = timeline.loops.len() > 1;
    let mut layout = Layout { loops: Vec::new(), clients: Vec::new(), axis: 0.0 };
    let mut y = top + 8.0;
    for lane in &timeline.loops {
        let (name, detail) = loop_name(picture.number, lane, several_loops);
        lane_name(canvas, y + 15.0, &name, &detail);
        draw_loop(canvas, lane, y);
        layout.loops.push(y);
        y += 44.0;
    }
    for seen in picture.clients {
        let connection = connection_of(timeline, seen);
        let name = match connection {
            Some(connection) if several_loops => {
                format!("{} (loop {})", seen.request.letter, loop_number(&connection.thread))
            }
            _ => seen.request.letter.to_string(),
        };
        lane_name(canvas, y + 9.0, &name, seen.request.line);
        let runs = match connection {
            Some(connection) if picture.tasks => tasks::task_runs(timeline, connection),
            _ => Vec::new(),
        };
        draw_client(canvas, seen, connection, &runs, y);
        layout.clients.push(y);
        y += 38.0;
    }
    for lane in &timeline.workers {
        let number = lane.thread.rsplit('-').next().unwrap_or("?");
        // Chapter 9's loops have a pool each, their workers named alike: say whose it is.
        let detail = match pool_owner(timeline, lane) {
            Some(owner) if several_loops => format!("loop {}'s pool", loop_number(owner)),
            _ => format!("thread {}", lane.thread),
        };
        lane_name(canvas, y + 9.0, &format!("pool worker {number}"), &detail);
        draw_worker(canvas, lane, y);
        y += 38.0;
    }
    draw_axis(canvas, top, y);
    layout.axis = y;
    layout
}

/// The legend, then how to redraw the picture (`redraw`, from [`redraw_words`]); returns
/// the picture's height.
pub fn ending(canvas: &mut Canvas, items: &[(Swatch, String)], top: f64, redraw: &str) -> f64 {
    let legend_height = draw_legend(canvas, items, top);
    let footnote = format!("{redraw} Times vary a little from run to run.");
    let footnote_y = top + legend_height + 22.0;
    let more = canvas.paragraph(16.0, footnote_y, WIDTH - 32.0, MUTED, &footnote);
    (footnote_y + more + 14.0).ceil()
}

/// "Redraw it: cargo run ... --chapter 4 (it adds --workers 1)."
pub fn redraw_words(number: u8, flags: &[String]) -> String {
    let flags = match flags {
        [] => String::new(),
        flags => format!(" (it adds {})", flags.join(" ")),
    };
    format!("Redraw it: cargo run -p book-tools --bin timeline -- --chapter {number}{flags}.")
}

/// The whole picture.
pub fn draw(picture: &Picture) -> String {
    let mut canvas = Canvas::new(span_ms(picture.clients));
    let title = format!(
        "Chapter {}, {}: three clients, drawn from its --trace",
        picture.number, picture.name
    );
    let top = heading(&mut canvas, &title, picture.clients, "");
    let layout = lanes(&mut canvas, picture, top);
    let redraw = redraw_words(picture.number, picture.flags);
    let height = ending(&mut canvas, &legend_items(&[picture]), layout.axis + 36.0, &redraw);
    document(&description(picture.name), height, &canvas.out)
}

/// What the picture is of, for its `<title>`: what a screen reader says.
pub fn description(name: &str) -> String {
    format!(
        "Timeline of {name}: A asks for /sleep?ms=300, B for /hello 50 ms later, C for a file \
         on a slow disk at 100 ms"
    )
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
