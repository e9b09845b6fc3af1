//! `bench`: the workbook's benchmark harness. Why the event loop wins, in numbers and in a
//! picture.
//!
//! ```text
//! cargo run --release -p book-tools --bin bench -- [--quick] [--chapters 1,2,3]
//!     [--out book/src/generated | --no-write] [--generator auto|wrk|own] [--no-nginx] ...
//! ```
//!
//! It builds the chapters in release mode, then applies the same loads to each of them and
//! to nginx (one worker process, as single-threaded as our chapters, and two workers, the
//! peer for chapter 9's two loops), one server at a time, on 127.0.0.1 only: keep-alive
//! `/hello` at 1, 50 and 500 connections, 16 pipelined requests, an 8 MiB and a 64 KiB
//! file, 16 pipelined 64 KiB echoes, and `/hello` while 0 to 10,000 idle connections are
//! open.
//! Around every run it reads the server's CPU time, for the CPU each request cost. Then it
//! counts system calls per request (`strace`, where it is installed) and heap allocations
//! per request (`alloc_counter.rs`, a library it builds with `rustc` and loads into each
//! server with `LD_PRELOAD`). It prints a Markdown report and writes it, with an SVG
//! chart and the raw results (`results.rs`), to the book's `generated/` folder; `--redraw`
//! draws the report and the chart again from those. A run records what it was made from
//! in the book's lock (`book_tools::lock`), so that the book's check fails once a chapter
//! changes and the benchmark was not run again.
//!
//! The pieces, one file each: `options` (the command line), `targets` and `nginx`
//! (building and starting servers), `generator` (`wrk` or our own `load`), `scenarios`
//! (what to measure, one round at a time), `probes` (bounded checks and idle
//! connections), `cpu`, `syscalls`, `allocations` (with `alloc_counter.rs`, which is not a
//! module but a library of its own), `summary` (rounds to medians), `results`
//! (kept, and read back), `report` (the tables, with `text` for the numbers in them), and
//! `chart`, `panels` and `idle` (the SVG).
//! `process` makes sure no child outlives the harness.
//!
//! Bounded in time: a full run takes about ten minutes, `--quick` about four; every wait
//! has a deadline, and a chapter that cannot serve a scenario is reported as blocked.

mod allocations;
mod chart;
mod cpu;
mod generator;
mod idle;
mod nginx;
mod options;
mod panels;
mod probes;
mod process;
mod report;
mod results;
mod scenarios;
mod summary;
mod syscalls;
mod targets;
mod text;

use std::path::{Path, PathBuf};
use std::process::{exit, Command};
use std::time::{Duration, Instant};

use generator::{Generator, Load};
use options::{parse_args, Choice, Options, USAGE};
use process::{find_program, run_bounded, TempDir};
use report::{Run, ScenarioResult};
use scenarios::{Outcome, Scenario, SCENARIOS};
use targets::{Site, Target};
use text::{cpu_text, human_duration, latency_text, rate_text};

/// The full run's budget for the scenarios, leaving room for strace, the allocation count
/// and builds.
const SCENARIO_BUDGET_SECS: f64 = 420.0;
/// Starting a server, opening idle connections, the probe: about this much per round.
const ROUND_OVERHEAD_SECS: f64 = 0.8;
/// Requests in the two batches of the allocation count; the difference is what is divided.
const ALLOCATION_REQUESTS: (u64, u64) = (1000, 5000);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse_args(&args) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(message) => {
            eprintln!("bench: {message}\n{USAGE}");
            exit(2);
        }
    };
    if let Err(message) = run(&options, &args) {
        eprintln!("bench: {message}");
        exit(1);
    }
}

