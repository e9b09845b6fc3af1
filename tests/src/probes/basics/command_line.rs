//! Probes for the command line every chapter shares: `--help`, a flag it does not know, a
//! port already in use, and `--host ::1`.

use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use crate::manifest::Capability;
use crate::probes::checklist::{listed, rule, secs, Rule, STARTING};
use crate::probes::{
    broken, check, exchange, expect_status, get, Launch, Outcome, Probed, Stop, Target, HELLO,
    PATIENCE,
};
use crate::probes::{probe, Module, Probe};
use crate::server::{args_text, Options, ProcessGroup, Program, Spawned};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: None, rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("command_line", Capability::Basics, command_line),
    probe("ipv6_host", Capability::Basics, ipv6_host),
];

/// The command line's promises: `--help` is exit 0, a bad flag exit 2 with the usage on
/// stderr, a port in use exit 1 with a one-line error (not a panic).
pub fn command_line(target: &Target) -> Probed {
    let Launch::Start { program } = &target.launch else {
        return Err(Stop::Skipped(crate::probes::NEEDS_OWN_SERVER));
    };
    let help = run_to_end(program, &["--help"])?;
    check!(
        help.code == Some(0) && help.stdout.contains("usage"),
        "--help: exit {:?}, stdout {:?}; expected exit 0 and the usage",
        help.code,
        help.stdout
    );
    for bad in [&["--bogus"][..], &["--port", "seventy"], &["--port"]] {
        let run = run_to_end(program, bad)?;
        check!(
            run.code == Some(2) && run.stderr.contains("usage") && !run.stderr.contains("panicked"),
            "{}: exit {:?}, stderr {:?}; expected exit 2 with an error and the usage",
            bad.join(" "),
            run.code,
            run.stderr
        );
    }
    let server = target.server()?;
    let port = server.address.port().to_string();
    let in_use = |stop| match stop {
        Stop::Broken(what) => broken(format!(
            "{what}, though another server listens on port {port}: expected exit 1 and a \
             one-line error"
        )),
        skipped => skipped,
    };
    let taken = run_to_end(program, &["--host", "127.0.0.1", "--port", &port]).map_err(in_use)?;
    check!(
        taken.code == Some(1)
            && !taken.stderr.contains("panicked")
            && taken.stderr.lines().count() == 1,
        "--port {port} (in use): exit {:?}, stderr {:?}; expected exit 1 and a one-line error",
        taken.code,
        taken.stderr
    );
    Ok(Outcome::Works)
}

/// The IPv6 loopback address, as `--host` may be given it: bare, or in brackets as in a URL.
pub(crate) const IPV6_HOSTS: [&str; 2] = ["::1", "[::1]"];

/// `--host ::1` and `--host [::1]` both work, and the first line names the address as a
/// URL must: `listening on http://[::1]:PORT`. (Without the brackets, `http://::1:8080`
/// is no URL at all: no client can tell where the address ends and the port begins.)
/// Where this machine cannot bind `[::1]` (IPv6 is off), the probe says so and skips.
pub fn ipv6_host(target: &Target) -> Probed {
    crate::probes::needs_own_server(target)?;
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        return Err(Stop::Skipped(
            "this machine cannot bind [::1]:0 (no IPv6 loopback), so --host ::1 was NOT checked",
        ));
    }
    for host in IPV6_HOSTS {
        let server = target
            .start(Options { host: Some(host.into()), ..Options::default() })
            .map_err(|stop| match stop {
                Stop::Broken(what) => broken(format!("started with --host {host}: {what}")),
                skipped => skipped,
            })?;
        let expected = format!("listening on http://[::1]:{}", server.address.port());
        check!(
            server.listening == expected,
            "started with --host {host}, the first line on stdout is {:?}, expected {expected:?}",
            server.listening
        );
        let what = format!("GET /hello to [::1] (started with --host {host})");
        let response = exchange(&server, &get("/hello"))?;
        expect_status(&response, &[200], &what)?;
        check!(response.body == HELLO, "{what}: body {:?}", response.text());
    }
    Ok(Outcome::Works)
}

/// What `--help` says the server under test accepts, for a probe that uses a flag only
/// some chapters have (`--upstream-limit` from chapter 8). Skips for someone else's server.
pub fn usage(target: &Target) -> Result<String, Stop> {
    let Launch::Start { program } = &target.launch else {
        return Err(Stop::Skipped(crate::probes::NEEDS_OWN_SERVER));
    };
    let help = run_to_end(program, &["--help"])?;
    check!(help.code == Some(0), "--help: exit {:?}, expected 0", help.code);
    Ok(help.stdout)
}

/// What a short run of the program left behind.
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the chapter's program with `args` and waits (a few seconds at most) for it to
/// end by itself, as `--help` and bad flags must.
fn run_to_end(program: &Program, args: &[&str]) -> Result<Ended, Stop> {
    let args: Vec<_> = args.iter().map(|arg| arg.into()).collect();
    // "`--port 8080`" for ours, "`python3 my_server.py --port 8080`" for a reader's.
    let shown = program.typed(&args).unwrap_or_else(|| format!("`{}`", args_text(&args)));
    let mut command = program.command(&args, None);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let Spawned { mut child, group } = ProcessGroup::spawn(&mut command, program)
        .map_err(|error| broken(format!("cannot run {shown}: {error}")))?;
    let deadline = Instant::now() + crate::probes::PATIENCE;
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() >= deadline {
            drop(group);
            let _ = child.kill();
            let _ = child.wait();
            return Err(broken(format!(
                "{shown} was still running after {} s",
                crate::probes::PATIENCE.as_secs()
            )));
        }
        // std has no "wait with a timeout", so we look again shortly.
        thread::sleep(Duration::from_millis(10));
    }
    // Whatever a reader's command left running goes too, or it could hold the pipes open.
    drop(group);
    // It has ended, so its pipes are closed and hold all it wrote.
    let output = child
        .wait_with_output()
        .map_err(|error| broken(format!("reading what {shown} printed: {error}")))?;
    Ok(Ended {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    let ipv6: Vec<String> = IPV6_HOSTS.iter().map(|host| format!("--host {host}")).collect();
    vec![
        rule("command_line", STARTING, format!(
            "`--help` prints a usage with the word `usage` in it (in lower case) on standard \
             output and exits 0, within {}.",
            secs(PATIENCE))),
        rule("command_line", STARTING,
            "`--bogus`, `--port seventy`, and `--port` with no value after it: each exits 2, \
             with an error and the usage (the word `usage` again) on standard error, and no \
             stack trace or panic.".to_string()),
        rule("command_line", STARTING,
            "Started with `--host 127.0.0.1 --port P` where another server already listens on \
             P: exactly one line on standard error, and exit status 1.".to_string()),
        rule("ipv6_host", STARTING, format!(
            "{}: both listen on the IPv6 loopback, the first line says `listening on \
             http://[::1]:PORT` (brackets either way), and `GET /hello` to it is answered. \
             (Skipped where the machine has no IPv6.)",
            listed(&ipv6))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    Vec::new()
}
