//! `cargo run -p book-tools --bin timeline -- --chapter 4`: the loop, drawn from a real run.
//!
//! Runs one fixed scenario (`scenario.rs`: A asks for `/sleep?ms=300`, B for `/hello` 50 ms
//! later, C for a file on a slow disk at 100 ms) against a chapter started with `--trace`,
//! reads the trace back (`lanes.rs`), and draws what the loop, the clients and the pool's
//! workers did, on one time axis (`svg.rs`, with `canvas.rs`'s primitives), into
//! `book/src/generated/timeline-chNN.svg`.
//! Side by side, the chapters' pictures show the blocking stretch shrink: chapters 1-3
//! block on `/sleep` and on the disk, 4-5 only on the disk, and from 6 on, on neither.
//! Two chapters change what the loop costs rather than what blocks it, so their pictures
//! show that ([`View`]): chapter 7 runs the scenario beside thousands of idle connections,
//! with `poll` and with `epoll` (`compare.rs`), and chapter 8 shows its tasks
//! (`tasks.rs`).
//!
//! `book/tools/gen-timelines.sh` redraws every chapter's picture for the book. A picture
//! drawn into the book's folder records what it was made from in the book's lock
//! (`book_tools::lock`), so that the book's check fails once its chapter changes and it was
//! not drawn again.

mod canvas;
mod compare;
mod lanes;
mod scenario;
mod svg;
mod tasks;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use suite::chapters::{self, Chapter, CHAPTERS};

use lanes::Timeline;
use scenario::{Run, Setup};

const USAGE: &str = "\
usage: cargo run -p book-tools --bin timeline -- [--chapter N]... [--all] [--out DIR] [--keep-trace]
                                            [--idle N]

Runs chapter N with --trace against three clients (A: /sleep?ms=300 at 0 ms, B: /hello at
50 ms, C: a file on a 200 ms disk at 100 ms) and draws the trace as an SVG timeline,
DIR/timeline-chNN.svg. Without --chapter (or with --all), every chapter. Chapter 7 runs it
twice, with --backend poll and epoll, each time beside idle connections opened first.

  --chapter N   a chapter to draw (may be given more than once)
  --all         every chapter that exists
  --out DIR     where to write the pictures (default: book/src/generated)
  --keep-trace  also write the trace each picture is drawn from, DIR/timeline-chNN.trace
  --idle N      how many idle connections chapter 7's picture opens (default 5000)";

/// How many idle connections chapter 7's picture opens: enough that every `poll` turn
/// takes a visible slice of the loop's lane.
const IDLE: usize = 5_000;

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Arguments {
    chapters: Vec<&'static Chapter>,
    out: PathBuf,
    keep_trace: bool,
    idle: usize,
}

/// What a chapter's picture shows: what that chapter changes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum View {
    /// The three clients, and what served them when.
    Plain,
    /// Chapter 7: the same beside idle connections, once with `poll`, once with `epoll`.
    Backends,
    /// Chapter 8: the same, and when each client's task ran, with B's turns zoomed in.
    Tasks,
}

fn view(chapter: &Chapter) -> View {
    match chapter.number {
        7 => View::Backends,
        8 => View::Tasks,
        _ => View::Plain,
    }
}

