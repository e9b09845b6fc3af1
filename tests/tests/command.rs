//! The runner's `--command` from the outside, as a course would use it: a server the suite
//! did not build (a copy of chapter 1's program, in a folder whose name has a space; a
//! student's server in Python), run through the shell, judged, and summed up in the report
//! (or the JSON and JUnit XML of a gradebook) and the exit status: 1 for a failure, 3 for
//! a skip, 0 for neither.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use suite::chapters::{self, workspace_root};
use suite::harness::print_uncaptured;
use suite::manifest::MANIFEST;
use suite::probes::{NEEDS_OWN_SERVER, NO_IO_URING, PROBES};
use suite::server::{Options, Program, Server};

/// Chapter 1's program, built as tests/suite.rs builds it, copied where the suite has
/// never seen it, for the test `test`. `None` (and the test says so) while chapter 1 does
/// not exist.
fn students_program(test: &str) -> Option<PathBuf> {
    let chapter = chapters::chapter(1).expect("chapter 1 is in CHAPTERS");
    if !chapter.is_present() {
        print_uncaptured("suite: SKIPPED command tests: no chapter 1 yet");
        return None;
    }
    let build_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("suite-bins");
    let built = chapter.binary(&build_dir).expect("chapter 1 builds");
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("a student's server");
    std::fs::create_dir_all(&folder).expect("a folder for the copy");
    // One file per test and process: a copy written over a program another test is
    // starting makes that start fail ("Text file busy"). And copied by `cp`, not here: a
    // file this process holds open to write is inherited by the child any other test forks
    // in that moment, until it execs, and running the copy meanwhile fails the same way.
    let copy = folder.join(format!("server-{}-{test}", std::process::id()));
    let copied = Command::new("cp").arg(&built).arg(&copy).status().expect("cp runs");
    assert!(copied.success(), "copy chapter 1's program");
    Some(copy)
}

/// The program's path quoted for the shell: the command the tests give the suite.
fn quoted(program: &Path) -> String {
    format!("'{}'", program.display().to_string().replace('\'', r"'\''"))
}

/// Runs `suite --command '<program>' ARGS`.
fn run_suite(program: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_suite"))
        .arg("--command")
        .arg(quoted(program))
        .args(args)
        .output()
        .expect("the suite runs")
}