fn run(options: &Options, args: &[String]) -> Result<(), String> {
    if options.redraw {
        let folder = match &options.out {
            Some(folder) => folder.clone(),
            None => find_workspace()?.join("book/src/generated"),
        };
        return results::redraw(&folder, options.write);
    }
    let started = Instant::now();
    let measured_at = text::now_utc();
    let load_before = text::load_average();
    // Every number here assumes the machine has nothing else to do.
    if let Some(busy) =
        load_before.split_whitespace().next().and_then(|one| one.parse::<f64>().ok())
    {
        if busy >= 1.0 {
            eprintln!(
                "bench: warning: load average {busy} before the run: other work on this \
                 machine will skew the numbers"
            );
        }
    }
    let workspace = find_workspace()?;

    // 1. Build what we measure. A chapter that does not build (one being written, say) is
    //    left out and named in the report, not allowed to stop the run.
    let mut chapters = targets::discover_chapters(&workspace);
    let mut skipped = Vec::new();
    if let Some(numbers) = &options.chapters {
        for number in numbers {
            if !chapters.iter().any(|(n, _)| n == number) {
                skipped.push((format!("chapter {number}"), "no such folder in chapters/".into()));
            }
        }
        chapters.retain(|(number, _)| numbers.contains(number));
    }
    let mut servers = Vec::new();
    for (_, package) in &chapters {
        eprintln!("bench: building {package} (release)");
        match Target::chapter(&workspace, package) {
            Ok(targets) => servers.extend(targets),
            Err(why) => {
                eprintln!("bench: leaving out {package}: {why}");
                skipped.push((package.clone(), why));
            }
        }
    }
    eprintln!("bench: building load (release)");
    // Our load generator is a program of this harness's own package (named so, not typed:
    // when the tools moved out of `suite`, a typed name went on building the old one,
    // which only says where the tools went); if that does not build right now, the `load`
    // built together with this harness will do.
    let load_program =
        targets::build(&workspace, env!("CARGO_PKG_NAME"), "load").or_else(|why| {
            let beside = std::env::current_exe()
                .ok()
                .and_then(|exe| Some(exe.parent()?.join("load")))
                .filter(|path| path.is_file())
                .ok_or_else(|| format!("{why}, and there is no `load` beside this harness"))?;
            eprintln!("bench: {why}; using {}", beside.display());
            Ok::<PathBuf, String>(beside)
        })?;

    let temp = TempDir::new("workbook-bench")
        .map_err(|error| format!("cannot make a temporary folder: {error}"))?;
    let site = Site::create(temp.path())
        .map_err(|error| format!("cannot write the test files: {error}"))?;

    // 2. Every server must answer `/hello` before it is measured. A chapter that is still a
    //    placeholder exits at once: it is named in the report instead.
    let mut nginx_version = None;
    if options.nginx {
        match find_program("nginx") {
            Some(program) => {
                nginx_version = Some(tool_version(&program, "-v"));
                servers.push(Target::nginx(program.clone(), 1));
                servers.push(Target::nginx(program, 2));
            }
            None => eprintln!("bench: nginx is not installed; measuring the chapters alone"),
        }
    }
    servers.retain(|server| match smoke_test(server, &site) {
        Ok(()) => true,
        Err(why) => {
            eprintln!("bench: leaving out {}: {why}", server.name);
            skipped.push((server.name.clone(), why));
            false
        }
    });
    if !servers.iter().any(|server| !server.is_nginx()) {
        return Err("no chapter could be started; nothing to measure".into());
    }
    let peer = nginx_version.filter(|_| servers.iter().any(Target::is_nginx)).map(|version| {
        nginx::describe(
            &version,
            &servers.iter().filter(|server| server.is_nginx()).collect::<Vec<_>>(),
        )
    });
    // Each server is compared with the nginx that has as many workers as it has loops.
    let peers: Vec<Option<usize>> = servers
        .iter()
        .map(|server| {
            servers.iter().position(|other| other.is_nginx() && other.loops == server.loops)
        })
        .collect();
    let generator = choose_generator(options.generator, &load_program, &site)?;

    // 3. The plan: how many rounds of how long fit the time budget.
    let scenarios: Vec<&'static Scenario> = SCENARIOS
        .iter()
        .filter(|scenario| {
            options.scenarios.as_ref().is_none_or(|ids| ids.iter().any(|id| id == scenario.id))
        })
        .collect();
    let (rounds, seconds) = plan(options, scenarios.len() * servers.len());
    let runs = scenarios.len() * rounds * servers.len();
    let most_idle = scenarios.iter().map(|scenario| scenario.idle).max().unwrap_or(0);
    if let Some(soft) = suite::resources::own_descriptor_limits().map(|limits| limits.soft) {
        // Ours: the idle connections, the generator's, and a few to spare.
        if soft < most_idle as u64 + 100 {
            eprintln!(
                "bench: warning: this process may open only {soft} files, and the idle \
                 scenarios need {most_idle} connections; raise it first (`ulimit -n 20000`)"
            );
        }
    }
    let names: Vec<&str> = servers.iter().map(|server| server.name.as_str()).collect();
    eprintln!(
        "bench: {} scenarios x {} servers ({}) x {rounds} round(s) of {seconds} s, with {}; \
         about {} for the scenarios",
        scenarios.len(),
        servers.len(),
        names.join(", "),
        generator.short_name(),
        human_duration(Duration::from_secs_f64(
            runs as f64 * (seconds as f64 + ROUND_OVERHEAD_SECS)
        ))
    );

    // 4. The scenarios. Within a round every server takes its turn, so the per-round ratio
    //    to nginx compares two runs made minutes, not hours, apart.
    // ANCHOR: rounds
    let mut results = Vec::new();
    let mut done = 0;
    for scenario in &scenarios {
        let mut outcomes: Vec<Vec<Outcome>> = vec![Vec::new(); servers.len()];
        for round in 1..=rounds {
            for (index, server) in servers.iter().enumerate() {
                done += 1;
                let outcome = scenarios::run_once(
                    server,
                    &site,
                    &generator,
                    scenario,
                    Duration::from_secs(seconds),
                );
                eprintln!(
                    "[{done:>3}/{runs}] {:<18} {:<18} round {round}/{rounds}: {}",
                    scenario.id,
                    server.name,
                    describe(&outcome)
                );
                outcomes[index].push(outcome);
            }
        }
        results.push(ScenarioResult { scenario, cells: summary::summarize(&outcomes, &peers) });
    }
    // ANCHOR_END: rounds

    // 5. System calls per request, where strace is installed.
    let window = if options.quick { 1 } else { 2 };
    let strace = find_program("strace").filter(|_| options.syscalls);
    let mut syscall_counts = Vec::new();
    if let Some(strace) = &strace {
        let load = Load {
            path: "/hello".into(),
            body: 0,
            connections: 50,
            pipeline: 1,
            duration: Duration::from_secs(window),
        };
        for server in &servers {
            let count = syscalls::count(strace, server, &site, &generator, &load);
            match &count {
                Ok(count) => eprintln!(
                    "bench: {:<18} {:.2} system calls per request ({} requests traced)",
                    server.name,
                    count.per_request(),
                    count.requests
                ),
                Err(why) => eprintln!("bench: {:<18} syscalls not counted: {why}", server.name),
            }
            syscall_counts.push((server.name.clone(), count));
        }
    } else if options.syscalls {
        eprintln!("bench: strace is not installed; not counting system calls");
    }

    // 6. Heap allocations per request, with our counter (nginx too: for it, its calls to
    //    `malloc`, not what it carves out of its pools).
    let mut allocation_counts = Vec::new();
    if options.allocations {
        match allocations::build_counter(&site.scratch) {
            Ok(counter) => {
                for server in &servers {
                    let count = allocations::count(
                        &counter,
                        &load_program,
                        server,
                        &site,
                        ALLOCATION_REQUESTS,
                    );
                    match &count {
                        Ok(count) => eprintln!(
                            "bench: {:<18} {} heap allocations per /hello request",
                            server.name,
                            text::per_request_text(count.allocations_per_request, 2)
                        ),
                        Err(why) => {
                            eprintln!("bench: {:<18} allocations not counted: {why}", server.name)
                        }
                    }
                    allocation_counts.push((server.name.clone(), count));
                }
            }
            Err(why) => eprintln!("bench: not counting allocations: {why}"),
        }
    }

    // 7. The report: on the terminal, and as the book's generated files.
    let mut command = "cargo run --release -p book-tools --bin bench".to_string();
    if !args.is_empty() {
        command.push_str(" -- ");
        command.push_str(&args.join(" "));
    }
    let run = Run {
        command,
        measured_at,
        machine: text::machine(),
        clock_ticks: cpu::clock_ticks_per_second(),
        generator: generator.describe(),
        peer,
        rounds,
        seconds,
        runtime: started.elapsed(),
        load_before,
        load_after: text::load_average(),
        servers: servers.iter().map(|server| server.name.clone()).collect(),
        scenarios: results,
        syscall_window: strace.is_some().then(|| ("keep-alive-50".to_string(), window)),
        syscalls: syscall_counts,
        allocation_requests: ALLOCATION_REQUESTS,
        allocations: allocation_counts,
        skipped,
    };
    let page = report::markdown(&run);
    println!("{page}");
    if options.write {
        let folder = options.out.clone().unwrap_or_else(|| workspace.join("book/src/generated"));
        results::write_files(&folder, &run, Some(results::write(&run)))?;
        // Written where the book looks: the lock records what this run was made from, so
        // that the book's check can tell when a chapter changed after it.
        if same_folder(&folder, &workspace.join("book/src/generated")) {
            book_tools::lock::piece(&workspace, "bench")
                .and_then(|piece| book_tools::lock::record(&workspace, &piece))
                .map_err(|error| format!("cannot record the run in the lock: {error}"))?;
            eprintln!("bench: recorded its inputs in {}", book_tools::lock::LOCK);
        }
    }
    eprintln!("bench: finished in {}", human_duration(started.elapsed()));
    Ok(())
}

