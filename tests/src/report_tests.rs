//! The report's rules, on verdicts made up for the purpose.

use super::*;
use crate::chapters;
use crate::probes::{self, Probe};

fn chapter_1() -> &'static Chapter {
    chapters::chapter(1).expect("chapter 1")
}

fn probe(name: &str) -> &'static Probe {
    probes::find(name).unwrap_or_else(|| panic!("no probe {name}"))
}

fn broken(name: &str, what: &str) -> Checked {
    (chapter_1(), probe(name), Verdict::Fail(Failure::Broken, what.to_string()))
}

fn passed(name: &str) -> Checked {
    (chapter_1(), probe(name), Verdict::Pass)
}

fn line_of<'a>(report: &'a str, probe: &str) -> &'a str {
    report
        .lines()
        .find(|line| line.split_whitespace().nth(1) == Some(probe))
        .unwrap_or_else(|| panic!("no line for {probe} in\n{report}"))
}

/// A server that refuses `--root` fails every check that passes it, the same way: said
/// once, at the top, with what differs (the site's folder) made the same.
#[test]
fn a_cause_shared_by_several_checks_is_said_once_at_the_top() {
    let refused = |site: &str| {
        format!(
            "`./server` exited without printing `listening on http://HOST:PORT` (exit \
             status: 2) (ran `./server --host 127.0.0.1 --port 0 --root \
             /tmp/suite-site-{site}/root`); its stderr ends: unknown flag --root"
        )
    };
    let checked = [
        passed("hello"),
        broken("files", &refused("11-0-123")),
        broken("big_file_intact", &refused("11-1-456")),
        broken("path_traversal", &refused("11-2-789")),
        broken("echo", "POST /echo HTTP/1.1: expected 200, got 404 (not found)"),
    ];
    let report = render(&checked, None);
    let lines: Vec<&str> = report.lines().collect();
    assert!(lines[0].starts_with("causes shared by several checks"), "{report}");
    assert_eq!(
        lines[1],
        "  [A] 3 checks: `./server` exited without printing `listening on http://HOST:PORT` \
         (exit status: 2); its stderr ends: unknown flag --root"
    );
    for name in ["files", "big_file_intact", "path_traversal"] {
        assert!(line_of(&report, name).ends_with("FAIL [A]"), "{report}");
    }
    assert!(line_of(&report, "echo")
        .ends_with("FAIL: POST /echo HTTP/1.1: expected 200, got 404 (not found)"));
    assert_eq!(report.matches("unknown flag --root").count(), 1, "said once:\n{report}");
}

/// What a check passed the server is left out of a shared cause: one that refuses a later
/// chapter's flag refuses it whatever its value.
#[test]
fn the_command_line_is_left_out_of_a_shared_cause() {
    let refused = |value: &str| {
        format!(
            "`./server` exited without printing `listening on http://HOST:PORT` (exit \
             status: 1) (ran `./server --host 127.0.0.1 --port 0 --header-timeout {value}`); \
             its stderr ends: no such flag: --header-timeout"
        )
    };
    let checked = [
        broken("header_timeout", &refused("0.5")),
        broken("slowloris", &refused("1")),
        broken("ten_thousand_idle", &refused("60")),
        broken("send_timeout", "ran `./server --send-timeout 0.5`: something else"),
    ];
    let report = render(&checked, None);
    assert!(report.contains("  [A] 3 checks: `./server` exited"), "{report}");
    assert!(!report.contains("--header-timeout 0.5"), "{report}");
    assert!(line_of(&report, "send_timeout").ends_with("something else"), "{report}");
}

