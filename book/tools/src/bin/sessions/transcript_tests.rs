use super::*;
use crate::session::{parse, Kind};

#[test]
fn commands_take_the_place_of_their_markers_and_cargo_noise_goes() {
    let session = parse(
        "# inputs: shared/src\n@ cargo build\n$ cargo run -p ch08-async &\n$ curl -s \\\n    http://x/stats\n",
    )
    .unwrap();
    assert_eq!(session.steps[0].kind, Kind::Hidden);
    let raw = format!(
        "{}\n   Compiling ch08-async v0.1.0 (/repo/chapters/08-async)\n    Finished `dev` profile \
         [unoptimized + debuginfo] target(s) in 2.41s\n     Running `target/debug/ch08-async`\n\
         listening on http://127.0.0.1:8080\n{}\nconnections_open 1\n\
         /tmp/script.sh: line 7: 4242 Terminated              cargo run -p ch08-async\n\n",
        marker(1),
        marker(2)
    );
    let text = transcript(&raw, &session.steps, "/repo", "/tmp/script.sh").unwrap();
    assert_eq!(
        text,
        "$ cargo run -p ch08-async &\nlistening on http://127.0.0.1:8080\n$ curl -s \\\n    \
         http://x/stats\nconnections_open 1\n"
    );
}

#[test]
fn a_marker_in_the_middle_of_a_line_splits_it() {
    let session = parse("$ true\n").unwrap();
    let raw = format!("half a li{}ne\n", marker(0));
    let text = transcript(&raw, &session.steps, "/repo", "/tmp/s.sh").unwrap();
    assert_eq!(text, "half a li\n$ true\nne\n");
}

#[test]
fn warnings_go_with_their_diagnostic_lines_and_nothing_after_them() {
    let session = parse("$ cargo test\n").unwrap();
    let raw = format!(
        "{}\nwarning: unused variable: `x`\n --> src/main.rs:2:9\n  |\n2 |     let x = 1;\n  |     \
         ^\n  = note: on by default\n\nrunning 1 test\n",
        marker(0)
    );
    let text = transcript(&raw, &session.steps, "/repo", "/tmp/s.sh").unwrap();
    assert_eq!(text, "$ cargo test\nrunning 1 test\n");
    // cargo test's own blank line after `Running unittests ...`
    let raw = format!(
        "{}\n     Running unittests src/main.rs (target/debug/deps/x)\n\nrunning 1 test\n\nok\n",
        marker(0)
    );
    let text = transcript(&raw, &session.steps, "/repo", "/tmp/s.sh").unwrap();
    assert_eq!(text, "$ cargo test\nrunning 1 test\n\nok\n");
}

#[test]
fn the_repository_path_is_shown_as_a_relative_one() {
    let session = parse("$ true\n").unwrap();
    let raw = format!("{}\nbuilding into /work/repo/target/tmp (in /work/repo)\n", marker(0));
    let text = transcript(&raw, &session.steps, "/work/repo", "/tmp/s.sh").unwrap();
    assert_eq!(text, "$ true\nbuilding into target/tmp (in .)\n");
}

#[test]
fn a_command_wider_than_the_column_is_refused() {
    let long = format!("$ echo {}\n", "x".repeat(COLUMN));
    let session = parse(&long).unwrap();
    let error = transcript(&marker(0), &session.steps, "/repo", "/tmp/s.sh").unwrap_err();
    assert!(error.contains("wider than the book's column"), "{error}");
}

#[test]
fn long_lines_wrap_at_spaces_under_their_text_column() {
    let line = format!(
        "ch01-blocking     idle_client                 expected limitation: {}",
        "one client at a time ".repeat(6).trim_end()
    );
    let wrapped = wrap(&line, 101);
    assert!(wrapped.len() > 1);
    for piece in &wrapped {
        assert!(width(piece) <= 101, "{piece:?}");
    }
    assert!(wrapped[1].starts_with(&" ".repeat(48)), "{:?}", wrapped[1]);
    assert!(!wrapped[1][48..].starts_with(' '), "{:?}", wrapped[1]);
    let words = |text: &str| text.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(words(&wrapped.join(" ")), words(&line), "no word lost or cut");
}

#[test]
fn a_word_longer_than_the_column_is_cut() {
    let line = "y".repeat(250);
    let wrapped = wrap(&line, 101);
    assert_eq!(wrapped[0].len(), 101);
    assert!(wrapped.iter().all(|piece| width(piece) <= 101));
    assert_eq!(wrapped.concat().replace(' ', ""), line);
}

#[test]
fn a_here_document_is_one_command() {
    let session =
        parse("$ cat > /tmp/f.py <<'EOF'\nprint(1)\n$ not a command\nEOF\n$ python3 /tmp/f.py\n")
            .unwrap();
    assert_eq!(session.steps.len(), 2);
    assert_eq!(session.steps[0].lines.len(), 4);
}

#[test]
fn anything_else_is_refused() {
    let error = parse("$ true\nsome output typed by hand\n").unwrap_err();
    assert!(error.starts_with("line 2:"), "{error}");
    let error = parse("& cargo run -p ch01-blocking # a comment\n").unwrap_err();
    assert!(error.contains("must not end with a comment"), "{error}");
}