// ANCHOR: plan
/// How many rounds of how many seconds: what was asked for, or else what fits the time
/// budget. Three rounds give a true median; with many chapters, two rounds of two seconds
/// beat three rounds of one (a one-second run is mostly warm-up).
fn plan(options: &Options, runs_per_round: usize) -> (usize, u64) {
    if options.quick {
        return (options.rounds.unwrap_or(1), options.seconds.unwrap_or(1));
    }
    let fits = |rounds: usize| {
        let each = SCENARIO_BUDGET_SECS / (rounds * runs_per_round).max(1) as f64;
        (each - ROUND_OVERHEAD_SECS).floor().clamp(1.0, 3.0) as u64
    };
    match (options.rounds, options.seconds) {
        (Some(rounds), Some(seconds)) => (rounds, seconds),
        (Some(rounds), None) => (rounds, fits(rounds)),
        (None, Some(seconds)) => (3, seconds),
        (None, None) if fits(3) >= 2 => (3, fits(3)),
        (None, None) => (2, fits(2)),
    }
}
// ANCHOR_END: plan

/// The workspace root: where this crate was built from, or else the nearest folder above
/// the current one with a `chapters/` folder beside a `Cargo.toml`.
/// Are these the same folder, however they are written?
fn same_folder(one: &Path, other: &Path) -> bool {
    match (one.canonicalize(), other.canonicalize()) {
        (Ok(one), Ok(other)) => one == other,
        _ => false,
    }
}

