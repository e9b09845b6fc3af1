use super::*;
use crate::session::parse;

#[test]
fn patterns_match_anywhere_and_read_their_numbers() {
    assert_eq!(
        matches("{} io_uring_enter calls", "6.5 io_uring_enter calls per 100"),
        Some(vec![6.5])
    );
    assert_eq!(matches("requests {}", "requests 205,896"), Some(vec![205896.0]));
    assert_eq!(
        matches("58 checks: * 0 fail", "58 checks: 54 pass, 4 expected limitations, 0 fail"),
        Some(vec![])
    );
    assert_eq!(
        matches("58 checks: * 0 fail", "58 checks: 53 pass, 4 expected limitations, 1 fail"),
        None
    );
    assert_eq!(matches("peak {} MiB", "peak -1.5 MiB"), Some(vec![-1.5]));
    assert_eq!(matches("{}", "no number here"), None);
}

#[test]
fn expectations_attach_to_the_command_below_them() {
    let session = parse(
        "# inputs: x\n# range: 1..20 {} calls per 100\n$ awk x\n# quiet\n$ python3 y\n$ echo z\n",
    )
    .unwrap();
    assert_eq!(
        session.steps[0].expect,
        [Expectation::Range { low: 1.0, high: 20.0, pattern: "{} calls per 100".to_string() }]
    );
    assert_eq!(session.steps[1].expect, [Expectation::Quiet]);
    assert!(session.steps[2].expect.is_empty());
    assert!(parse("$ a\n# quiet\n").is_err(), "an expectation needs a command below it");
    assert!(parse("# quiet\n@ cargo build\n").is_err(), "a hidden step shows nothing to expect");
    assert!(parse("# range: 1-20 {} x\n$ a\n").is_err());
    assert!(parse("# range: 1..20 no number\n$ a\n").is_err());
}

#[test]
fn a_command_that_prints_nothing_fails_unless_it_is_quiet_by_nature() {
    let session = parse(
        "$ grep 'fd 6: response sent' /tmp/t.txt\n$ kill %1\n$ mkdir -p /tmp/s && head -c 1M /dev/zero > /tmp/s/b\n\
         $ cargo run -p x -- --trace 2>/tmp/t &\n# quiet\n$ python3 /tmp/conns.py\n$ echo done\n",
    )
    .unwrap();
    let page = "$ grep 'fd 6: response sent' /tmp/t.txt\n$ kill %1\n\
                $ mkdir -p /tmp/s && head -c 1M /dev/zero > /tmp/s/b\n$ cargo run -p x -- --trace 2>/tmp/t &\n\
                $ python3 /tmp/conns.py\n$ echo done\ndone\n";
    let problems = check(page, &session.steps);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("`$ grep 'fd 6: response sent' /tmp/t.txt` printed nothing"));
    assert!(quiet_by_nature("sleep 0.5; kill -INT %1"));
    assert!(quiet_by_nature("exec 3<>/dev/tcp/127.0.0.1/8080; printf 'GET /\\r\\n' >&3"));
    assert!(quiet_by_nature("server=$!"));
    assert!(!quiet_by_nature("cargo run -p suite 2>/dev/null | tail -1"));
    assert!(!quiet_by_nature("for i in 1 2; do curl -s x; done"));
}

#[test]
fn a_failing_summary_needs_an_expectation_that_matches_it() {
    let session = parse(
        "$ cargo run -p suite -- --chapter 5 | tail -1\n\
                         # expect: 58 checks: * 9 fail\n$ grade ana\n",
    )
    .unwrap();
    let page = "$ cargo run -p suite -- --chapter 5 | tail -1\n\
                58 checks: 53 pass, 4 expected limitations, 1 fail, 0 skipped\n$ grade ana\n\
                chapter 4: 58 checks: 45 pass, 4 expected limitations, 9 fail, 0 skipped\n";
    let problems = check(page, &session.steps);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("counts 1 failing, which the page does not expect"));
    assert_eq!(
        summary_failures("1 check: 0 pass, 0 expected limitations, 1 fail, 0 skipped"),
        Some(1)
    );
    assert_eq!(summary_failures("running 9 tests"), None);
}

#[test]
fn a_figure_outside_its_range_fails() {
    let session = parse(
        "# range: 1..20 {} calls per 100\n$ awk a\n# range: 1..20 {} calls per 100\n$ awk b\n",
    )
    .unwrap();
    let page = "$ awk a\n6.5 calls per 100\n$ awk b\n60.4 calls per 100\n";
    let problems = check(page, &session.steps);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("60.4 is outside the range the page gives, 1..20"));
}

#[test]
fn an_absent_pattern_fails_when_it_is_there() {
    let session =
        parse("# absent: opcode READ\n$ perf script a\n# absent: opcode READ\n$ perf script b\n")
            .unwrap();
    let page = "$ perf script a\n    400 opcode SPLICE\n$ perf script b\n    800 opcode READ\n";
    let problems = check(page, &session.steps);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("`    800 opcode READ` matches `# absent: opcode READ`"));
}
