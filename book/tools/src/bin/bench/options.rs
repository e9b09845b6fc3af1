//! The command line of `bench`: what to measure, how long, and where to write it.

use std::path::PathBuf;

use crate::scenarios::SCENARIOS;

pub const USAGE: &str = "\
usage: bench [--quick] [--chapters 1,2,3] [--out DIR | --no-write]
             [--generator auto|wrk|own] [--no-nginx] [--scenarios ID,ID,...]
             [--no-scenarios] [--rounds N] [--seconds N] [--no-syscalls]
             [--no-allocations]
       bench --redraw [--out DIR]

  --quick            one round of 1 s per scenario and server (about 4 minutes)
  --chapters LIST    which chapters, by number (default: every folder in chapters/)
  --out DIR          where to write bench.md, bench.svg and the raw results,
                     bench-results.txt (default: book/src/generated)
  --no-write         only print the report
  --generator G      wrk (default when installed) or own (book/tools/src/bin/load/main.rs)
  --no-nginx         do not run nginx (one worker, and x2: two workers) as the peer
  --scenarios LIST   only these scenarios: keep-alive-1, keep-alive-50, keep-alive-500,
                     pipelined-16, file-8mib, file-64k, pipelined-echo-64k, idle-0,
                     idle-1k, idle-5k, idle-10k
  --no-scenarios     run no scenario: only count system calls and allocations (with
                     --no-syscalls, allocations alone: seconds, not minutes)
  --rounds N         rounds per scenario (default 3, or 2 if 3 do not fit; --quick: 1)
  --seconds N        seconds per round (default: what fits the budget, 1 to 3)
  --no-syscalls      skip counting system calls with strace
  --no-allocations   skip counting heap allocations (a counter the harness builds with
                     rustc and loads into each server with LD_PRELOAD)
  --redraw           measure nothing: draw bench.md and bench.svg again from the raw
                     results of the last run, DIR/bench-results.txt";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Choice {
    Auto,
    Wrk,
    Own,
}

#[derive(Debug)]
pub struct Options {
    pub quick: bool,
    pub chapters: Option<Vec<u32>>,
    pub out: Option<PathBuf>,
    pub write: bool,
    pub generator: Choice,
    pub nginx: bool,
    /// Which scenarios: `None` for all of them; `Some` of an empty list for none.
    pub scenarios: Option<Vec<String>>,
    pub rounds: Option<usize>,
    pub seconds: Option<u64>,
    pub syscalls: bool,
    pub allocations: bool,
    pub redraw: bool,
}

pub fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut options = Options {
        quick: false,
        chapters: None,
        out: None,
        write: true,
        generator: Choice::Auto,
        nginx: true,
        scenarios: None,
        rounds: None,
        seconds: None,
        syscalls: true,
        allocations: true,
        redraw: false,
    };
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let mut value = || rest.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--quick" => options.quick = true,
            "--chapters" => {
                let list = value()?;
                let numbers = list
                    .split(',')
                    .map(|n| n.trim().parse::<u32>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| format!("--chapters {list}: expected numbers like 1,2,3"))?;
                options.chapters = Some(numbers);
            }
            "--out" => options.out = Some(PathBuf::from(value()?)),
            "--no-write" => options.write = false,
            "--generator" => {
                options.generator = match value()?.as_str() {
                    "auto" => Choice::Auto,
                    "wrk" => Choice::Wrk,
                    "own" => Choice::Own,
                    other => return Err(format!("--generator {other}: expected wrk or own")),
                }
            }
            "--no-nginx" => options.nginx = false,
            "--scenarios" => {
                let list: Vec<String> = value()?.split(',').map(str::to_string).collect();
                for id in &list {
                    if !SCENARIOS.iter().any(|scenario| scenario.id == id) {
                        return Err(format!("no scenario {id}"));
                    }
                }
                options.scenarios = Some(list);
            }
            "--rounds" => {
                let rounds = value()?;
                options.rounds = Some(
                    rounds
                        .parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("--rounds {rounds}: expected 1 or more"))?,
                )
            }
            "--seconds" => {
                let seconds = value()?;
                options.seconds = Some(
                    seconds
                        .parse()
                        .ok()
                        .filter(|&n| (1..=60).contains(&n))
                        .ok_or_else(|| format!("--seconds {seconds}: expected 1 to 60"))?,
                )
            }
            "--no-scenarios" => options.scenarios = Some(Vec::new()),
            "--no-syscalls" => options.syscalls = false,
            "--no-allocations" => options.allocations = false,
            "--redraw" => options.redraw = true,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Some(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Options>, String> {
        parse_args(&args.iter().map(|arg| arg.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn reads_lists_and_refuses_what_it_does_not_know() {
        let options = parse(&["--chapters", "7,9", "--scenarios", "pipelined-echo-64k"])
            .expect("valid")
            .expect("not --help");
        assert_eq!(options.chapters, Some(vec![7, 9]));
        assert_eq!(options.scenarios, Some(vec!["pipelined-echo-64k".to_string()]));
        assert!(parse(&["--scenarios", "no-such"]).is_err());
        assert!(parse(&["--rounds", "0"]).is_err());
        assert!(parse(&["--seconds"]).is_err());
        assert!(parse(&["--help"]).expect("valid").is_none());
        assert!(parse(&["--redraw"]).expect("valid").expect("not --help").redraw);
        let none = parse(&["--no-scenarios"]).expect("valid").expect("not --help");
        assert_eq!(none.scenarios, Some(Vec::new()));
    }
}
