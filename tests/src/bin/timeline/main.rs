//! `cargo run -p suite --bin timeline -- --chapter 4`: the loop, drawn from a real run.
//!
//! Runs one fixed scenario (`scenario.rs`: A asks for `/sleep?ms=300`, B for `/hello` 50 ms
//! later, C for a file on a slow disk at 100 ms) against a chapter started with `--trace`,
//! reads the trace back (`lanes.rs`), and draws what the loop, the clients and the pool's
//! workers did, on one time axis (`svg.rs`, with `canvas.rs`'s primitives), into
//! `book/src/generated/timeline-chNN.svg`.
//! Side by side, the chapters' pictures show the blocking stretch shrink: chapters 1-3
//! block on `/sleep` and on the disk, 4-5 only on the disk, and from 6 on, on neither.
//!
//! `book/tools/gen-timelines.sh` redraws every chapter's picture for the book. A picture
//! drawn into the book's folder records what it was made from in the book's lock
//! (`suite::lock`), so that the book's check fails once its chapter changes and it was
//! not drawn again.

mod canvas;
mod lanes;
mod scenario;
mod svg;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use suite::chapters::{self, Chapter, CHAPTERS};

use lanes::Timeline;
use scenario::Run;

const USAGE: &str = "\
usage: cargo run -p suite --bin timeline -- [--chapter N]... [--all] [--out DIR] [--keep-trace]

Runs chapter N with --trace against three clients (A: /sleep?ms=300 at 0 ms, B: /hello at
50 ms, C: a file on a 200 ms disk at 100 ms) and draws the trace as an SVG timeline,
DIR/timeline-chNN.svg. Without --chapter (or with --all), every chapter.

  --chapter N   a chapter to draw (may be given more than once)
  --all         every chapter that exists
  --out DIR     where to write the pictures (default: book/src/generated)
  --keep-trace  also write the trace each picture is drawn from, DIR/timeline-chNN.trace";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Arguments {
    chapters: Vec<&'static Chapter>,
    out: PathBuf,
    keep_trace: bool,
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
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if chosen.is_empty() {
        chosen.extend(CHAPTERS.iter().filter(|chapter| chapter.is_present()));
    }
    chosen.sort_by_key(|chapter| chapter.number);
    chosen.dedup();
    Ok(Some(Arguments { chapters: chosen, out, keep_trace }))
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

/// Builds, runs and draws one chapter; says what it wrote.
fn draw_chapter(chapter: &'static Chapter, asked: &Arguments) -> Result<String, String> {
    let binary = chapter.binary(&build_dir())?;
    // A client that connects late (a busy machine) does not draw the scenario: try again.
    let mut run = scenario::run(chapter, &binary)?;
    for _ in 0..4 {
        if run.lateness() <= scenario::LATE_LIMIT_MS {
            break;
        }
        eprintln!(
            "timeline: {}: a client connected {:.0} ms late; again",
            chapter.name,
            run.lateness()
        );
        run = scenario::run(chapter, &binary)?;
    }
    if run.lateness() > scenario::LATE_LIMIT_MS {
        eprintln!("timeline: {}: still late; drawn as it ran", chapter.name);
    }
    let timeline = align(&run)?;
    let picture = svg::Picture {
        name: chapter.name,
        number: chapter.number,
        timeline: &timeline,
        clients: &run.clients,
        flags: &run.extra_flags,
    };
    let path = asked.out.join(format!("timeline-ch{:02}.svg", chapter.number));
    if asked.keep_trace {
        let trace = path.with_extension("trace");
        std::fs::write(&trace, &run.trace)
            .map_err(|error| format!("cannot write {}: {error}", trace.display()))?;
    }
    std::fs::write(&path, svg::draw(&picture))
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    // Drawn where the book looks: the lock records what the picture was made from, so that
    // the book's check can tell when the chapter changed after it.
    let root = chapters::workspace_root();
    let book = root.join("book/src/generated");
    if asked.out.canonicalize().ok().is_some_and(|out| book.canonicalize().ok() == Some(out)) {
        let name = format!("timeline-ch{:02}", chapter.number);
        suite::lock::piece(&root, &name).and_then(|piece| suite::lock::record(&root, &piece))?;
    }
    let answers: Vec<String> = run
        .clients
        .iter()
        .filter_map(|seen| {
            let (at, _) = seen.answered?;
            Some(format!("{} {:.0} ms", seen.request.letter, at - seen.connected))
        })
        .collect();
    let shown = path.strip_prefix(chapters::workspace_root()).unwrap_or(&path);
    Ok(format!("{} -> {} (answers: {})", chapter.name, shown.display(), answers.join(", ")))
}

/// Reads the run's trace, on the clients' clock: 0 is when A connected. The server, idle
/// until then, accepts A at once, so A's `accept` line in the trace is that moment too.
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
    let first = run.clients.first().ok_or("no clients")?;
    let accepted =
        lanes::build(&lines, 0.0).connections.into_iter().find(|c| c.peer == first.local);
    let accepted =
        accepted.ok_or_else(|| format!("the trace never accepts A ({}){}", first.local, tail()))?;
    let offset = accepted.accepted - first.connected;
    for line in &mut lines {
        line.at -= offset;
    }
    let until = lines.last().map_or(0.0, |line| line.at).max(run.read_at);
    let timeline = lanes::build(&lines, until);
    for seen in &run.clients {
        if !timeline.connections.iter().any(|connection| connection.peer == seen.local) {
            return Err(format!(
                "the trace never accepts {} ({}){}",
                seen.request.letter,
                seen.local,
                tail()
            ));
        }
    }
    Ok(timeline)
}

#[cfg(test)]
#[path = "main_tests.rs"]
mod tests;
