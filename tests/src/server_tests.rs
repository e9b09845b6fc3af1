use super::*;
use crate::chapters;

fn run(program: &Program, args: &[&str], fd_limit: Option<u32>) -> String {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let output = program.command(&args, fd_limit).output().expect("sh runs");
    assert!(output.status.success(), "{program:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The contract's flags reach a reader's command as they are, one argument each: the
/// shell's quoting, word splitting and `$` never touch them.
#[test]
fn a_command_gets_the_arguments_whole() {
    let printf = Program::Shell("printf '[%s]\\n'".into());
    let args = ["--root", "/tmp/a site with spaces", "x\"y'z $HOME *", ""];
    let printed = run(&printf, &args, None);
    assert_eq!(printed, "[--root]\n[/tmp/a site with spaces]\n[x\"y'z $HOME *]\n[]\n");
    // Quoting inside the command is the shell's, as the reader typed it.
    let quoted = Program::Shell("printf '[%s]\\n' 'my server.py'".into());
    assert_eq!(run(&quoted, &["--port", "0"], None), "[my server.py]\n[--port]\n[0]\n");
}

/// `fd_limit` lowers the limit for both kinds of program, and the arguments still
/// arrive whole.
#[test]
fn the_descriptor_limit_applies_to_both_kinds() {
    let shell = Program::Shell("sh -c 'ulimit -n; printf \"[%s]\\n\" \"$@\"' sh".into());
    assert_eq!(run(&shell, &["a b"], Some(64)), "64\n[a b]\n");
    let binary = Program::Binary("/bin/sh".into());
    let args = ["-c", "ulimit -n; printf '[%s]\\n' \"$@\"", "sh", "a b"];
    assert_eq!(run(&binary, &args, Some(64)), "64\n[a b]\n");
}

/// `exec`: the process we start is the reader's program itself, not a shell waiting
/// for it, so signals and `/proc/PID/` reach the server.
#[test]
fn a_command_is_the_process_we_start() {
    let program = Program::Shell("sh -c 'echo $$' sh".into());
    let mut command = program.command(&[], None);
    command.stdout(Stdio::piped());
    let Spawned { child, group } = ProcessGroup::spawn(&mut command, &program).expect("sh");
    let pid = child.id();
    let output = child.wait_with_output().expect("output");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), pid.to_string());
    assert!(group.is_some(), "a reader's command has a group of its own");
}

/// The group takes with it whatever the command started: here, a `sleep` in the
/// background of a shell script.
#[test]
fn dropping_the_group_kills_all_it_started() {
    let program = Program::Shell("sh -c 'sleep 60 & echo $!; wait' sh".into());
    let mut command = program.command(&[], None);
    command.stdout(Stdio::piped());
    let Spawned { mut child, group } = ProcessGroup::spawn(&mut command, &program).expect("sh");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped");
    BufReader::new(stdout).read_line(&mut line).expect("the sleep's pid");
    let sleeper = line.trim().to_string();
    drop(group);
    let _ = child.wait();
    // Gone (`ps` lists nothing), or a zombie nobody has reaped yet (`Z`): either way, no
    // longer running. `ps`, not /proc, so that macOS and the BSDs check it too.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let ps = Command::new("ps").args(["-o", "stat=", "-p", &sleeper]).output();
        let state = String::from_utf8_lossy(&ps.expect("ps").stdout).trim().to_string();
        if state.is_empty() || state.starts_with('Z') {
            break;
        }
        assert!(Instant::now() < deadline, "the background sleep survived: {state}");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_first_line_gives_the_address_or_a_hint() {
    let v4 = listening_address("listening on http://127.0.0.1:8080");
    assert_eq!(v4, Ok(SocketAddr::from(([127, 0, 0, 1], 8080))));
    assert!(listening_address("listening on http://[::1]:8080").is_ok());
    assert!(listening_address("listening on http://::1:8080").unwrap_err().contains("brackets"));
    assert_eq!(listening_address("hello"), Err(""));
}

#[test]
fn an_exit_status_says_what_it_can() {
    assert!(why_it_ended(Some(127), true, None).contains("no such program"));
    // A program of ours that exits 127 is not the shell's "not found".
    assert_eq!(why_it_ended(Some(127), false, None), "");
    assert_eq!(why_it_ended(Some(126), false, None), ": the program is not executable");
    assert!(why_it_ended(Some(2), true, None).contains("a refused command line?"));
    let named = why_it_ended(Some(1), true, Some("--threads"));
    assert!(named.contains("its stderr names --threads, a later chapter's flag"), "{named}");
    assert_eq!(why_it_ended(Some(3), true, None), "");
    assert_eq!(why_it_ended(None, true, None), "");
}

fn some_chapter() -> &'static Chapter {
    chapters::chapter(1).expect("chapter 1")
}

/// A reader's server rejects a later chapter's flag in its own words (Python's
/// argparse here): it is started again without it, as ours are.
#[test]
fn a_flag_rejected_in_other_words_is_dropped() {
    let script = "case \"$*\" in *--threads*) echo \"error: unrecognized arguments: \
                  --threads 2\" >&2; exit 2;; esac; echo listening on http://127.0.0.1:9; \
                  sleep 60";
    let program = Program::Shell(format!("sh -c '{script}' sh"));
    let options = Options { if_supported: vec![("--threads", "2".into())], ..Options::default() };
    let server = Server::start(some_chapter(), &program, &options).expect("started");
    assert_eq!(server.dropped_flags, ["--threads"]);
    assert_eq!(server.address, SocketAddr::from(([127, 0, 0, 1], 9)));
}

/// What a reader sees when their command does not start: what ran, and why.
#[test]
fn a_command_that_does_not_start_says_why() {
    let chapter = some_chapter();
    let start = |line: &str| {
        let program = Program::Shell(line.into());
        Server::start_within(chapter, &program, &Options::default(), Duration::from_secs(1))
            .err()
            .expect("does not start")
    };
    let missing = start("no-such-program-in-the-suite");
    assert!(missing.contains("127: the shell found no such program"), "{missing}");
    assert!(missing.contains("(ran `no-such-program-in-the-suite --host 127.0.0.1"));
    let silent = start("sleep 5 #");
    assert!(silent.contains("printed no first line on stdout within 1 s"), "{silent}");
    assert!(silent.contains("flush"), "{silent}");
    let early = start("sh -c 'echo oops >&2; exit 3' sh");
    assert!(early.contains("exit status: 3") && early.contains("oops"), "{early}");
    let refusing = start("sh -c 'echo unknown flag --root >&2; exit 2' sh");
    assert!(
        refusing.contains(
            "exit status: 2: a refused command line? Every chapter takes \
                               --host, --port, --root"
        ),
        "{refusing}"
    );
    assert!(refusing.contains("unknown flag --root"), "{refusing}");
    let wrong = start("echo hello #");
    assert!(wrong.contains("first line on stdout is \"hello\""), "{wrong}");
}
