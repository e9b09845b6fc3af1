//! The suite's runner: the same probes as `cargo test`, as a table, and also against a
//! server that is not one of ours.
//!
//! ```text
//! cargo run -p suite                                   # every chapter present
//! cargo run -p suite -- --chapter 2                    # one chapter
//! cargo run -p suite -- --command 'python3 my_server.py' --chapter 3
//! cargo run -p suite -- --addr 127.0.0.1:8080 --chapter 2
//! cargo run -p suite -- --sketch --chapter 4                  # chapter 4's sketch, on its rows
//! cargo run -p suite -- --command ./server --chapter 4 --sketch   # a reader's, on those rows
//! cargo run -p suite -- --capability-table             # the book's appendix table
//! cargo run -p suite -- --flags-table                  # the flags, for the book
//! cargo run -p suite -- --checklist                    # every rule, for the book
//! cargo run -p suite -- --facts                        # counts and lists the book states
//! cargo run -p suite -- --extras-table                 # shared's extra flags, by chapter
//! ```
//!
//! The exit status is 1 when any check fails, so a course can grade a reader's server
//! with `--command` (and `--only`, for one probe at a time).

use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::exit;
use std::sync::Mutex;
use std::thread;

use suite::chapters::{self, Chapter, CHAPTERS};
use suite::harness::{self, Failure, Verdict};
use suite::probes::{Launch, Probe, PROBES};
use suite::report::{self, Checked};
use suite::server::{self, Options, Program, Server, FIRST_START_TIMEOUT};

const USAGE: &str = "\
usage: suite [--chapter N] [--command CMD | --addr HOST:PORT] [--only NAME] [--sketch]
       suite --capability-table | --flags-table | --checklist | --facts | --extras-table

  (no flags)          start every chapter that exists and run every probe against it
  --chapter N         only chapter N (the NN of chapters/NN-name)
  --command CMD       your own server, in any language: every probe starts it as it starts
                      ours, with the contract's flags appended (sh -c 'exec CMD \"$@\"'
                      with --host 127.0.0.1 --port 0, --root DIR, ...; --flags-table
                      lists them all), and none is skipped. CMD is one command:
                      'python3 my_server.py', './server'. --chapter N says which
                      chapter's expectations to hold it to. Its Server header may say
                      anything.
  --addr HOST:PORT    probe a server you started yourself; --chapter says which chapter's
                      expectations to hold it to. Probes that must start the server
                      themselves (special flags, signals) are skipped.
  --only NAME         only the probes whose name contains NAME
  --sketch            only the checks chapter N's sketch is graded on (its chapter's new
                      rows: --capability-table lists them). Without --command or --addr,
                      the suite builds chapter N's own sketch and grades it, as it grades a
                      reader's server (chapters/NN-name/examples/chNN-sketch.rs)
  --capability-table  print the capability table (Markdown) for the book
  --flags-table       print the flags a server must accept, by chapter (Markdown)
  --checklist         print every rule the checks hold a server to, by chapter (Markdown)
  --facts             print the counts and lists the book's prose states (generated/facts.md)
  --extras-table      print shared's extra flags and the chapters that have them (Markdown)

The report says a cause shared by several checks once, at the top, and ends with the
summary line. The exit status is 1 if any check fails, 0 otherwise.";

/// How many probes run at once against servers we start (each has its own server).
const PARALLEL: usize = 8;

struct Args {
    chapter: Option<&'static Chapter>,
    address: Option<SocketAddr>,
    command: Option<String>,
    only: Option<String>,
    sketch: bool,
    table: bool,
    flags_table: bool,
    checklist: bool,
    facts: bool,
    extras_table: bool,
}

fn parse_args(words: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        chapter: None,
        address: None,
        command: None,
        only: None,
        sketch: false,
        table: false,
        flags_table: false,
        checklist: false,
        facts: false,
        extras_table: false,
    };
    let mut words = words;
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
            "--command" => {
                let text = value()?;
                if text.trim().is_empty() {
                    return Err("--command needs the command that starts your server".into());
                }
                args.command = Some(text);
            }
            "--only" => args.only = Some(value()?),
            "--sketch" => args.sketch = true,
            "--capability-table" => args.table = true,
            "--flags-table" => args.flags_table = true,
            "--checklist" => args.checklist = true,
            "--facts" => args.facts = true,
            "--extras-table" => args.extras_table = true,
            "--help" | "-h" => {
                println!("{USAGE}");
                exit(0);
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.address.is_some() && args.command.is_some() {
        return Err("--addr or --command: a server you started, or one the suite starts".into());
    }
    if args.address.is_some() && args.chapter.is_none() {
        return Err("--addr needs --chapter N: which chapter's expectations to apply".into());
    }
    if args.command.is_some() && args.chapter.is_none() {
        return Err("--command needs --chapter N: which chapter's expectations to apply".into());
    }
    if args.sketch && args.chapter.is_none() {
        return Err("--sketch needs --chapter N: whose sketch's checks to run".into());
    }
    Ok(args)
}

