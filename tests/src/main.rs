//! The suite's runner: the same probes as `cargo test`, as a table, and also against a
//! server that is not one of ours.
//!
//! ```text
//! cargo run -p suite                                   # every chapter present
//! cargo run -p suite -- --chapter 2                    # one chapter
//! cargo run -p suite -- --command 'python3 my_server.py' --chapter 3
//! cargo run -p suite -- --addr 127.0.0.1:8080 --chapter 2
//! cargo run -p suite -- --command ./server --chapter 3 --only =keep_alive,hello --format json
//! cargo run -p suite -- --command ./server --chapter 4 --row timeouts --format junit
//! cargo run -p suite -- --row list                     # the rows' short names
//! cargo run -p suite -- --sketch --chapter 4                  # chapter 4's sketch, on its rows
//! cargo run -p suite -- --command ./server --chapter 4 --sketch   # a reader's, on those rows
//! cargo run -p suite -- --capability-table             # the book's appendix table
//! cargo run -p suite -- --flags-table                  # the flags, for the book
//! cargo run -p suite -- --checklist                    # every rule, for the book
//! cargo run -p suite -- --facts                        # counts and lists the book states
//! cargo run -p suite -- --extras-table                 # shared's extra flags, by chapter
//! ```
//!
//! The exit status is 1 when any check fails, 3 when none failed but one was skipped (it
//! checked nothing), 0 otherwise, so that a course can grade a reader's server with
//! `--command` (and `--only` or `--row`, for one lesson at a time). `--format json` and
//! `--format junit` write the report for a gradebook instead (see `suite::gradebook`).

use std::fs::File;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::exit;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use suite::chapters::{self, Chapter, CHAPTERS};
use suite::gradebook::{self, Run};
use suite::harness::{self, Failure, Verdict};
use suite::manifest::Capability;
use suite::probes::{Launch, Probe, Stop, Target, PROBES};
use suite::progress::Progress;
use suite::report::{self, Checked};
use suite::selection::{self, Pattern};
use suite::server::{self, Options, Program, Server, FIRST_START_TIMEOUT};

const USAGE: &str = "\
usage: suite [--chapter N] [--command CMD | --addr HOST:PORT] [--only NAMES] [--row ROWS]
             [--sketch] [--jobs N] [--format human|json|junit] [--allow-skips]
       suite --capability-table | --flags-table | --checklist | --facts | --extras-table
       suite --row list

  (no flags)          start every chapter that exists and run every probe against it
  --chapter N         only chapter N (the NN of chapters/NN-name)
  --command CMD       your own server, in any language: every probe starts it as it starts
                      ours, with the contract's flags appended (sh -c 'exec CMD \"$@\"'
                      with --host 127.0.0.1 --port 0, --root DIR, ...; --flags-table
                      lists them all), and none is skipped. CMD is one command:
                      'python3 my_server.py', './server'. --chapter N says which
                      chapter's expectations to hold it to. Its Server header may say
                      anything.
  --addr HOST:PORT    probe a server you started yourself, one check at a time; --chapter
                      says which chapter's expectations to hold it to. Probes that must
                      start the server themselves (special flags, signals) are skipped,
                      and so the exit status is 3 unless --allow-skips.
  --only NAMES        only the checks whose name contains NAME, or is NAME with =NAME
                      (--only =keep_alive runs keep_alive, not keep_alive_timeout); several
                      separated by commas, or --only given again: a check any of them names.
                      A NAME that names no check is an error.
  --row ROWS          only the checks of these rows of the capability table, by short name
                      (keep-alive, timeouts; several separated by commas, or --row again);
                      --row list lists them. With --only: the checks both choose.
  --sketch            only the checks chapter N's sketch is graded on (its chapter's new
                      rows: --capability-table lists them). Without --command or --addr,
                      the suite builds chapter N's own sketch and grades it, as it grades a
                      reader's server (chapters/NN-name/examples/chNN-sketch.rs)
  --jobs N            how many checks run at once, each with servers of its own (default
                      8; fewer for a small or busy machine). Not with --addr.
  --format FORMAT     what stdout gets: human (the report, the default); json (one object
                      per check: name, row, verdict, seconds, message; and the summary); or
                      junit (JUnit XML, a testsuite per row: what GitHub Actions' test
                      reporters and Classroom read). Verdicts: pass, ahead, expected,
                      fail-broken, fail-lacks, fail-exceeds, skipped. With json or junit,
                      what the probes print as they measure goes to stderr.
  --allow-skips       exit 0, not 3, when nothing failed but checks were skipped
  --capability-table  print the capability table (Markdown) for the book
  --flags-table       print the flags a server must accept, by chapter (Markdown)
  --checklist         print every rule the checks hold a server to, by chapter (Markdown)
  --facts             print the counts and lists the book's prose states (generated/facts.md)
  --extras-table      print shared's extra flags and the chapters that have them (Markdown)