#[test]
fn command_runs_a_server_the_suite_did_not_build() {
    let Some(program) = students_program("command") else { return };
    let passing = run_suite(&program, &["--chapter", "1", "--only", "hello"]);
    let stdout = String::from_utf8_lossy(&passing.stdout);
    assert!(passing.status.success(), "{passing:?}");
    assert!(stdout.contains("1 check: 1 pass, 0 expected limitations, 0 fail"), "{stdout}");
    // The line names the program (a long path by its file name), not chapter 1, which is
    // only what it is held to.
    let name = program.file_name().expect("a file").to_string_lossy();
    let line = format!("`{name}` hello ");
    assert!(stdout.lines().next().is_some_and(|first| first.starts_with(&line)), "{stdout}");

    // Held to chapter 3's expectations, chapter 1's program fails: it has no keep-alive.
    // A course's script sees it in the exit status, and the row says why: it lacks it.
    let failing = run_suite(&program, &["--chapter", "3", "--only", "pipelining"]);
    let stdout = String::from_utf8_lossy(&failing.stdout);
    assert_eq!(failing.status.code(), Some(1), "{failing:?}");
    assert!(stdout.contains("1 check: 0 pass, 0 expected limitations, 1 fail"), "{stdout}");
    assert!(
        stdout.contains(
            "  FAIL  keep-alive and pipelining (expected: has it): 1 of 1 check fails; lacks \
             it: pipelining\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains(" FAIL: held to ch03-event-loop, it should have "), "{stdout}");
    let _ = std::fs::remove_file(program);
}

/// A server that refuses a flag every chapter must take fails every check that passes it,
/// for one reason: the report says it once, at the top, and ends with the summary.
#[test]
fn a_shared_cause_is_said_once_at_the_top() {
    let Some(program) = students_program("shared-cause") else { return };
    // Chapter 1's program, but for a `--root`, which it refuses as a student's might.
    let script = program.with_extension("refuses-root.sh");
    let quoted = quoted(&program);
    let text = format!(
        "#!/bin/sh\ncase \" $* \" in *\" --root \"*) echo \"unknown flag --root\" >&2; exit 2;; \
         esac\nexec {quoted} \"$@\"\n"
    );
    std::fs::write(&script, text).expect("the script");
    let chmod = Command::new("chmod").arg("+x").arg(&script).status().expect("chmod runs");
    assert!(chmod.success());
    // The checks whose name has "file" in it: each serves files from a --root of its own.
    let output = run_suite(&script, &["--chapter", "1", "--only", "file"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let checks = PROBES.iter().filter(|probe| probe.name.contains("file")).count();
    assert!(checks >= 3, "too few checks for a shared cause: {checks}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("causes shared by several checks"), "{stdout}");
    assert!(lines[1].starts_with(&format!("  [A] {checks} checks: ")), "{stdout}");
    assert!(lines[1].contains("exit status: 2: a refused command line?"), "{stdout}");
    assert_eq!(stdout.matches("unknown flag --root").count(), 1, "said once:\n{stdout}");
    assert_eq!(stdout.matches("FAIL [A]").count(), checks, "{stdout}");
    let summary =
        format!("{checks} checks: 0 pass, 0 expected limitations, {checks} fail, 0 skipped");
    assert_eq!(lines.last(), Some(&summary.as_str()), "{stdout}");
    let _ = std::fs::remove_file(script);
    let _ = std::fs::remove_file(program);
}

/// Is there a `python3` to run the student's server with? CI machines may have only the
/// Rust toolchain.
fn python3() -> bool {
    Command::new("python3").arg("--version").output().is_ok_and(|output| output.status.success())
}

/// One check of every row of the capability table, for the test below: those it asserts,
/// and for each other row one that takes a student's blocking server a moment (the
/// conformance corpus alone, every request of it one at a time to a server that waits out
/// the malformed ones, would take longer than all of these; the suite's own cases run every
/// check on every chapter).
const ONE_CHECK_A_ROW: &[&str] = &[
    "hello",
    "path_traversal",
    "idle_client",
    "slow_reader",
    "keep_alive",
    "pipelined_flood",
    "prompt_shutdown",
    "answers_as_ready",
    "departing_clients",
    "keep_alive_timeout",
    "slowloris",
    "slow_disk",
    "big_download_memory",
    "ten_thousand_idle_slowdown",
    "spread_over_loops",
];

/// A student's chapter 1 server in Python (tests/student/server.py), graded as a course
/// would, on one check of every row: the report ending with its summary line, one line
/// per row of the capability table. Its `Server: my-server` is no fault; its bugs are (it
/// follows a symbolic link out of the root).
#[test]
fn a_students_python_server_is_graded_row_by_row() {
    if !python3() {
        print_uncaptured(
            "suite: SKIPPED a_students_python_server_is_graded_row_by_row: no python3 here to \
             run tests/student/server.py",
        );
        return;
    }
    let only: Vec<String> = ONE_CHECK_A_ROW.iter().map(|name| format!("={name}")).collect();
    let output = Command::new(env!("CARGO_BIN_EXE_suite"))
        .current_dir(workspace_root())
        .args(["--command", "python3 tests/student/server.py", "--chapter", "1"])
        .args(["--only", &only.join(",")])
        .output()
        .expect("the suite runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let summary = lines.last().copied().unwrap_or_default();
    assert!(summary.starts_with(&format!("{} checks: ", ONE_CHECK_A_ROW.len())), "{stdout}");
    // 1 if a check failed; else 3 if one was skipped (where this machine has no IPv6, say).
    let status = match (summary.contains(" 0 fail,"), summary.ends_with(" 0 skipped")) {
        (false, _) => 1,
        (true, false) => 3,
        (true, true) => 0,
    };
    assert_eq!(output.status.code(), Some(status), "{summary}");
    // What it names itself is its own business.
    assert!(!stdout.contains("Server header"), "{stdout}");
    // Every check's line begins with the command, and none with the chapter's name.
    let command = "`python3 tests/student/server.py` ";
    assert!(!stdout.lines().any(|line| line.starts_with("ch01-blocking")), "{stdout}");
    let row_of = |name: &str| {
        lines
            .iter()
            .find(|line| {
                line.strip_prefix(command)
                    .is_some_and(|rest| rest.split_whitespace().next() == Some(name))
            })
            .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"))
    };
    assert!(row_of("hello").ends_with(" pass"), "{stdout}");
    assert!(row_of("idle_client").contains("expected limitation"), "{stdout}");
    assert!(row_of("path_traversal").contains("FAIL: GET /files/link-out"), "{stdout}");

    // One line per row of the capability table, each with what the table expects.
    let rows: Vec<&str> = lines
        .iter()
        .skip_while(|line| !line.starts_with("by row of the capability table"))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .copied()
        .collect();
    assert_eq!(rows.len(), MANIFEST.len(), "{stdout}");
    for (row, line) in MANIFEST.iter().zip(&rows) {
        assert!(line.contains(row.description), "{line} is not the row {:?}", row.description);
        let expected = line.contains("(expected: has it)") || line.contains("(expected: lacks it)");
        let kind = ["broken: ", "lacks it: ", "has it anyway: "].iter().any(|k| line.contains(k));
        assert!(expected, "{line}");
        assert!(line.starts_with("  ok ") || (line.starts_with("  FAIL ") && kind), "{line}");
    }
    assert!(rows[0].contains("broken: ") && rows[0].contains("path_traversal"), "{stdout}");
}

#[test]
fn command_that_cannot_start_is_one_line_and_exit_1() {
    let output = Command::new(env!("CARGO_BIN_EXE_suite"))
        .args(["--command", "no-such-server-anywhere", "--chapter", "1"])
        .output()
        .expect("the suite runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(stdout.contains("no-such-server-anywhere"), "{stdout}");
    assert!(stdout.contains("0 checks"), "{stdout}");
}

/// `--format json` and `--format junit`: the same grading, for a gradebook, on stdout and
/// nothing else there; and no progress line on a stderr that is not a terminal.
#[test]
fn a_gradebook_gets_json_and_junit_xml() {
    let Some(program) = students_program("gradebook") else { return };
    let args = ["--chapter", "3", "--only", "=keep_alive,hello", "--format"];
    let json = run_suite(&program, &[&args[..], &["json"]].concat());
    let stdout = String::from_utf8_lossy(&json.stdout);
    assert_eq!(json.status.code(), Some(1), "{json:?}");
    assert!(stdout.starts_with("{\"checks\": [\n") && stdout.ends_with("}}\n"), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[1].contains("\"name\": \"hello\", \"row\": \"routes, HEAD, "), "{stdout}");
    assert!(lines[1].contains("\"verdict\": \"pass\""), "{stdout}");
    assert!(lines[2].contains("\"name\": \"keep_alive\", \"row\": \"keep-alive and "), "{stdout}");
    assert!(lines[2].contains("\"verdict\": \"fail-lacks\""), "{stdout}");
    assert!(stdout.contains("\"exit_status\": 1"), "{stdout}");
    let stderr = String::from_utf8_lossy(&json.stderr);
    assert!(!stderr.contains('\r') && !stderr.contains("[1/2]"), "a progress line: {stderr}");

    let junit = run_suite(&program, &[&args[..], &["junit"]].concat());
    let stdout = String::from_utf8_lossy(&junit.stdout);
    assert_eq!(junit.status.code(), Some(1), "{junit:?}");
    assert!(stdout.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
    assert!(
        stdout.contains("<testsuite name=\"keep-alive and pipelining\" tests=\"1\" failures=\"1\"")
    );
    assert!(stdout.contains("<testcase name=\"hello\" classname=\"basics\""), "{stdout}");
    assert!(stdout.contains("<failure message=\"held to ch03-event-loop, it should have"));
    assert!(stdout.ends_with("</testsuites>\n"), "{stdout}");
    let _ = std::fs::remove_file(program);
}

/// A probe prints what it measured as it goes (for a person, and the book's sessions);
/// with `--format json` that goes to stderr, and stdout holds the document alone.
#[test]
fn what_the_probes_print_stays_out_of_the_document() {
    let Some(program) = students_program("document") else { return };
    let args = ["--chapter", "1", "--only", "=descriptor_exhaustion", "--format", "json"];
    let output = run_suite(&program, &args);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(stderr.contains(": flooded with 200 connections at a limit of "), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(lines[0] == "{\"checks\": [" && lines[2] == "],", "{stdout}");
    assert!(lines[1].contains("\"name\": \"descriptor_exhaustion\""), "{stdout}");
    assert!(lines[3].starts_with("\"summary\": {"), "{stdout}");
    let _ = std::fs::remove_file(program);
}

/// A server the suite did not start: a check that must start its own skips, and a skip is
/// no pass: exit status 3, unless skips are allowed; a failure still wins.
#[test]
fn a_skip_is_never_a_pass() {
    let Some(program) = students_program("skip") else { return };
    let chapter = chapters::chapter(1).expect("chapter 1");
    let server = Server::start(chapter, &Program::Binary(program.clone()), &Options::default())
        .expect("chapter 1's program starts");
    let address = server.address.to_string();
    let addr = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_suite"))
            .args(["--addr", &address])
            .args(args)
            .output()
            .expect("the suite runs")
    };
    let skipped = addr(&["--chapter", "1", "--only", "=hello,=files"]);
    let stdout = String::from_utf8_lossy(&skipped.stdout);
    assert_eq!(skipped.status.code(), Some(3), "{skipped:?}");
    let summary =
        format!("2 checks: 1 pass, 0 expected limitations, 0 fail, 1 skipped ({NEEDS_OWN_SERVER})");
    assert_eq!(stdout.lines().last(), Some(summary.as_str()), "{stdout}");
    let stderr = String::from_utf8_lossy(&skipped.stderr);
    assert!(stderr.contains("suite: exit status 3: 1 of 2 checks skipped"), "{stderr}");

    let allowed = addr(&["--chapter", "1", "--only", "=hello,=files", "--allow-skips"]);
    assert_eq!(allowed.status.code(), Some(0), "{allowed:?}");
    let failed = addr(&["--chapter", "3", "--only", "=keep_alive,=files"]);
    assert_eq!(failed.status.code(), Some(1), "{failed:?}");
    drop(server);
    let _ = std::fs::remove_file(program);
}

/// A server that says io_uring is not available here (as chapters 10 and 11 do in a
/// container that forbids it) cannot be checked: every check skips, saying so, and the
/// exit status is 3, not a pass.
#[test]
fn a_server_without_io_uring_is_skipped_loudly() {
    let script = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("no-io-uring-{}.sh", std::process::id()));
    let text = "#!/bin/sh\necho 'io_uring is not available: forbidden (simulated)' >&2\nexit 1\n";
    std::fs::write(&script, text).expect("the script");
    let chmod = Command::new("chmod").arg("+x").arg(&script).status().expect("chmod runs");
    assert!(chmod.success());
    let output = run_suite(&script, &["--chapter", "10", "--only", "=hello,=echo"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let summary =
        format!("2 checks: 0 pass, 0 expected limitations, 0 fail, 2 skipped ({NO_IO_URING})");
    assert_eq!(stdout.lines().last(), Some(summary.as_str()), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("every check was skipped, so nothing was checked"), "{stderr}");
    let _ = std::fs::remove_file(script);
}