fn main() {
    let args = parse_args(std::env::args().skip(1)).unwrap_or_else(|message| {
        eprintln!("suite: {message}\n{USAGE}");
        exit(2);
    });
    if args.facts {
        print!("{}", suite::facts::facts());
        return;
    }
    if args.extras_table {
        print!("{}", suite::facts::extras_table());
        return;
    }
    if args.table {
        print!("{}", suite::manifest::capability_table());
        return;
    }
    if args.flags_table {
        print!("{}", suite::flags::flags_table());
        return;
    }
    if args.checklist {
        print!("{}", suite::probes::checklist::checklist());
        return;
    }
    let probes: Vec<&'static Probe> = checks(&args)
        .into_iter()
        .filter(|probe| args.only.as_ref().is_none_or(|only| probe.name.contains(only.as_str())))
        .collect();
    if probes.is_empty() {
        let only = args.only.unwrap_or_default();
        eprintln!(
            "suite: no probe's name contains {only:?}; `cargo test -p suite -- --list` lists them"
        );
        exit(2);
    }

    let verdicts = match (args.address, &args.command) {
        // Someone else's server: one probe at a time, since a probe that holds a
        // connection open would disturb the others on a one-at-a-time chapter.
        (Some(address), _) => {
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
        (None, Some(command)) => {
            run_command(args.chapter.expect("checked in parse_args"), command, &probes)
        }
        (None, None) if args.sketch => {
            let chapter = args.chapter.expect("checked in parse_args");
            run_sketch(chapter, &probes)
        }
        (None, None) => run_own(&args, &probes),
    };
    // A reader's server is named by what the reader gave: its command (in backquotes, as
    // the messages name it, so that it stands apart from the check's name; a long one by
    // its program's file name), or its address.
    let sketch = (args.sketch && args.command.is_none() && args.address.is_none())
        .then(|| args.chapter.map(|chapter| format!("`{}`", chapter.sketch_name())))
        .flatten();
    let command = args.command.as_deref().map(report::command_column).or(sketch);
    let readers = command.or(args.address.map(|address| address.to_string()));
    summarize(&verdicts, readers.as_deref());
}

/// The checks to run: every probe, or (`--sketch`) those chapter N's sketch is graded on.
fn checks(args: &Args) -> Vec<&'static Probe> {
    match (args.sketch, args.chapter) {
        (true, Some(chapter)) => suite::manifest::sketch(chapter.number)
            .map(|sketch| sketch.checks())
            .unwrap_or_default(),
        _ => PROBES.iter().collect(),
    }
}

/// Chapter `chapter`'s own sketch, built, and graded on `probes` as a reader's server is.
fn run_sketch(chapter: &'static Chapter, probes: &[&'static Probe]) -> Vec<Checked> {
    if !chapter.has_sketch() {
        println!(
            "{}'s sketch: skipped, {} does not exist yet",
            chapter.name,
            chapter.sketch_path().display()
        );
        println!("\n0 checks: there is no sketch to grade");
        exit(1);
    }
    let binary = chapter.sketch_binary(&build_dir()).unwrap_or_else(|error| {
        println!("cannot build {}: {error}", chapter.sketch_name());
        exit(1);
    });
    stop_servers_on_interrupt();
    eprintln!(
        "suite: {} on {}, held to {}'s expectations",
        report::plural(probes.len(), "probe"),
        chapter.sketch_name(),
        chapter.name
    );
    let program = harness::sketch_program(&binary);
    run_parallel(probes.iter().map(|probe| (chapter, *probe, program.clone())).collect())
}

/// A reader's server, started for every probe as the suite starts ours.
fn run_command(chapter: &'static Chapter, line: &str, probes: &[&'static Probe]) -> Vec<Checked> {
    stop_servers_on_interrupt();
    let program = Program::Shell(line.to_string());
    // Once first, with time to compile: a command that cannot start would fail every
    // probe the same way, and one line says it better than fifty.
    eprintln!(
        "suite: starting `{line}` once, to see that it starts (it has {} s to print its \
         first line)",
        FIRST_START_TIMEOUT.as_secs()
    );
    if let Err(message) =
        Server::start_within(chapter, &program, &Options::default(), FIRST_START_TIMEOUT)
    {
        println!("{message}");
        println!("\n0 checks: `{line}` did not start, so no probe ran");
        exit(1);
    }
    eprintln!(
        "suite: {} on `{line}`, held to {}'s expectations",
        report::plural(probes.len(), "probe"),
        chapter.name
    );
    let jobs = probes.iter().map(|probe| (chapter, *probe, program.clone())).collect();
    run_parallel(jobs)
}

/// On Ctrl-C (or SIGTERM) during a `--command` run, kills every server the suite started,
/// then ends the run. A reader's server runs in a process group of its own (so that all it
/// starts can be killed with it), and the terminal's Ctrl-C reaches only ours: without
/// this, it would outlive the suite.
fn stop_servers_on_interrupt() {
    // The handler (the chapters' own, from `shared`) writes a byte to a socket for each
    // signal. A thread of ours waits for that byte, and then has all the time it needs.
    let signals = shared::signals::Signals::install();
    let Ok(watched) = signals.as_fd().try_clone_to_owned() else {
        eprintln!("suite: cannot watch for Ctrl-C; if you press it, servers may be left running");
        return;
    };
    let mut watched = UnixStream::from(watched);
    // Only this thread reads the socket, so it may block.
    let _ = watched.set_nonblocking(false);
    thread::spawn(move || {
        if watched.read(&mut [0]).is_ok() {
            let stopped = server::kill_every_group();
            eprintln!("\nsuite: interrupted; killed the {stopped} server(s) still running");
            exit(130);
        }
    });
}