The report says a cause shared by several checks once, at the top, and ends with the
summary line, which says why any check was skipped. On a terminal, a progress line on
stderr says which check is running. The exit status is 1 if any check fails; else 3 if
any was skipped (a skip checked nothing: --addr skips the checks that start their own
server, and chapters 10 and 11 skip every check where io_uring is not available), unless
--allow-skips; else 0. A command line the suite cannot use is 2.";

/// How many checks run at once against servers we start (each has its own server), unless
/// `--jobs` says otherwise.
const DEFAULT_JOBS: usize = 8;

/// What the run writes on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// The report, for people (`suite::report`).
    Human,
    /// For a gradebook (`suite::gradebook`).
    Json,
    Junit,
}

struct Args {
    chapter: Option<&'static Chapter>,
    address: Option<SocketAddr>,
    command: Option<String>,
    only: Vec<Pattern>,
    rows: Vec<Capability>,
    list_rows: bool,
    sketch: bool,
    jobs: Option<usize>,
    format: Format,
    allow_skips: bool,
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
        only: Vec::new(),
        rows: Vec::new(),
        list_rows: false,
        sketch: false,
        jobs: None,
        format: Format::Human,
        allow_skips: false,
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
            "--only" => args.only.extend(selection::patterns(&value()?)?),
            "--row" => match value()?.as_str() {
                "list" => args.list_rows = true,
                rows => args.rows.extend(selection::rows(rows)?),
            },
            "--sketch" => args.sketch = true,
            "--jobs" => {
                let text = value()?;
                let jobs = text.parse().ok().filter(|&jobs: &usize| jobs > 0);
                args.jobs = Some(jobs.ok_or(format!("--jobs needs a number above 0, not {text}"))?);
            }
            "--format" => {
                args.format = match value()?.as_str() {
                    "human" => Format::Human,
                    "json" => Format::Json,
                    "junit" => Format::Junit,
                    other => return Err(format!("no format {other:?}: human, json or junit")),
                }
            }
            "--allow-skips" => args.allow_skips = true,
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
    if args.address.is_some() && args.jobs.is_some() {
        return Err("--jobs is for servers the suite starts; --addr is one check at a time".into());
    }
    if args.command.is_some() && args.chapter.is_none() {
        return Err("--command needs --chapter N: which chapter's expectations to apply".into());
    }
    if args.sketch && args.chapter.is_none() {
        return Err("--sketch needs --chapter N: whose sketch's checks to run".into());
    }
    Ok(args)
}

/// A check's verdict, and how long it took.
type Timed = (Checked, Duration);

/// Why no check ran at all: what the report says (for people), and what each check says
/// in a gradebook, where it fails, broken, so that the gradebook lists every check.
struct NotRun {
    report: String,
    why: String,
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
    if args.list_rows {
        print!("{}", selection::row_list(PROBES));
        return;
    }
    let probes = selection::choose(&checks(&args), &args.rows, &args.only).unwrap_or_else(|e| {
        eprintln!("suite: {e}");
        exit(2);
    });
    if probes.is_empty() {
        eprintln!("suite: no check to run");
        exit(2);
    }