fn main() -> ExitCode {
    let asked = match arguments(std::env::args().skip(1).collect()) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("timeline: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(error) = std::fs::create_dir_all(&asked.out) {
        eprintln!("timeline: cannot make {}: {error}", asked.out.display());
        return ExitCode::FAILURE;
    }
    let mut failed = false;
    for &chapter in &asked.chapters {
        match draw_chapter(chapter, &asked) {
            Ok(summary) => println!("timeline: {summary}"),
            Err(error) => {
                eprintln!("timeline: {}: {error}", chapter.name);
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The chapters to draw and where, from the command line; `None` for `--help`.
fn arguments(args: Vec<String>) -> Result<Option<Arguments>, String> {
    let mut chosen = Vec::new();
    let mut out = chapters::workspace_root().join("book/src/generated");
    let mut keep_trace = false;
    let mut idle = IDLE;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => return Ok(None),
            "--all" => chosen.extend(CHAPTERS.iter().filter(|chapter| chapter.is_present())),
            "--chapter" => {
                let value = args.next().ok_or("--chapter needs a number")?;
                let chapter = value
                    .parse()
                    .ok()
                    .and_then(chapters::chapter)
                    .filter(|chapter| chapter.is_present())
                    .ok_or_else(|| format!("no chapter {value}"))?;
                chosen.push(chapter);
            }
            "--out" => out = PathBuf::from(args.next().ok_or("--out needs a folder")?),
            "--keep-trace" => keep_trace = true,
            "--idle" => {
                let value = args.next().ok_or("--idle needs a number")?;
                idle = value.parse().map_err(|_| format!("--idle {value}: not a number"))?;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if chosen.is_empty() {
        chosen.extend(CHAPTERS.iter().filter(|chapter| chapter.is_present()));
    }
    chosen.sort_by_key(|chapter| chapter.number);
    chosen.dedup();
    Ok(Some(Arguments { chapters: chosen, out, keep_trace, idle }))
}

/// Where the chapters are built: `<target>/tmp/suite-bins`, as for the suite's runner and
/// `cargo test`, so all three share the builds. Our program is `<target>/<profile>/timeline`
/// (or `<target>/<profile>/deps/timeline-…` when it is a test).
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().ok();
    let profile = exe.as_deref().and_then(Path::parent).map(|folder| match folder.file_name() {
        Some(name) if name == "deps" => folder.parent().unwrap_or(folder),
        _ => folder,
    });
    let target = profile.and_then(Path::parent).map(Path::to_path_buf);
    target.unwrap_or_else(|| chapters::workspace_root().join("target")).join("tmp/suite-bins")
}

/// Runs the scenario, again if a client connected late (a busy machine does not draw the
/// scenario), up to five times in all.
fn run_on_time(chapter: &'static Chapter, binary: &Path, setup: &Setup) -> Result<Run, String> {
    let mut run = scenario::run(chapter, binary, setup)?;
    for _ in 0..4 {
        if run.lateness() <= scenario::LATE_LIMIT_MS {
            break;
        }
        eprintln!(
            "timeline: {}: a client connected {:.0} ms late; again",
            chapter.name,
            run.lateness()
        );
        run = scenario::run(chapter, binary, setup)?;
    }
    if run.lateness() > scenario::LATE_LIMIT_MS {
        eprintln!("timeline: {}: still late; drawn as it ran", chapter.name);
    }
    Ok(run)
}

/// `A 302 ms, B 0 ms, C 402 ms`: when each client had its answer.
fn answers(run: &Run) -> String {
    let answers: Vec<String> = run
        .clients
        .iter()
        .filter_map(|seen| {
            let (at, _) = seen.answered?;
            Some(format!("{} {:.0} ms", seen.request.letter, at - seen.connected))
        })
        .collect();
    answers.join(", ")
}

/// What to draw of one run.
fn picture<'a>(chapter: &'a Chapter, timeline: &'a Timeline, run: &'a Run) -> svg::Picture<'a> {
    svg::Picture {
        name: chapter.name,
        number: chapter.number,
        timeline,
        clients: &run.clients,
        flags: &run.extra_flags,
        tasks: view(chapter) == View::Tasks,
    }
}

/// Builds, runs and draws one chapter; says what it wrote.
fn draw_chapter(chapter: &'static Chapter, asked: &Arguments) -> Result<String, String> {
    let binary = chapter.binary(&build_dir())?;
    let path = asked.out.join(format!("timeline-ch{:02}.svg", chapter.number));
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    };
    let shown = path.strip_prefix(chapters::workspace_root()).unwrap_or(&path).display();
    let view = view(chapter);
    if view == View::Backends {
        let mut runs = Vec::new();
        for backend in ["poll", "epoll"] {
            let setup = Setup { idle: asked.idle, flags: vec![("--backend", backend.to_string())] };
            let run = run_on_time(chapter, &binary, &setup)?;
            let timeline = align(&run)?;
            if asked.keep_trace {
                let trace = format!("timeline-ch{:02}-{backend}.trace", chapter.number);
                write(&asked.out.join(trace), &run.trace)?;
            }
            runs.push((backend, run, timeline));
        }
        let panels: Vec<compare::Panel> = runs
            .iter()
            .map(|(backend, run, timeline)| compare::Panel {
                backend,
                picture: picture(chapter, timeline, run),
                run,
            })
            .collect();
        write(&path, &compare::draw(chapter.name, chapter.number, &panels))?;
        record(chapter, &asked.out)?;
        let said: Vec<String> = panels
            .iter()
            .map(|panel| {
                let (_, words) = compare::panel_words(panel);
                format!("{}: {} ({words})", panel.backend, answers(panel.run))
            })
            .collect();
        return Ok(format!("{} -> {shown}\n  {}", chapter.name, said.join("\n  ")));
    }
    let run = run_on_time(chapter, &binary, &Setup::default())?;
    let timeline = align(&run)?;
    if asked.keep_trace {
        write(&path.with_extension("trace"), &run.trace)?;
    }
    let picture = picture(chapter, &timeline, &run);
    let drawn = if view == View::Tasks { tasks::draw(&picture) } else { svg::draw(&picture) };
    write(&path, &drawn)?;
    record(chapter, &asked.out)?;
    Ok(format!("{} -> {shown} (answers: {})", chapter.name, answers(&run)))
}

/// Drawn where the book looks: the lock records what the picture was made from, so that
/// the book's check can tell when the chapter changed after it.
fn record(chapter: &Chapter, out: &Path) -> Result<(), String> {
    let root = chapters::workspace_root();
    let book = root.join("book/src/generated");
    if out.canonicalize().ok().is_some_and(|out| book.canonicalize().ok() == Some(out)) {
        let name = format!("timeline-ch{:02}", chapter.number);
        book_tools::lock::piece(&root, &name)
            .and_then(|piece| book_tools::lock::record(&root, &piece))?;
    }
    Ok(())
}

/// Reads the run's trace, on the clients' clock: 0 is when A connected.
///
/// Each connection ties the two clocks: the server accepts it when we have connected, or
/// later if it was busy (or slow to wake, or blocked elsewhere), never sooner. So the
/// difference between the trace's time of an accept and ours of the connect is the offset
/// between the clocks, plus a delay; the smallest of them, over A, B, C and the run's
/// [`Clock`](scenario::Clock) connection if it made one, is the offset.
/// Fails, with the end of the trace, if a client got no answer or the trace lost one.
fn align(run: &Run) -> Result<Timeline, String> {
    let tail = || {
        let lines: Vec<&str> = run.trace.lines().collect();
        format!("; the trace ends:\n{}", lines[lines.len().saturating_sub(15)..].join("\n"))
    };
    for seen in &run.clients {
        match (&seen.answered, &seen.error) {
            (Some((_, 200)), _) => {}
            (_, Some(error)) => {
                return Err(format!("client {}: {error}{}", seen.request.letter, tail()))
            }
            (Some((_, status)), None) => {
                return Err(format!("client {} got status {status}", seen.request.letter))
            }
            (None, None) => return Err(format!("client {} got no answer", seen.request.letter)),
        }
    }
    let mut lines = lanes::parse(&run.trace);
    let accepted = lanes::build(&lines, 0.0).connections;
    let mut ties: Vec<(String, &str, f64)> = run
        .clients
        .iter()
        .map(|seen| (seen.request.letter.to_string(), seen.local.as_str(), seen.connected))
        .collect();
    if let Some(clock) = &run.clock {
        ties.push(("the clock's client".to_string(), &clock.local, clock.connected));
    }
    let mut offset = f64::INFINITY;
    for (name, local, connected) in ties {
        let Some(connection) = accepted.iter().find(|connection| connection.peer == local) else {
            return Err(format!("the trace never accepts {name} ({local}){}", tail()));
        };
        offset = offset.min(connection.accepted - connected);
    }
    for line in &mut lines {
        line.at -= offset;
    }
    let until = lines.last().map_or(0.0, |line| line.at).max(run.read_at);
    Ok(lanes::build(&lines, until))
}

#[cfg(test)]
#[path = "main_tests.rs"]
mod tests;