/// Starts each chapter's servers ourselves, probes in parallel.
fn run_own(args: &Args, probes: &[&'static Probe]) -> Vec<Checked> {
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
                eprintln!("suite: {} on {}", report::plural(probes.len(), "probe"), chapter.name);
                let program = Program::Binary(binary);
                jobs.extend(probes.iter().map(|probe| (chapter, *probe, program.clone())))
            }
            // Every probe of a chapter that does not build fails; the others go on.
            Err(error) => {
                eprintln!("suite: cannot build {}: {error}", chapter.name);
                let failure =
                    || Verdict::Fail(Failure::Broken, format!("cannot build {}", chapter.name));
                broken.extend(probes.iter().map(|probe| (chapter, *probe, failure())));
            }
        }
    }
    let mut verdicts = run_parallel(jobs);
    verdicts.extend(broken);
    sort(&mut verdicts);
    verdicts
}

/// Runs every job, [`PARALLEL`] at a time, each probe starting servers of its own.
fn run_parallel(jobs: Vec<(&'static Chapter, &'static Probe, Program)>) -> Vec<Checked> {
    // A few workers take jobs off one shared list until it is empty.
    let jobs = Mutex::new(jobs.into_iter());
    let verdicts = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| loop {
                let job = jobs.lock().unwrap_or_else(|poison| poison.into_inner()).next();
                let Some((chapter, probe, program)) = job else {
                    break;
                };
                let verdict = harness::run(chapter, probe, Launch::Start { program });
                let mut verdicts = verdicts.lock().unwrap_or_else(|poison| poison.into_inner());
                verdicts.push((chapter, probe, verdict));
            });
        }
    });
    let mut verdicts = verdicts.into_inner().unwrap_or_else(|poison| poison.into_inner());
    sort(&mut verdicts);
    verdicts
}

/// Back into the table's order: by chapter, then as PROBES lists them.
fn sort(verdicts: &mut [Checked]) {
    let position = |probe: &Probe| PROBES.iter().position(|p| p.name == probe.name);
    verdicts.sort_by_key(|(chapter, probe, _)| (chapter.number, position(probe)));
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

/// Prints the report (its last line is the summary), and exits 1 if any check failed.
/// `readers` names a reader's server, as the report's lines do (see `report::render`).
fn summarize(verdicts: &[Checked], readers: Option<&str>) {
    print!("{}", report::render(verdicts, readers));
    if verdicts.iter().any(|(.., verdict)| matches!(verdict, Verdict::Fail(..))) {
        exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<Args, String> {
        parse_args(words.iter().map(|word| word.to_string()))
    }

    #[test]
    fn command_takes_the_whole_line_and_a_chapter() {
        let args = parse(&["--command", "python3 'my server.py' -v", "--chapter", "3"])
            .expect("a command and a chapter");
        assert_eq!(args.command.as_deref(), Some("python3 'my server.py' -v"));
        assert_eq!(args.chapter.map(|chapter| chapter.number), Some(3));
        let args = parse(&["--chapter", "1", "--command", "./server", "--only", "hello"])
            .expect("any order, with --only");
        assert_eq!(args.only.as_deref(), Some("hello"));
    }

    #[test]
    fn sketch_runs_exactly_the_checks_its_sketch_is_graded_on() {
        let args = parse(&["--command", "./server", "--chapter", "4", "--sketch"]).expect("ok");
        let names: Vec<&str> = checks(&args).iter().map(|probe| probe.name).collect();
        let declared = suite::manifest::sketch(4).expect("sketch 4").checks();
        assert_eq!(names, declared.iter().map(|probe| probe.name).collect::<Vec<_>>());
        assert!(names.contains(&"header_timeout") && !names.contains(&"hello"), "{names:?}");
        let without = parse(&["--command", "./server", "--chapter", "4"]).expect("ok");
        assert_eq!(checks(&without).len(), PROBES.len());
        let refused = parse(&["--sketch"]).err().expect("refused");
        assert!(refused.contains("--sketch needs --chapter N"), "{refused}");
    }

    #[test]
    fn command_is_refused_without_what_it_needs() {
        let error = |words: &[&str]| parse(words).err().expect("refused");
        assert!(error(&["--command", "./server"]).contains("--chapter N"));
        assert!(error(&["--command", " ", "--chapter", "1"]).contains("needs the command"));
        assert!(error(&["--command"]).contains("needs a value"));
        let both = error(&["--command", "./server", "--addr", "127.0.0.1:1", "--chapter", "1"]);
        assert!(both.contains("--addr or --command"), "{both}");
    }
}