    let document = match args.format {
        Format::Human => None,
        Format::Json | Format::Junit => Some(document_out().unwrap_or_else(|error| {
            eprintln!("suite: cannot set stdout aside for the document: {error}");
            exit(2);
        })),
    };
    let started = Instant::now();
    let jobs = args.jobs.unwrap_or(DEFAULT_JOBS);
    let outcome = match (args.address, &args.command) {
        (Some(address), _) => {
            Ok(run_external(args.chapter.expect("checked in parse_args"), address, &probes))
        }
        (None, Some(command)) => {
            run_command(args.chapter.expect("checked in parse_args"), command, &probes, jobs)
        }
        (None, None) if args.sketch => {
            run_sketch(args.chapter.expect("checked in parse_args"), &probes, jobs)
        }
        (None, None) => Ok(run_own(&args, &probes, jobs)),
    };
    let timed = outcome.unwrap_or_else(|not_run| {
        if args.format == Format::Human {
            print!("{}", not_run.report);
            exit(report::FAILED);
        }
        let chapter = args.chapter.expect("only a run on one chapter stops before its checks");
        let failed = || Verdict::Fail(Failure::Broken, not_run.why.clone());
        probes.iter().map(|probe| ((chapter, *probe, failed()), Duration::ZERO)).collect()
    });
    exit(finish(&args, timed, started.elapsed(), document));
}

/// The stdout a gradebook's document goes to, set aside: until the run ends, stdout is
/// stderr. The probes print what they measure as they go (`println!`: "10000 idle
/// connections: 4.3 MiB resident"), for a person and for the book's sessions, which grep
/// it; in the document's stdout it would be text that is not JSON or XML.
fn document_out() -> Result<File, String> {
    let _ = std::io::stdout().flush();
    // A copy that the servers we start do not inherit (std dups with close-on-exec).
    let kept = std::io::stdout().as_fd().try_clone_to_owned().map_err(|e| e.to_string())?;
    nix::unistd::dup2_stdout(std::io::stderr()).map_err(|e| e.to_string())?;
    Ok(File::from(kept))
}

/// Writes the report (or the gradebook's document, to `document`), says loudly on stderr
/// if skips make the exit status 3, and returns the exit status.
fn finish(args: &Args, timed: Vec<Timed>, elapsed: Duration, document: Option<File>) -> i32 {
    let (checked, took): (Vec<Checked>, Vec<Duration>) = timed.into_iter().unzip();

    // A reader's server is named by what the reader gave: its command (in backquotes, as
    // the messages name it, so that it stands apart from the check's name; a long one by
    // its program's file name), or its address.
    let sketch = (args.sketch && args.command.is_none() && args.address.is_none())
        .then(|| args.chapter.map(|chapter| format!("`{}`", chapter.sketch_name())))
        .flatten();
    let command = args.command.as_deref().map(report::command_column).or(sketch);
    let readers = command.or(args.address.map(|address| address.to_string()));
    let status = report::exit_status(&checked, args.allow_skips);
    let server = match (&readers, args.chapter) {
        (Some(readers), _) => readers.trim_matches('`').to_string(),
        (None, Some(chapter)) => chapter.name.to_string(),
        (None, None) => "the workbook's chapters".to_string(),
    };
    let run = Run {
        checked: &checked,
        took: &took,
        chapter: args.chapter,
        server: &server,
        elapsed,
        exit_status: status,
    };
    let text = match args.format {
        Format::Human => report::render(&checked, readers.as_deref()),
        Format::Json => gradebook::json(&run),
        Format::Junit => gradebook::junit(&run),
    };
    match document {
        Some(mut document) => {
            if let Err(error) = document.write_all(text.as_bytes()) {
                eprintln!("suite: cannot write the document: {error}");
                return 2;
            }
        }
        None => print!("{text}"),
    }
    // Said where a person sees it even when stdout goes to a file: nothing failed, and yet
    // this is no pass.
    if status == report::SKIPPED {
        let skipped = checked.iter().filter(|(.., v)| matches!(v, Verdict::Skipped(_))).count();
        let which = match skipped == checked.len() {
            true => "every check was skipped, so nothing was checked".to_string(),
            false => format!("{skipped} of {} skipped", report::plural(checked.len(), "check")),
        };
        eprintln!(
            "suite: exit status 3: {which} ({}); a skip is no pass (--allow-skips accepts \
             it)",
            report::why_skipped(&checked)
        );
    }
    status
}

