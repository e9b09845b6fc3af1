use super::*;

const ROUTES: &str = "routes, HEAD, errors, bad input, big files intact";

fn recording(checks: &[(&str, &str, &str)]) -> String {
    let checks: Vec<String> = checks
        .iter()
        .map(|(name, row, verdict)| {
            format!(
                "  {{\"chapter\": \"ch03-event-loop\", \"name\": \"{name}\", \"row\": \"{row}\", \
                 \"row_name\": \"x\", \"verdict\": \"{verdict}\", \"seconds\": 0.105, \
                 \"message\": \"held to ch03, it should have \\\"x\\\", but it said \\\"no\\\"\\nseen: more\"}}"
            )
        })
        .collect();
    format!(
        "{{\"checks\": [\n{}\n],\n\"summary\": {{\"checks\": 3, \"skipped_why\": [], \"ok\": true, \
         \"line\": \"3 checks: 1 pass, 0 expected limitations, 2 fail, 0 skipped\"}}}}\n",
        checks.join(",\n")
    )
}

#[test]
fn a_recording_is_read_as_the_suite_writes_it() {
    let text = recording(&[
        ("hello", ROUTES, "pass"),
        ("keep_alive", "keep-alive and pipelining", "fail-lacks"),
    ]);
    let read = parse(&text).expect("it parses");
    assert_eq!(read.checks.len(), 2);
    assert_eq!(read.checks[1].name, "keep_alive");
    assert_eq!(
        read.checks[1].message,
        "held to ch03, it should have \"x\", but it said \"no\"\nseen: more"
    );
    assert_eq!(read.line, "3 checks: 1 pass, 0 expected limitations, 2 fail, 0 skipped");
    assert!(parse("{\"checks\": [}").is_err() && parse("[]").is_err());
}

#[test]
fn a_broken_check_of_an_older_row_is_given_the_lesson_it_belongs_to() {
    let text = recording(&[
        ("hello", ROUTES, "pass"),
        ("keep_alive", "keep-alive and pipelining", "fail-lacks"),
        ("closed_stderr", ROUTES, "fail-broken"),
    ]);
    let read = parse(&text).expect("it parses");
    let section = section(3, &read);
    let prose = section.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(prose.contains("the lab fails 2 checks"), "{section}");
    assert!(prose.contains("**keep-alive and pipelining** (added by chapter 3)"), "{section}");
    assert!(prose.contains("`keep_alive`, lacks: it said \"no\""), "{section}");
    assert!(prose.contains(&format!("**{ROUTES}** (a row chapter 2 has)")), "{section}");
    assert!(prose.contains("`closed_stderr`, broken: the lesson of *graceful shutdown on SIGTERM*"));
    assert!(!prose.contains("`hello`"), "a pass is not listed: {section}");
    assert_eq!(unexplained(3, &read), Vec::<String>::new());
    let stray = parse(&recording(&[("index_page", ROUTES, "fail-broken")])).expect("parses");
    assert_eq!(unexplained(3, &stray).len(), 1);
}

/// The recordings the book holds (`lab record N` makes them): each one readable, and every
/// broken check of an older row in it attributed, so that no README leaves one unexplained.
#[test]
fn every_recorded_failure_of_an_older_row_is_explained() {
    let root = suite::chapters::workspace_root();
    let folder = root.join("book/src/generated/labs");
    let Ok(entries) = std::fs::read_dir(&folder) else {
        suite::harness::print_uncaptured("lab: SKIPPED: no recorded gradings of labs yet");
        return;
    };
    let mut unexplained_ones = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(lab) = name.strip_prefix("lab-").and_then(|rest| rest.strip_suffix(".json"))
        else {
            continue;
        };
        let lab: u8 = lab.parse().expect("lab-NN.json");
        let text = std::fs::read_to_string(entry.path()).expect("a recording");
        let read = parse(&text).expect("the recording parses");
        unexplained_ones.extend(unexplained(lab, &read));
        // The book's copy of the section is the one the lab command would write.
        let markdown = std::fs::read_to_string(entry.path().with_extension("md")).expect("its .md");
        assert_eq!(markdown, book_section(lab, &read), "{name}: run `lab record --section {lab}`");
    }
    assert_eq!(unexplained_ones, Vec::<String>::new(), "add them to ATTRIBUTED");
}