/// The same rule broken by every answer: the cause is the rule, and each check keeps what
/// it asked and what came.
#[test]
fn a_rule_every_answer_breaks_is_the_cause() {
    let rule = "it lacks Connection: close, and ch01 (says the manifest) has no keep-alive";
    let checked = [
        broken("hello", &format!("GET /hello HTTP/1.1: answered 200 (Hello, world!), but {rule}")),
        broken("not_found", &format!("GET /nowhere HTTP/1.1: answered 404 (no), but {rule}")),
        broken(
            "half_close",
            &format!(
                "after clients that half-closed, GET /hello failed: GET /hello HTTP/1.1: \
                      answered 200 (Hello, world!), but {rule}"
            ),
        ),
    ];
    let report = render(&checked, None);
    assert!(report.contains(&format!("  [A] 3 checks: {rule}\n")), "{report}");
    // What failed: the answer, and the letter where the rule it broke would be said. An
    // answer alone ("answered 404 (no)") would read like a success.
    assert!(
        line_of(&report, "not_found")
            .ends_with(" FAIL: GET /nowhere HTTP/1.1: answered 404 (no), but [A]"),
        "{report}"
    );
    assert!(
        line_of(&report, "half_close").ends_with(
            " FAIL: after clients that half-closed, GET /hello failed: GET /hello HTTP/1.1: \
             answered 200 (Hello, world!), but [A]"
        ),
        "{report}"
    );
}

/// A shared cause is named by its letter wherever a failure says it: in the middle of a
/// line (`closed_stderr` adds a clause after it), and in the rows of the corpus. Those
/// checks count among the ones that have it, and their rows of the table name it.
#[test]
fn a_cause_is_named_by_its_letter_wherever_it_is_said() {
    let rule = "it lacks Connection: close, and ch01 (says the manifest) has no keep-alive";
    let answer = |request: &str, answer: &str| format!("{request} HTTP/1.1: {answer}, but {rule}");
    let corpus = format!(
        "2 of 110 corpus rows failed:\n  row 0 (§3: one space) [GET  /hello]: the answer: \
         answered 400 (bad request), but {rule}\n  row 6 (§3.2: a target starts with '/') \
         [GET hello]: expected [400], got 404 (not found)"
    );
    let checked = [
        broken("hello", &answer("GET /hello", "answered 200 (Hello, world!)")),
        broken("stats_route", &answer("GET /stats", "answered 200 (connections_open 1)")),
        broken("files", &answer("GET /files/hello.txt", "answered 200 (hello from a file)")),
        broken(
            "closed_stderr",
            &format!(
                "{}, with stderr closed",
                answer("GET /hello", "answered 200 (Hello, world!)")
            ),
        ),
        broken("conformance_corpus", &corpus),
    ];
    let report = render(&checked, None);
    assert_eq!(report.matches(rule).count(), 1, "said once, at the top:\n{report}");
    assert!(report.contains(&format!("  [A] 5 checks: {rule}\n")), "{report}");
    assert!(
        line_of(&report, "closed_stderr").ends_with(
            " FAIL: GET /hello HTTP/1.1: answered 200 (Hello, world!), but [A], with stderr \
             closed"
        ),
        "{report}"
    );
    assert!(
        report.contains("[GET  /hello]: the answer: answered 400 (bad request), but [A]\n"),
        "{report}"
    );
    assert!(report.contains("[GET hello]: expected [400], got 404 (not found)\n"), "{report}");
    assert!(
        report.contains(
            "broken: hello [A], stats_route [A], files [A], closed_stderr [A], \
             conformance_corpus [A]\n"
        ),
        "{report}"
    );
}

/// A cause is a whole clause: the same words inside another clause, or as the start of a
/// longer word, are left alone.
#[test]
fn a_cause_is_named_only_where_a_clause_is_the_cause() {
    let cause = "the server closed the connection after 0 bytes";
    let checked = [
        broken("hello", &format!("GET /hello HTTP/1.1: {cause}")),
        broken("echo", &format!("POST /echo HTTP/1.1: {cause}")),
        broken("files", &format!("GET /files/a HTTP/1.1: {cause}")),
        broken("not_found", &format!("GET /nowhere: then {cause}")),
        broken("index_page", &format!("GET /: {cause}s and more")),
    ];
    let report = render(&checked, None);
    assert!(report.contains(&format!("  [A] 3 checks: {cause}\n")), "{report}");
    assert!(line_of(&report, "echo").ends_with(" FAIL: POST /echo HTTP/1.1: [A]"), "{report}");
    assert!(line_of(&report, "not_found").ends_with(&format!("then {cause}")), "{report}");
    assert!(line_of(&report, "index_page").ends_with(&format!("{cause}s and more")), "{report}");
}

