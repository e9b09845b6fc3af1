//! `write_line` against a stderr pipe that nobody reads for a while: it must not wait, and
//! what gets through must be in order, with the count of what did not.
//!
//! The test runs itself again as a child process (the same test binary, this one test)
//! whose stderr is a pipe we hold and do not read, because a test cannot make its own
//! stderr a full pipe without taking the harness's output with it.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// Set in the child's environment: "you are the child, write the lines".
const CHILD: &str = "SHARED_TRACE_TESTS_CHILD";
/// Far more than a pipe holds (64 KiB on Linux; "line 12345\n" is 11 bytes).
const LINES: usize = 50_000;

#[test]
fn a_full_stderr_drops_lines_and_counts_them() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "trace::tests::a_full_stderr_drops_lines_and_counts_them"])
        .args(["--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs");
    let stdout = BufReader::new(child.stdout.take().expect("piped"));

    // 1. The child writes LINES lines to a stderr nobody reads: it must finish, not wait.
    let started = Instant::now();
    let said = wait_for_line(stdout, &mut child, "written", Duration::from_secs(20));
    assert!(said, "the child did not finish writing within 20 s: a full stderr made it wait");
    let writing_took = started.elapsed();

    // 2. Now we read the pipe (all of it, until the child exits), and let the child write
    //    one more line, which must say how many were dropped before it.
    let mut stderr = child.stderr.take().expect("piped");
    let reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    child.stdin.take().expect("piped").write_all(b"go\n").expect("the child waits for us");
    assert!(wait_for_exit(&mut child, Duration::from_secs(20)), "the child did not exit");
    let text = reader.join().expect("the reader");

    let lines: Vec<&str> = text.lines().collect();
    let got_through = lines.iter().take_while(|line| line.starts_with("line ")).count();
    assert!(got_through > 0 && got_through < LINES, "{got_through} of {LINES} lines got through");
    for (index, line) in lines[..got_through].iter().enumerate() {
        assert_eq!(*line, format!("line {index}"), "the lines that got through are in order");
    }
    let dropped = LINES - got_through;
    assert_eq!(
        &lines[got_through..],
        [format!("({dropped} lines dropped: stderr was full)").as_str(), "the last line"],
        "the line after the gap says how many were dropped (writing took {writing_took:?})"
    );
}

/// The child's side: LINES lines, "written" on stdout, then (when the parent says "go")
/// one last line.
fn child() {
    for index in 0..LINES {
        super::write_line(format_args!("line {index}"));
    }
    println!("written");
    let mut go = String::new();
    let _ = std::io::stdin().read_line(&mut go);
    // The parent is reading now: wait (here, in the test, not in `write_line`) until the
    // pipe has room, so that the last line is sure to get through.
    let stderr = std::io::stderr();
    let _ =
        poll(&mut [PollFd::new(stderr.as_fd(), PollFlags::POLLOUT)], PollTimeout::from(10_000u16));
    super::write_line(format_args!("the last line"));
}

/// Reads `stdout` until a line that ends with `wanted` (the harness may have begun the
/// line with the test's name), or until `patience` has passed: then kills the child and
/// says false. The reading is done by a thread, so that we can stop waiting for it.
fn wait_for_line(
    stdout: BufReader<impl Read + Send + 'static>, child: &mut Child, wanted: &'static str,
    patience: Duration,
) -> bool {
    let (found, seen) = mpsc::channel();
    thread::spawn(move || {
        let mut lines = stdout.lines().map_while(Result::ok);
        let _ = found.send(lines.any(|line| line.ends_with(wanted)));
        lines.for_each(drop); // the harness's last words: a closed pipe would fail the child
    });
    let saw_it = seen.recv_timeout(patience).unwrap_or(false);
    if !saw_it {
        let _ = child.kill();
    }
    saw_it
}

/// Waits for the child to exit successfully, up to `patience`.
fn wait_for_exit(child: &mut Child, patience: Duration) -> bool {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return status.success();
        }
        thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    false
}
