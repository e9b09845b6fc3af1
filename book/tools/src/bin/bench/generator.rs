//! The load generators: `wrk` when it is installed, the workbook's own `load` otherwise.
//!
//! Both run as separate processes with the same knobs (connections, pipelining depth,
//! duration), and both answer with the same few numbers, so a scenario does not care which
//! one ran it. One thread each: the machine has two cores, and the single-threaded server
//! under test needs the other one.

use std::fs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::process::run_bounded;

/// A request counts as failed ("timeout") when unanswered this long, in both generators.
pub const REQUEST_TIMEOUT_SECS: u32 = 2;

pub enum Generator {
    /// `scripts`: where to write the Lua script that makes `wrk` pipeline.
    Wrk {
        program: PathBuf,
        version: String,
        scripts: PathBuf,
    },
    Own {
        program: PathBuf,
    },
}

/// One load to apply.
#[derive(Clone, Debug)]
pub struct Load {
    pub path: String,
    /// Bytes of request body: 0 is `GET`, more is a `POST` with that many bytes.
    pub body: usize,
    pub connections: usize,
    /// Requests sent at once on a connection before reading the answers (1: none).
    pub pipeline: usize,
    pub duration: Duration,
}

/// What a generator measured.
#[derive(Clone, Debug, Default)]
pub struct LoadResult {
    pub requests: u64,
    pub requests_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub errors: u64,
    /// Errors by kind and anything else worth a footnote, such as reconnects.
    pub detail: String,
}

impl Generator {
    pub fn describe(&self) -> String {
        match self {
            Generator::Wrk { version, .. } => format!("{version}, 1 thread"),
            Generator::Own { .. } => {
                "the workbook's own `load` (book/tools/src/bin/load/main.rs), 1 thread".to_string()
            }
        }
    }

    pub fn short_name(&self) -> &'static str {
        match self {
            Generator::Wrk { .. } => "wrk",
            Generator::Own { .. } => "load",
        }
    }

    /// Applies `load` to the server at `address`, and waits for the numbers. Bounded: the
    /// generator is killed if it runs 15 s past its duration.
    pub fn run(&self, address: SocketAddr, load: &Load) -> Result<LoadResult, String> {
        let url = format!("http://{address}{}", load.path);
        // wrk takes whole seconds.
        let seconds = load.duration.as_secs_f64().ceil().max(1.0) as u64;
        let limit = Duration::from_secs(seconds + 15);
        match self {
            Generator::Wrk { program, scripts, .. } => {
                let mut command = Command::new(program);
                command.args([
                    "--threads".to_string(),
                    "1".to_string(),
                    "--connections".to_string(),
                    load.connections.to_string(),
                    "--duration".to_string(),
                    format!("{seconds}s"),
                    "--timeout".to_string(),
                    format!("{REQUEST_TIMEOUT_SECS}s"),
                    "--latency".to_string(),
                ]);
                if load.pipeline > 1 || load.body > 0 {
                    command.arg("--script").arg(request_script(scripts, load)?);
                }
                command.arg(&url);
                let output = run_bounded(&mut command, limit)
                    .map_err(|error| format!("cannot run wrk: {error}"))?;
                if output.status.is_none() {
                    return Err("wrk did not finish in time".into());
                }
                parse_wrk(&output.stdout).ok_or_else(|| {
                    format!("could not read wrk's output: {}{}", output.stdout, output.stderr)
                })
            }
            Generator::Own { program } => {
                let mut command = Command::new(program);
                command
                    .args(["--threads", "1"])
                    .args(["--connections", &load.connections.to_string()])
                    .args(["--pipeline", &load.pipeline.to_string()])
                    .args(["--body-size", &load.body.to_string()])
                    .args(["--duration", &seconds.to_string()])
                    .args(["--timeout", &REQUEST_TIMEOUT_SECS.to_string()])
                    .arg(&url);
                let output = run_bounded(&mut command, limit)
                    .map_err(|error| format!("cannot run load: {error}"))?;
                if output.status.is_none() {
                    return Err("load did not finish in time".into());
                }
                parse_own(&output.stdout).ok_or_else(|| {
                    format!("could not read load's output: {}{}", output.stdout, output.stderr)
                })
            }
        }
    }
}

