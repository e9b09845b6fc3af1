//! Chapter 7's picture: the three clients twice, each time beside thousands of idle
//! connections: once with `--backend poll`, once with `--backend epoll`, on one time scale.
//!
//! `poll` keeps no list: on every turn our code builds the list of every socket, hands it to
//! the kernel, and reads the answers back (the dark stretches of the loop's lane, from the
//! trace), and the kernel walks it, once when the call begins and again when it wakes. That
//! walk happens inside the call, where the trace cannot see it, so it is drawn from the
//! run's shortest `poll` call (one that found a socket ready at once: a walk and nothing
//! else), at each end of every wait. `epoll` keeps the list in the kernel: a turn hands it
//! nothing, and costs what it costs with no idle connections at all.
//! What the loop's thread really spent on a CPU (`schedstat`) is said under each panel.

use crate::canvas::*;
use crate::lanes::{Activity, Lane, Span};
use crate::scenario::Run;
use crate::svg::{self, Picture, Swatch};

/// One panel: a backend, and the run made with it.
pub struct Panel<'a> {
    /// `poll` or `epoll`, as `--backend` takes it.
    pub backend: &'a str,
    pub picture: Picture<'a>,
    pub run: &'a Run,
}

/// What a loop's turns cost, read from its lane between A's connect and `until`.
#[derive(Clone, Debug, PartialEq)]
pub struct Turns {
    /// Turns in that time.
    pub count: usize,
    /// The median time our code worked in a turn: from a wait's return to the next wait.
    pub our_code_ms: f64,
    /// The shortest wait that ended in that time.
    pub shortest_wait_ms: f64,
}

/// Reads the turns of `lane` between 0 (A's connect) and `until`: a turn is the work
/// between two waits. `None` if there was no turn.
pub fn turns(lane: &Lane, until: f64) -> Option<Turns> {
    let waits: Vec<&Span> = lane
        .spans
        .iter()
        .filter(|span| span.start >= 0.0 && span.start < until)
        .filter(|span| matches!(span.activity, Activity::Waiting(_)))
        .collect();
    let mut work: Vec<f64> = waits
        .windows(2)
        .map(|pair| {
            let between = lane.spans.iter().filter(|span| {
                span.start >= pair[0].end
                    && span.end <= pair[1].start
                    && !matches!(span.activity, Activity::Waiting(_))
            });
            between.map(|span| span.end - span.start).sum()
        })
        .collect();
    work.sort_by(f64::total_cmp);
    // The last wait goes on past the picture: how long it takes is not known.
    let ended = waits.iter().filter(|span| span.end < until);
    let shortest = ended.map(|span| span.end - span.start).fold(f64::INFINITY, f64::min);
    let our_code_ms = *work.get(work.len() / 2)?;
    Some(Turns { count: work.len(), our_code_ms, shortest_wait_ms: shortest })
}

/// How many sockets `poll` was handed at most (`poll: waiting on 5004 fds`); `None` for a
/// trace without `poll` (epoll's).
pub fn most_polled(trace: &str) -> Option<u64> {
    let counts = trace.lines().filter_map(|line| {
        let rest = &line[line.find("poll: waiting on ")? + "poll: waiting on ".len()..];
        rest.split(' ').next()?.parse::<u64>().ok()
    });
    counts.max()
}

/// Over each wait of a `poll` loop, the kernel walking the list: `walk_ms` at its start
/// and again at its end (the whole wait, if it is not longer than two walks).
fn draw_walks(canvas: &mut Canvas, lane: &Lane, walk_ms: f64, y: f64) {
    let last = lane.spans.last().map(|span| span.start);
    for span in &lane.spans {
        let Activity::Waiting(call) = &span.activity else { continue };
        if call != "poll" {
            continue;
        }
        let walk = |start: f64, end: f64| Span { start, end, activity: Activity::Running };
        let ended = Some(span.start) != last; // the last wait goes on past the picture
        if ended && span.end - span.start <= 2.0 * walk_ms {
            canvas.span(&walk(span.start, span.end), y, 30.0, WALKING);
            continue;
        }
        canvas.span(&walk(span.start, span.start + walk_ms), y, 30.0, WALKING);
        if ended {
            canvas.span(&walk(span.end - walk_ms, span.end), y, 30.0, WALKING);
        }
    }
}