fn find_workspace() -> Result<PathBuf, String> {
    let is_root =
        |folder: &Path| folder.join("chapters").is_dir() && folder.join("Cargo.toml").is_file();
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if is_root(&built_from) {
        // `book/tools/../..` reads oddly in messages; the plain path does not.
        return Ok(built_from.canonicalize().unwrap_or(built_from));
    }
    let here = std::env::current_dir().map_err(|error| error.to_string())?;
    here.ancestors()
        .find(|folder| is_root(folder))
        .map(Path::to_path_buf)
        .ok_or_else(|| "cannot find the workspace (a folder with chapters/ and Cargo.toml)".into())
}

/// One `GET /hello` with a deadline: the server must be alive and say hello.
fn smoke_test(server: &Target, site: &Site) -> Result<(), String> {
    let running = server.start(site)?;
    match probes::get(running.address, "/hello", probes::PROBE_LIMIT)? {
        (200, body) if body.as_bytes() == suite::probes::HELLO => Ok(()),
        (status, body) => Err(format!("/hello answered {status} {body:?}")),
    }
}

fn choose_generator(choice: Choice, load_program: &Path, site: &Site) -> Result<Generator, String> {
    let wrk = match choice {
        Choice::Own => None,
        Choice::Auto => find_program("wrk"),
        Choice::Wrk => Some(find_program("wrk").ok_or("--generator wrk: wrk is not installed")?),
    };
    Ok(match wrk {
        Some(program) => Generator::Wrk {
            version: tool_version(&program, "-v"),
            program,
            scripts: site.scratch.clone(),
        },
        None => {
            if choice == Choice::Auto {
                eprintln!("bench: wrk is not installed; using the workbook's own load generator");
            }
            Generator::Own { program: load_program.to_path_buf() }
        }
    })
}

/// `wrk debian/4.1.0-3+b2`, `nginx/1.22.1`: the first line a tool prints about itself,
/// trimmed of the copyright.
fn tool_version(program: &Path, flag: &str) -> String {
    let name =
        program.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let Ok(output) = run_bounded(Command::new(program).arg(flag), Duration::from_secs(5)) else {
        return name;
    };
    let text = format!("{}{}", output.stdout, output.stderr);
    let line = text.lines().next().unwrap_or_default();
    let line = line.strip_prefix("nginx version: ").unwrap_or(line);
    let line = line.split(" [").next().unwrap_or(line);
    let line = line.split(" Copyright").next().unwrap_or(line).trim();
    if line.is_empty() {
        name
    } else {
        line.to_string()
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Measured { load, peak_rss_kib, cpu } => format!(
            "{} req/s, p50 {}, p99 {}, CPU {} µs/req, errors {}{}{}",
            rate_text(load.requests_per_s),
            latency_text(load.p50_us),
            latency_text(load.p99_us),
            cpu_text(*cpu),
            load.errors,
            peak_rss_kib
                .map(|kib| format!(", peak RSS {}", text::memory_text(kib)))
                .unwrap_or_default(),
            if load.detail.is_empty() { String::new() } else { format!(" ({})", load.detail) }
        ),
        Outcome::Blocked(why) => format!("blocked: {why}"),
        Outcome::Failed(why) => format!("FAILED: {why}"),
    }
}