// ANCHOR: request_script
/// `wrk` pipelines and posts through a Lua script: the "request" it sends is DEPTH
/// requests glued together, and it counts each response as it arrives. (`wrk.format`
/// adds the `Content-Length` of a body.)
fn request_script(folder: &std::path::Path, load: &Load) -> Result<PathBuf, String> {
    let (method, body) = if load.body > 0 {
        ("POST", format!("string.rep(\"x\", {})", load.body))
    } else {
        ("GET", "nil".to_string())
    };
    let path = folder.join(format!("{method}-{}-{}.lua", load.pipeline, load.body));
    let script = format!(
        "-- Written by the workbook's benchmark harness: {depth} pipelined {method}s per batch.
init = function(args)
  local body = {body}
  local batch = {{}}
  for i = 1, {depth} do batch[i] = wrk.format(\"{method}\", \"{path}\", nil, body) end
  pipelined = table.concat(batch)
end
request = function() return pipelined end
",
        depth = load.pipeline,
        path = load.path,
    );
    fs::write(&path, script)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok(path)
}
// ANCHOR_END: request_script

/// Reads `wrk --latency` output:
///
/// ```text
///   Latency Distribution
///      50%  504.00us
///      99%  777.00us
///   485334 requests in 5.00s, 69.89MB read
///   Socket errors: connect 0, read 0, write 0, timeout 3
///   Non-2xx or 3xx responses: 12
/// Requests/sec:  97066.42
/// ```
///
/// The two error lines appear only when there were such errors.
pub fn parse_wrk(text: &str) -> Option<LoadResult> {
    let mut result = LoadResult::default();
    let mut details = Vec::new();
    let mut saw_rate = false;
    for line in text.lines().map(str::trim) {
        if let Some(value) = line.strip_prefix("50%") {
            result.p50_us = wrk_duration_us(value.trim())?;
        } else if let Some(value) = line.strip_prefix("99%") {
            result.p99_us = wrk_duration_us(value.trim())?;
        } else if let Some((count, _)) = line.split_once(" requests in ") {
            result.requests = count.trim().parse().ok()?;
        } else if let Some(rest) = line.strip_prefix("Socket errors:") {
            for part in rest.split(',') {
                let mut words = part.split_whitespace();
                let (Some(kind), Some(count)) = (words.next(), words.next()) else {
                    continue;
                };
                let count: u64 = count.parse().ok()?;
                if count > 0 {
                    result.errors += count;
                    details.push(format!("{kind} {count}"));
                }
            }
        } else if let Some(count) = line.strip_prefix("Non-2xx or 3xx responses:") {
            let count: u64 = count.trim().parse().ok()?;
            result.errors += count;
            details.push(format!("non-2xx {count}"));
        } else if let Some(rate) = line.strip_prefix("Requests/sec:") {
            result.requests_per_s = rate.trim().parse().ok()?;
            saw_rate = true;
        }
    }
    // With a pipelining script, wrk 4.1 now and then prints `99%    0.00us` beside a
    // sensible p50 (a quirk of how it counts batches). A percentile cannot be below the
    // median: report it as not measured (zero, shown as "–") and say why.
    if result.p99_us < result.p50_us {
        result.p99_us = 0.0;
        details.push("wrk printed a p99 of 0 (a wrk quirk with pipelining); not shown".into());
    }
    result.detail = details.join(", ");
    saw_rate.then_some(result)
}

/// `504.00us`, `1.20ms`, `2.00s`, `1.00m` -> microseconds.
fn wrk_duration_us(text: &str) -> Option<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(number * scale)
}

/// Reads the `key value` lines `load` prints.
pub fn parse_own(text: &str) -> Option<LoadResult> {
    let value = |key: &str| -> Option<f64> {
        text.lines()
            .filter_map(|line| line.split_once(' '))
            .find(|(name, _)| *name == key)
            .and_then(|(_, value)| value.trim().parse().ok())
    };
    let mut details = Vec::new();
    for kind in ["connect", "read", "write", "timeout", "status", "malformed"] {
        let count = value(&format!("errors_{kind}")).unwrap_or(0.0);
        if count > 0.0 {
            details.push(format!("{kind} {count}"));
        }
    }
    for key in ["reconnects", "unanswered"] {
        let count = value(key).unwrap_or(0.0);
        if count > 0.0 {
            details.push(format!("{key} {count}"));
        }
    }
    Some(LoadResult {
        requests: value("requests")? as u64,
        requests_per_s: value("requests_per_s")?,
        p50_us: value("latency_p50_us")?,
        p99_us: value("latency_p99_us")?,
        errors: value("errors")? as u64,
        detail: details.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wrk_output_with_errors() {
        let text = "Running 1s test @ http://127.0.0.1:1/hello
  1 threads and 50 connections
  Latency Distribution
     50%  504.00us
     75%  535.00us
     90%  578.00us
     99%    1.20ms
  485334 requests in 5.00s, 69.89MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 12
Requests/sec:  97066.42
Transfer/sec:     13.98MB
";
        let result = parse_wrk(text).expect("parses");
        assert_eq!(result.requests, 485334);
        assert_eq!(result.p50_us, 504.0);
        assert_eq!(result.p99_us, 1200.0);
        assert_eq!(result.errors, 17);
        assert_eq!(result.detail, "read 2, timeout 3, non-2xx 12");
        assert!((result.requests_per_s - 97066.42).abs() < 1e-6);
    }

    #[test]
    fn reads_own_output() {
        let text = "requests 10\nrequests_per_s 5.0\nlatency_p50_us 7\nlatency_p99_us 9\n\
                    errors 1\nerrors_timeout 1\nreconnects 4\n";
        let result = parse_own(text).expect("parses");
        assert_eq!(result.requests, 10);
        assert_eq!(result.errors, 1);
        assert_eq!(result.detail, "timeout 1, reconnects 4");
    }
}
