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
    let report = render(&checked);
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
    let report = render(&checked);
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
    let report = render(&checked);
    assert!(report.contains(&format!("  [A] 3 checks: {rule}\n")), "{report}");
    assert!(
        line_of(&report, "not_found")
            .ends_with("FAIL [A]: GET /nowhere HTTP/1.1: answered 404 (no)"),
        "{report}"
    );
}

/// Two alike are not "several"; and nothing is grouped across chapters.
#[test]
fn two_alike_are_not_a_shared_cause() {
    let what = "GET /hello HTTP/1.1: the connection closed after 0 bytes";
    let checked = [broken("hello", what), broken("echo", what), passed("files")];
    let report = render(&checked);
    assert!(!report.contains("causes shared"), "{report}");
    assert_eq!(report.matches(what).count(), 2, "{report}");
}

/// The summary is the last line, after the rows of the capability table, and nothing
/// repeats the failures after it.
#[test]
fn the_summary_is_the_last_line() {
    let checked = [passed("hello"), broken("echo", "POST /echo: expected 200, got 500")];
    let report = render(&checked);
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
    let report = render(&checked);
    assert!(report.contains("  row 4: expected 400"), "{report}");
    assert!(!report.contains("  row 5: expected 400"), "{report}");
    assert!(report.contains("... and 15 more lines (`--only conformance_corpus` shows them all)"));
    let alone = render(&[broken("conformance_corpus", &what)]);
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
    let report = render(&checked);
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
    let report = render(&checked);
    assert!(line_of(&report, "idle_client").contains("pass, and ahead of ch01"), "{report}");
    assert!(report.contains("(expected: lacks it): 1 check, ahead of the chapter in idle_client"));
    assert!(report.ends_with("1 checks: 1 pass, 0 expected limitations, 0 fail, 0 skipped\n"));
}

#[test]
fn steady_makes_ports_and_sites_the_same() {
    assert_eq!(
        steady("at 127.0.0.1:40123 with --root /tmp/suite-site-77-3-12345/root, 127.0.0.1:"),
        "at 127.0.0.1:PORT with --root /tmp/suite-site-N/root, 127.0.0.1:"
    );
}
