//! The suite's runner: the same probes as `cargo test`, as a table, and also against a
//! server the suite did not start.
//!
//! ```text
//! cargo run -p suite                                   # every chapter present
//! cargo run -p suite -- --chapter 2                    # one chapter
//! cargo run -p suite -- --addr 127.0.0.1:8080 --chapter 2
//! cargo run -p suite -- --capability-table             # the book's appendix table
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::exit;
use std::sync::Mutex;
use std::thread;

use suite::chapters::{self, Chapter, CHAPTERS};
use suite::harness::{self, Verdict};
use suite::probes::{Launch, Probe, PROBES};

const USAGE: &str = "\
usage: suite [--chapter N] [--addr HOST:PORT] [--only NAME] [--capability-table]

  (no flags)          start every chapter that exists and run every probe against it
  --chapter N         only chapter N (the NN of chapters/NN-name)
  --addr HOST:PORT    probe a server you started yourself; --chapter says which chapter's
                      expectations to hold it to. Probes that must start the server
                      themselves (special flags, signals) are skipped.
  --only NAME         only the probes whose name contains NAME
  --capability-table  print the capability table (Markdown) for the book";

/// How many probes run at once against servers we start (each has its own server).
const PARALLEL: usize = 8;

struct Args {
    chapter: Option<&'static Chapter>,
    address: Option<SocketAddr>,
    only: Option<String>,
    table: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { chapter: None, address: None, only: None, table: false };
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let mut value = || words.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--chapter" => {
                let text = value()?;
                let number: u8 = text.parse().map_err(|_| format!("bad chapter {text}"))?;
                args.chapter =
                    Some(chapters::chapter(number).ok_or(format!("no chapter {number}"))?);
            }
            "--addr" => {
                let text = value()?;
                args.address = Some(text.parse().map_err(|_| format!("bad address {text}"))?);
            }
            "--only" => args.only = Some(value()?),
            "--capability-table" => args.table = true,
            "--help" | "-h" => {
                println!("{USAGE}");
                exit(0);
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.address.is_some() && args.chapter.is_none() {
        return Err("--addr needs --chapter N: which chapter's expectations to apply".into());
    }
    Ok(args)
}

fn main() {
    let args = parse_args().unwrap_or_else(|message| {
        eprintln!("suite: {message}\n{USAGE}");
        exit(2);
    });
    if args.table {
        print!("{}", suite::manifest::capability_table());
        return;
    }
    let probes: Vec<&'static Probe> = PROBES
        .iter()
        .filter(|probe| args.only.as_ref().is_none_or(|only| probe.name.contains(only.as_str())))
        .collect();

    let verdicts = match args.address {
        // Someone else's server: one probe at a time, since a probe that holds a
        // connection open would disturb the others on a one-at-a-time chapter.
        Some(address) => {
            let chapter = args.chapter.expect("checked in parse_args");
            eprintln!("suite: probing {} at {address}, one probe at a time", chapter.name);
            probes
                .iter()
                .map(|probe| {
                    let verdict = harness::run(chapter, probe, Launch::External { address });
                    (chapter, *probe, verdict)
                })
                .collect()
        }
        None => run_own(&args, &probes),
    };
    summarize(&verdicts);
}

/// Starts each chapter's servers ourselves, probes in parallel.
fn run_own(
    args: &Args, probes: &[&'static Probe],
) -> Vec<(&'static Chapter, &'static Probe, Verdict)> {
    let chapters: Vec<&'static Chapter> = match args.chapter {
        Some(chapter) => vec![chapter],
        None => CHAPTERS.iter().collect(),
    };
    let build_dir = build_dir();
    let mut jobs = Vec::new();
    let mut broken = Vec::new();
    for chapter in chapters {
        if !chapter.is_present() {
            println!(
                "{}: skipped, chapters/{} does not exist yet",
                chapter.name, chapter.directory
            );
            continue;
        }
        match chapter.binary(&build_dir) {
            Ok(binary) => {
                eprintln!("suite: {} probes on {}", probes.len(), chapter.name);
                jobs.extend(probes.iter().map(|probe| (chapter, *probe, binary.clone())))
            }
            // Every probe of a chapter that does not build fails; the others go on.
            Err(error) => {
                eprintln!("suite: cannot build {}: {error}", chapter.name);
                let failure = || Verdict::Fail(format!("cannot build {}", chapter.name));
                broken.extend(probes.iter().map(|probe| (chapter, *probe, failure())));
            }
        }
    }
    // A few workers take jobs off one shared list until it is empty.
    let jobs = Mutex::new(jobs.into_iter());
    let verdicts = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| loop {
                let job = jobs.lock().unwrap_or_else(|poison| poison.into_inner()).next();
                let Some((chapter, probe, binary)) = job else {
                    break;
                };
                let verdict = harness::run(chapter, probe, Launch::Start { binary });
                let mut verdicts = verdicts.lock().unwrap_or_else(|poison| poison.into_inner());
                verdicts.push((chapter, probe, verdict));
            });
        }
    });
    let mut verdicts = verdicts.into_inner().unwrap_or_else(|poison| poison.into_inner());
    verdicts.extend(broken);
    // Back into the table's order: by chapter, then as PROBES lists them.
    let position = |probe: &Probe| PROBES.iter().position(|p| p.name == probe.name);
    verdicts.sort_by_key(|(chapter, probe, _)| (chapter.number, position(probe)));
    verdicts
}

/// `<target>/tmp/suite-bins`: the same place `cargo test` builds the chapters, so the two
/// share their builds. Our program sits in `<target>/<profile>/`.
fn build_dir() -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| chapters::workspace_root().join("target"));
    target.join("tmp").join("suite-bins")
}

/// One row of the table.
fn report(chapter: &Chapter, probe: &Probe, verdict: &Verdict) {
    let label = match verdict {
        Verdict::Pass => "pass".to_string(),
        Verdict::ExpectedLimitation { why, seen } => {
            format!("expected limitation: {why}\n{:46}seen: {seen}", "")
        }
        Verdict::Fail(what) => format!("FAIL: {what}"),
        Verdict::Skipped(why) => format!("skipped: {why}"),
    };
    println!("{:<17} {:<27} {label}", chapter.name, probe.name);
}

fn summarize(verdicts: &[(&Chapter, &Probe, Verdict)]) {
    for (chapter, probe, verdict) in verdicts {
        report(chapter, probe, verdict);
    }
    let count =
        |wanted: fn(&Verdict) -> bool| verdicts.iter().filter(|(_, _, v)| wanted(v)).count();
    let pass = count(|v| matches!(v, Verdict::Pass));
    let limited = count(|v| matches!(v, Verdict::ExpectedLimitation { .. }));
    let fail = count(|v| matches!(v, Verdict::Fail(_)));
    let skipped = count(|v| matches!(v, Verdict::Skipped(_)));
    println!(
        "\n{} checks: {pass} pass, {limited} expected limitations, {fail} fail, {skipped} skipped",
        verdicts.len()
    );
    if fail > 0 {
        println!("\nfailures:");
        for (chapter, probe, verdict) in verdicts {
            if matches!(verdict, Verdict::Fail(_)) {
                println!("  {}", harness::describe(chapter, probe, verdict));
            }
        }
        exit(1);
    }
}
