use super::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use suite::chapters;

#[test]
fn the_rows_chapter_n_adds_are_worth_more_than_those_it_keeps() {
    let three = chapters::chapter(3).expect("chapter 3");
    let rows = points(three, false);
    let added: Vec<Capability> =
        crate::readme::new_rows(three).iter().map(|(row, _)| row.capability).collect();
    for (capability, points) in &rows {
        let expected = if added.contains(capability) { NEW_ROW } else { KEPT_ROW };
        assert_eq!(*points, expected, "{capability:?}");
    }
    let yes = MANIFEST.iter().filter(|row| matches!(row.chapters[2], Expect::Yes)).count();
    assert_eq!(rows.len(), yes, "every row chapter 3 has, and only those");
}

#[test]
fn every_row_step_is_a_call_of_grade_sh_and_the_reporter_adds_them_all() {
    let four = chapters::chapter(4).expect("chapter 4");
    let yml = grade_yml(four, false);
    let rows = points(four, false);
    for (capability, points) in &rows {
        let row = row_name(*capability);
        let step = format!(
            "        id: row-{row}\n        uses: classroom-resources/autograding-command-grader@v1\n"
        );
        assert!(yml.contains(&step), "{row}:\n{yml}");
        assert!(yml.contains(&format!(
            "command: ./grade.sh row {row}\n          timeout: 10\n          max-score: {points}\n"
        )));
        assert!(yml.contains(&format!(
            "ROW-{}_RESULTS: \"${{{{steps.row-{row}.outputs.result}}}}\"",
            row.to_uppercase()
        )));
    }
    let runners: Vec<String> = rows.iter().map(|(c, _)| format!("row-{}", row_name(*c))).collect();
    assert!(yml.contains(&format!("runners: {}\n", runners.join(","))), "{yml}");
    // Every `run:` and `command:` is grade.sh: the workflow holds no logic a test cannot run.
    for line in yml.lines().map(str::trim) {
        if let Some(command) = line.strip_prefix("run: ").or(line.strip_prefix("command: ")) {
            assert!(command.starts_with("./grade.sh "), "{line}");
        }
    }
    assert!(!yml.contains('\t'), "YAML takes no tabs");
}

/// A temporary folder, removed however the test ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The workflow's own steps, run here as Actions would run them: `./grade.sh build`, then
/// `./grade.sh report` (on two checks, and in the dev profile, to be quick) and a row step.
#[test]
fn grade_sh_runs_the_workflows_steps_here() {
    if Command::new("sh").arg("-c").arg("true").status().is_err() {
        suite::harness::print_uncaptured("lab: SKIPPED grade.sh's test: no sh here");
        return;
    }
    let scratch =
        Scratch(std::env::temp_dir().join(format!("lab-test-{}-grade", std::process::id())));
    let _ = fs::remove_dir_all(&scratch.0);
    let lab = scratch.0.join("ana-ch03");
    let words = ["--handout", "3", &lab.display().to_string()].map(String::from);
    let request = crate::parse_args(words.into_iter()).expect("accepted").expect("a request");
    assert!(crate::make(&request).is_ok(), "the handout is made");
    let step = |arguments: &[&str]| {
        Command::new("./grade.sh")
            .args(arguments)
            .current_dir(&lab)
            .env("GRADE_PROFILE", "dev")
            // A folder of its own, never one the workbook builds in: the handout's `shared`
            // sits at the same path within its workspace as the workbook's, so Cargo gives
            // both the same file names, and one build would take the other's for its own.
            .env("CARGO_TARGET_DIR", scratch.0.join("target"))
            .env("CARGO_NET_OFFLINE", "true")
            .output()
            .expect("grade.sh runs")
    };
    let said = |output: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    };
    let build = step(&["build"]);
    assert!(build.status.success(), "./grade.sh build: {}", said(&build));

    // As made, keep_alive fails (chapter 3 adds it) and hello passes: exit status 1.
    let report = step(&["report", "--only", "=hello,=keep_alive"]);
    assert_eq!(report.status.code(), Some(1), "./grade.sh report: {}", said(&report));
    let summary = String::from_utf8_lossy(&report.stdout);
    assert!(summary.starts_with("2 checks: 1 pass, 0 expected limitations, 1 fail"), "{summary}");
    let json = fs::read_to_string(lab.join("grades/chapter-3.json")).expect("the JSON");
    let recording = crate::handed_out::parse(&json).expect("the JSON parses");
    let verdicts: Vec<(&str, &str)> =
        recording.checks.iter().map(|c| (c.name.as_str(), c.verdict.as_str())).collect();
    assert_eq!(verdicts, [("hello", "pass"), ("keep_alive", "fail-lacks")]);
    let xml = fs::read_to_string(lab.join("grades/chapter-3.xml")).expect("the JUnit XML");
    assert!(xml.starts_with("<?xml") && xml.contains("<testcase") && xml.contains("<failure"));

    // A row step: the one whose checks all pass as made exits 0, and gets its points.
    let basics = step(&["row", "basics", "--only", "=hello"]);
    assert!(basics.status.success(), "./grade.sh row basics: {}", said(&basics));
    let keep_alive = step(&["row", "keep-alive", "--only", "=keep_alive"]);
    assert_eq!(keep_alive.status.code(), Some(1), "row keep-alive: {}", said(&keep_alive));
    let usage = step(&["nonsense"]);
    assert_eq!(usage.status.code(), Some(2), "{}", said(&usage));
    assert!(Path::new(&lab.join(".github/workflows/grade.yml")).is_file());
}