/// A reader's server is not the chapter it is held to: every line begins with what the
/// reader gave the suite (the command), and the rows say whose they are.
#[test]
fn a_readers_server_is_named_by_its_command() {
    let command = "`python3 tests/student/server.py`";
    let limited = Verdict::ExpectedLimitation { why: "ch01 serves one client", seen: "so".into() };
    let checked = [
        passed("hello"),
        broken("echo", "POST /echo HTTP/1.1: expected 200, got 404 (not found)"),
        (chapter_1(), probe("idle_client"), limited),
    ];
    let report = render(&checked, Some(command));
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines[0], format!("{command} hello                       pass"), "{report}");
    assert!(lines[1].starts_with(&format!("{command} echo ")), "{report}");
    assert!(lines[2].starts_with(&format!("{command} idle_client ")), "{report}");
    // The limitation's second line stands under its first, past the wider first column.
    let indent = lines[2].find("expected limitation").expect("the label");
    assert_eq!(lines[3], format!("{:indent$}seen: so", ""), "{report}");
    assert!(!report.lines().any(|line| line.starts_with("ch01-blocking")), "{report}");
    assert!(report.ends_with("\n3 checks: 1 pass, 1 expected limitation, 1 fail, 0 skipped\n"));
    assert!(
        report.contains(&format!(
            "by row of the capability table (what ch01-blocking must show, and so must \
             {command}):"
        )),
        "{report}"
    );
}

/// One of anything is singular: "1 check", "1 of 1 check fails".
#[test]
fn one_check_is_one_check() {
    let report = render(&[broken("slowloris", "could connect only 130 of 300")], None);
    assert!(
        report.contains("(expected: lacks it): 1 of 1 check fails; broken: slowloris\n"),
        "{report}"
    );
    assert!(report.ends_with("\n1 check: 0 pass, 0 expected limitations, 1 fail, 0 skipped\n"));
    assert_eq!(plural(0, "probe"), "0 probes");
    assert_eq!(plural(1, "probe"), "1 probe");
}

/// Two alike are not "several"; and nothing is grouped across chapters.
#[test]
fn two_alike_are_not_a_shared_cause() {
    let what = "GET /hello HTTP/1.1: the connection closed after 0 bytes";
    let checked = [broken("hello", what), broken("echo", what), passed("files")];
    let report = render(&checked, None);
    assert!(!report.contains("causes shared"), "{report}");
    assert_eq!(report.matches(what).count(), 2, "{report}");
}

/// The summary is the last line, after the rows of the capability table, and nothing
/// repeats the failures after it.
#[test]
fn the_summary_is_the_last_line() {
    let checked = [passed("hello"), broken("echo", "POST /echo: expected 200, got 500")];
    let report = render(&checked, None);
    assert_eq!(
        report.lines().last(),
        Some("2 checks: 1 pass, 0 expected limitations, 1 fail, 0 skipped")
    );
    assert_eq!(report.matches("expected 200, got 500").count(), 1, "{report}");
    let by_row = report.find("by row of the capability table").expect("the rows");
    assert!(by_row > report.find("expected 200, got 500").expect("the failure"));
}

/// A failure of many lines (the corpus) shows its first few, and how to see the rest;
/// run alone, all of it.
#[test]
fn a_long_failure_is_cut_unless_it_runs_alone() {
    let rows: Vec<String> =
        (0..20).map(|row| format!("  row {row}: expected 400, got 200")).collect();
    let what = format!("20 of 110 corpus rows failed:\n{}", rows.join("\n"));
    let checked = [broken("conformance_corpus", &what), passed("hello")];
    let report = render(&checked, None);
    assert!(report.contains("  row 4: expected 400"), "{report}");
    assert!(!report.contains("  row 5: expected 400"), "{report}");
    assert!(report.contains("... and 15 more lines (`--only conformance_corpus` shows them all)"));
    let alone = render(&[broken("conformance_corpus", &what)], None);
    assert!(alone.contains("  row 19: expected 400"), "{alone}");
}