/// `0.12`, `1.4`, `16`: milliseconds to two figures or so.
pub fn ms(value: f64) -> String {
    if value < 1.0 {
        format!("{value:.2}")
    } else if value < 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

/// `5000` -> `5,000`.
fn thousands(count: u64) -> String {
    let digits = count.to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// What a panel's words say of its run: a heading, and the measured costs.
pub fn panel_words(panel: &Panel) -> (String, String) {
    let run = panel.run;
    let lane = panel.picture.timeline.loops.first();
    let turns = lane.and_then(|lane| turns(lane, run.read_at));
    let our_code = turns.as_ref().map(|turns| ms(turns.our_code_ms)).unwrap_or("?".into());
    let cpu = match run.loop_cpu_ms {
        Some(cpu) => format!(
            " The loop's thread was on a CPU for {} ms of these {:.1} s.",
            ms(cpu),
            run.read_at / 1000.0
        ),
        None => String::new(),
    };
    match most_polled(&run.trace) {
        Some(sockets) => {
            let walk = turns.as_ref().map(|turns| ms(turns.shortest_wait_ms)).unwrap_or("?".into());
            (
                format!(
                    "--backend {}: every turn hands the kernel the list of all {} sockets",
                    panel.backend,
                    thousands(sockets)
                ),
                format!(
                    "A turn takes {our_code} ms in our code (dark: building the list and reading \
                     it back) and about {walk} ms in the kernel at each end of a wait (hatched: \
                     walking the list; the shortest poll call of this run).{cpu}"
                ),
            )
        }
        None => (
            format!(
                "--backend {}: the kernel keeps the list, and a turn hands it nothing",
                panel.backend
            ),
            format!("A turn takes {our_code} ms in our code.{cpu}"),
        ),
    }
}

/// The whole picture: a panel per backend, one legend.
pub fn draw(name: &str, number: u8, panels: &[Panel]) -> String {
    let clients = panels.iter().flat_map(|panel| panel.picture.clients.iter().cloned());
    let span_ms = svg::span_ms(&clients.collect::<Vec<_>>());
    let mut canvas = Canvas::new(span_ms);
    let idle = panels.first().map_or(0, |panel| panel.run.idle) as u64;
    let title = format!(
        "Chapter {number}, {name}: three clients beside {} idle ones, poll against epoll",
        thousands(idle)
    );
    let first_clients = panels.first().map_or(&[][..], |panel| panel.picture.clients);
    let mut top = svg::heading(&mut canvas, &title, first_clients, "") + 6.0;
    for panel in panels {
        let (heading, words) = panel_words(panel);
        canvas.text(16.0, top + 12.0, 13.0, INK, r#"font-weight="bold""#, &heading);
        let more = canvas.paragraph(16.0, top + 30.0, WIDTH - 32.0, MUTED, &words);
        let layout = svg::lanes(&mut canvas, &panel.picture, top + 36.0 + more);
        let walk = panel.picture.timeline.loops.first().and_then(|lane| {
            let turns = turns(lane, panel.run.read_at)?;
            Some((lane, turns.shortest_wait_ms))
        });
        if let (Some((lane, walk_ms)), Some(y)) = (walk, layout.loops.first()) {
            if most_polled(&panel.run.trace).is_some() {
                draw_walks(&mut canvas, lane, walk_ms, *y);
            }
        }
        top = layout.axis + 44.0;
    }
    let pictures: Vec<&Picture> = panels.iter().map(|panel| &panel.picture).collect();
    let mut items = svg::legend_items(&pictures);
    items.insert(2, (Swatch::Fill(WALKING), "in poll: the kernel walks the list".into()));
    let redraw = format!(
        "Redraw it: cargo run -p book-tools --bin timeline -- --chapter {number} (it opens the \
         idle connections first, or --idle N, and adds {}, then --backend poll or epoll). A debug \
         build, as cargo run makes it.",
        panels
            .first()
            .map(|panel| {
                let flags =
                    panel.run.extra_flags.iter().filter(|flag| !flag.starts_with("--backend"));
                flags.cloned().collect::<Vec<_>>().join(" ")
            })
            .unwrap_or_default()
    );
    let height = svg::ending(&mut canvas, &items, top - 8.0, &redraw);
    document(&svg::description(name), height, &canvas.out)
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
