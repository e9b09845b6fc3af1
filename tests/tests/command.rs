//! The runner's `--command` from the outside, as a course would use it: a server the suite
//! did not build (a copy of chapter 1's program, in a folder whose name has a space), run
//! through the shell, judged, and summed up in the exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use suite::chapters;

/// Chapter 1's program, built as tests/suite.rs builds it, copied where the suite has
/// never seen it. `None` (and the test says so) while chapter 1 does not exist.
fn students_program() -> Option<PathBuf> {
    let chapter = chapters::chapter(1).expect("chapter 1 is in CHAPTERS");
    if !chapter.is_present() {
        suite::harness::print_uncaptured("suite: SKIPPED command tests: no chapter 1 yet");
        return None;
    }
    let build_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("suite-bins");
    let built = chapter.binary(&build_dir).expect("chapter 1 builds");
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("a student's server");
    std::fs::create_dir_all(&folder).expect("a folder for the copy");
    // One file per test process: two test binaries copying onto one file would collide.
    let copy = folder.join(format!("server-{}", std::process::id()));
    std::fs::copy(&built, &copy).expect("copy chapter 1's program");
    Some(copy)
}

/// Runs `suite --command '<program>' ARGS`, with the program's path quoted for the shell.
fn run_suite(program: &Path, args: &[&str]) -> Output {
    let quoted = format!("'{}'", program.display().to_string().replace('\'', r"'\''"));
    Command::new(env!("CARGO_BIN_EXE_suite"))
        .arg("--command")
        .arg(quoted)
        .args(args)
        .output()
        .expect("the suite runs")
}

#[test]
fn command_runs_a_server_the_suite_did_not_build() {
    let Some(program) = students_program() else { return };
    let passing = run_suite(&program, &["--chapter", "1", "--only", "hello"]);
    let stdout = String::from_utf8_lossy(&passing.stdout);
    assert!(passing.status.success(), "{passing:?}");
    assert!(stdout.contains("1 checks: 1 pass, 0 expected limitations, 0 fail"), "{stdout}");

    // Held to chapter 2's expectations, chapter 1's program fails: its Server header
    // names the wrong chapter. A course's script sees it in the exit status.
    let failing = run_suite(&program, &["--chapter", "2", "--only", "hello"]);
    let stdout = String::from_utf8_lossy(&failing.stdout);
    assert_eq!(failing.status.code(), Some(1), "{failing:?}");
    assert!(stdout.contains("1 checks: 0 pass, 0 expected limitations, 1 fail"), "{stdout}");
    assert!(stdout.contains("not \"ch02-poll\""), "{stdout}");
    let _ = std::fs::remove_file(program);
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