/// A row of the capability table that fails says what the table expects, and why each of
/// its checks failed: broken, or lacking what the chapter should have.
#[test]
fn a_row_says_why_its_checks_failed() {
    let chapter_3 = chapters::chapter(3).expect("chapter 3");
    let lacks = Verdict::Fail(Failure::Lacks, "ch03-event-loop should have it, but no".into());
    let checked = [
        (chapter_3, probe("keep_alive"), lacks),
        (chapter_3, probe("pipelining"), Verdict::Fail(Failure::Broken, "GET /: 500".into())),
        (chapter_3, probe("idle_client"), Verdict::Pass),
    ];
    let report = render(&checked, None);
    assert!(
        report.contains(
            "  FAIL  keep-alive and pipelining (expected: has it): 2 of 2 checks fail; broken: \
             pipelining; lacks it: keep_alive\n"
        ),
        "{report}"
    );
    assert!(report.contains(
        "  ok    an idle or slow client does not hold up others (expected: has it): 1 check\n"
    ));
}

/// A reader's server that does more than the chapter it is held to passes, and its row
/// says so.
#[test]
fn a_readers_server_ahead_of_its_chapter_passes() {
    let ahead = Verdict::Ahead { why: "ch01 serves one client at a time" };
    let checked = [(chapter_1(), probe("idle_client"), ahead)];
    let report = render(&checked, None);
    assert!(line_of(&report, "idle_client").contains("pass, and ahead of ch01"), "{report}");
    assert!(report.contains("(expected: lacks it): 1 check, ahead of the chapter in idle_client"));
    assert!(report.ends_with("\n1 check: 1 pass, 0 expected limitations, 0 fail, 0 skipped\n"));
}

#[test]
fn steady_makes_ports_and_sites_the_same() {
    assert_eq!(
        steady("at 127.0.0.1:40123 with --root /tmp/suite-site-77-3-12345/root, 127.0.0.1:"),
        "at 127.0.0.1:PORT with --root /tmp/suite-site-N/root, 127.0.0.1:"
    );
}

/// A long command would push every line's text past the page: the column names its program.
#[test]
fn a_long_command_is_named_by_its_program() {
    assert_eq!(command_column("python3 server.py"), "`python3 server.py`");
    assert_eq!(command_column("/tmp/ana-ch04/target/release/ana-ch04"), "`ana-ch04`");
    assert_eq!(
        command_column("python3 /home/student/lab/src/server.py --threads 1"),
        "`server.py`"
    );
    assert_eq!(
        command_column("node-with-a-long-name --and --many --flags --here"),
        "`node-with-a-long-name`"
    );
    // A path with a space, quoted for the shell, is one word.
    assert_eq!(command_column(r"'/home/ana/a student'\''s server/server' --threads 1"), "`server`");
    assert_eq!(command_column(r#"python3 "/home/ana/my labs/ch4/server.py""#), "`server.py`");
    assert_eq!(command_column(r"/home/ana/my\ labs/ch4/target/release/ana-ch4 -v"), "`ana-ch4`");
}

fn skipped(name: &str, why: &str) -> Checked {
    (chapter_1(), probe(name), Verdict::Skipped(why.to_string()))
}

/// A skip checked nothing: the summary says how many, and why, each reason once.
#[test]
fn the_summary_says_why_checks_were_skipped() {
    let own = "needs to start the server";
    let one = [passed("hello"), skipped("files", own), skipped("ipv6_host", own)];
    assert_eq!(
        summary_line(&one),
        "3 checks: 1 pass, 0 expected limitations, 0 fail, 2 skipped (needs to start the server)"
    );
    let two = [skipped("files", own), skipped("ipv6_host", "no IPv6"), skipped("echo", own)];
    assert_eq!(
        render(&two, None).lines().last(),
        Some(
            "3 checks: 0 pass, 0 expected limitations, 0 fail, 3 skipped (2: needs to start the \
             server; 1: no IPv6)"
        )
    );
    assert_eq!(skip_reasons(&two), [(own, 2), ("no IPv6", 1)]);
}

/// A failure wins over a skip, and a skip over a pass, unless skips are allowed.
#[test]
fn a_skip_is_never_a_pass() {
    let own = "needs to start the server";
    assert_eq!(exit_status(&[passed("hello")], false), 0);
    assert_eq!(exit_status(&[passed("hello"), skipped("files", own)], false), SKIPPED);
    assert_eq!(exit_status(&[passed("hello"), skipped("files", own)], true), 0);
    let both = [skipped("files", own), broken("echo", "POST /echo: expected 200, got 500")];
    assert_eq!(exit_status(&both, false), FAILED);
    assert_eq!(exit_status(&both, true), FAILED);
    assert_eq!((FAILED, SKIPPED), (1, 3));
}