/// Someone else's server: one probe at a time, since a probe that holds a connection open
/// would disturb the others on a one-at-a-time chapter.
fn run_external(
    chapter: &'static Chapter, address: SocketAddr, probes: &[&'static Probe],
) -> Vec<Timed> {
    eprintln!("suite: probing {} at {address}, one probe at a time", chapter.name);
    let progress = Progress::new(probes.len());
    let timed = probes
        .iter()
        .map(|probe| {
            progress.started(probe.name);
            let (verdict, took) =
                run_timed(|| harness::run(chapter, probe, Launch::External { address }));
            progress.finished(probe.name);
            ((chapter, *probe, verdict), took)
        })
        .collect();
    progress.clear();
    timed
}

/// Runs `check`, and says how long it took.
fn run_timed(check: impl FnOnce() -> Verdict) -> (Verdict, Duration) {
    let started = Instant::now();
    let verdict = check();
    (verdict, started.elapsed())
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
fn run_sketch(
    chapter: &'static Chapter, probes: &[&'static Probe], jobs: usize,
) -> Result<Vec<Timed>, NotRun> {
    if !chapter.has_sketch() {
        let missing = format!("{} does not exist yet", chapter.sketch_path().display());
        return Err(NotRun {
            report: format!(
                "{}'s sketch: skipped, {missing}\n\n0 checks: there is no sketch to grade\n",
                chapter.name
            ),
            why: format!("there is no sketch to grade: {missing}"),
        });
    }
    let binary = chapter.sketch_binary(&build_dir()).map_err(|error| {
        let why = format!("cannot build {}: {error}", chapter.sketch_name());
        NotRun { report: format!("{why}\n"), why }
    })?;
    stop_servers_on_interrupt();
    eprintln!(
        "suite: {} on {}, held to {}'s expectations",
        report::plural(probes.len(), "probe"),
        chapter.sketch_name(),
        chapter.name
    );
    let program = harness::sketch_program(&binary);
    let jobs_list = probes.iter().map(|probe| (chapter, *probe, program.clone())).collect();
    Ok(run_parallel(jobs_list, jobs))
}

/// A reader's server, started for every probe as the suite starts ours.
fn run_command(
    chapter: &'static Chapter, line: &str, probes: &[&'static Probe], jobs: usize,
) -> Result<Vec<Timed>, NotRun> {
    stop_servers_on_interrupt();
    let program = Program::Shell(line.to_string());
    // Once first, with time to compile: a command that cannot start would fail every
    // probe the same way, and one line says it better than fifty. But for one that says
    // io_uring is not available here: each check says so, and skips.
    eprintln!(
        "suite: starting `{line}` once, to see that it starts (it has {} s to print its \
         first line)",
        FIRST_START_TIMEOUT.as_secs()
    );
    if let Err(message) =
        Server::start_within(chapter, &program, &Options::default(), FIRST_START_TIMEOUT)
    {
        // The probes' own judgement of a server that does not start: skipped, or broken.
        let launch = Launch::Start { program: program.clone() };
        if !matches!(Target { chapter, launch }.server(), Err(Stop::Skipped(_))) {
            let why = format!("`{line}` did not start: {message}");
            let report =
                format!("{message}\n\n0 checks: `{line}` did not start, so no probe ran\n");
            return Err(NotRun { report, why });
        }
    }
    eprintln!(
        "suite: {} on `{line}`, held to {}'s expectations",
        report::plural(probes.len(), "probe"),
        chapter.name
    );
    let jobs_list = probes.iter().map(|probe| (chapter, *probe, program.clone())).collect();
    Ok(run_parallel(jobs_list, jobs))
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
fn run_own(args: &Args, probes: &[&'static Probe], jobs: usize) -> Vec<Timed> {
    let chapters: Vec<&'static Chapter> = match args.chapter {
        Some(chapter) => vec![chapter],
        None => CHAPTERS.iter().collect(),
    };
    let build_dir = build_dir();
    let mut jobs_list = Vec::new();
    let mut broken = Vec::new();
    for chapter in chapters {
        if !chapter.is_present() {
            let line = format!(
                "{}: skipped, chapters/{} does not exist yet",
                chapter.name, chapter.directory
            );
            // In the report, where it has always been; never inside a gradebook's document.
            match args.format {
                Format::Human => println!("{line}"),
                Format::Json | Format::Junit => eprintln!("suite: {line}"),
            }
            continue;
        }
        match chapter.binary(&build_dir) {
            Ok(binary) => {
                eprintln!("suite: {} on {}", report::plural(probes.len(), "probe"), chapter.name);
                let program = Program::Binary(binary);
                jobs_list.extend(probes.iter().map(|probe| (chapter, *probe, program.clone())))
            }
            // Every probe of a chapter that does not build fails; the others go on.
            Err(error) => {
                eprintln!("suite: cannot build {}: {error}", chapter.name);
                let failure =
                    || Verdict::Fail(Failure::Broken, format!("cannot build {}", chapter.name));
                broken.extend(
                    probes.iter().map(|probe| ((chapter, *probe, failure()), Duration::ZERO)),
                );
            }
        }
    }
    let mut timed = run_parallel(jobs_list, jobs);
    timed.extend(broken);
    sort(&mut timed);
    timed
}

/// Runs every job, `jobs` at a time, each probe starting servers of its own, with a
/// progress line on a terminal.
fn run_parallel(
    jobs_list: Vec<(&'static Chapter, &'static Probe, Program)>, jobs: usize,
) -> Vec<Timed> {
    let several_chapters = jobs_list.windows(2).any(|pair| pair[0].0.number != pair[1].0.number);
    let progress = Progress::new(jobs_list.len());
    // A few workers take jobs off one shared list until it is empty.
    let jobs_list = Mutex::new(jobs_list.into_iter());
    let results = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let job = jobs_list.lock().unwrap_or_else(|poison| poison.into_inner()).next();
                let Some((chapter, probe, program)) = job else {
                    break;
                };
                let name = match several_chapters {
                    true => format!("{} {}", chapter.short_name(), probe.name),
                    false => probe.name.to_string(),
                };
                progress.started(&name);
                let (verdict, took) =
                    run_timed(|| harness::run(chapter, probe, Launch::Start { program }));
                progress.finished(&name);
                let mut results = results.lock().unwrap_or_else(|poison| poison.into_inner());
                results.push(((chapter, probe, verdict), took));
            });
        }
    });
    progress.clear();
    let mut results = results.into_inner().unwrap_or_else(|poison| poison.into_inner());
    sort(&mut results);
    results
}

/// Back into the table's order: by chapter, then as PROBES lists them.
fn sort(timed: &mut [Timed]) {
    let position = |probe: &Probe| PROBES.iter().position(|p| p.name == probe.name);
    timed.sort_by_key(|((chapter, probe, _), _)| (chapter.number, position(probe)));
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
        assert_eq!(args.only, [Pattern::Contains("hello".into())]);
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

    #[test]
    fn only_and_row_add_up_and_jobs_and_format_are_checked() {
        let args = parse(&["--only", "hello,=echo", "--only", "file", "--row", "keep-alive"])
            .expect("several names, a row");
        let only = [
            Pattern::Contains("hello".into()),
            Pattern::Exactly("echo".into()),
            Pattern::Contains("file".into()),
        ];
        assert_eq!(args.only, only);
        assert_eq!(args.rows, [Capability::KeepAlive]);
        assert!(parse(&["--row", "list"]).expect("the list").list_rows);
        let args = parse(&["--jobs", "2", "--format", "junit", "--allow-skips"]).expect("ok");
        assert_eq!((args.jobs, args.format, args.allow_skips), (Some(2), Format::Junit, true));
        assert_eq!(parse(&[]).expect("no flags").format, Format::Human);
        let error = |words: &[&str]| parse(words).err().expect("refused");
        assert!(error(&["--jobs", "0"]).contains("above 0"));
        assert!(error(&["--jobs", "many"]).contains("above 0"));
        assert!(error(&["--format", "xml"]).contains("human, json or junit"));
        assert!(error(&["--row", "keepalive-and-pipelining"]).contains("--row list"));
        assert!(error(&["--only", "a,,b"]).contains("empty name"));
        let addr = error(&["--addr", "127.0.0.1:1", "--chapter", "1", "--jobs", "2"]);
        assert!(addr.contains("--jobs is for servers the suite starts"), "{addr}");
    }
}
