//! The lab's CI: `grade.sh`, which builds the lab and grades it, and
//! `.github/workflows/grade.yml`, whose every step is a call of `grade.sh`.
//!
//! Actions cannot run here, so the workflow holds no logic of its own: what it does, a
//! test does too, by running `grade.sh` (`workflow_tests.rs`). The workflow is the one
//! GitHub Classroom's autograding reads: a step per row of the capability table that
//! chapter N has, run by Classroom's `autograding-command-grader` with the row's points
//! as its `max-score` (the rows chapter N adds are worth [`NEW_ROW`] points, the rows it
//! keeps from chapter N-1 [`KEPT_ROW`]), and its `autograding-grader-reporter` adding them
//! up. Before those, one step writes the whole grading as JSON and JUnit XML
//! (`grades/`), and uploads them.

use std::fmt::Write;

use suite::chapters::Chapter;
use suite::manifest::{self, Capability, Expect, MANIFEST};
use suite::selection::row_name;

/// Points for a row that chapter N adds: the assignment.
pub const NEW_ROW: u32 = 10;
/// Points for a row chapter N-1 already had: what must not be lost.
pub const KEPT_ROW: u32 = 5;

/// The rows a lab is graded on, each with its points: the rows chapter N has (for a
/// sketch lab, the rows sketch N is graded on), those it adds first.
pub fn points(chapter: &Chapter, sketch: bool) -> Vec<(Capability, u32)> {
    let index = usize::from(chapter.number - 1);
    let mut rows: Vec<(Capability, u32)> = MANIFEST
        .iter()
        .filter(|row| matches!(row.chapters[index], Expect::Yes))
        .filter(|row| {
            !sketch
                || manifest::sketch(chapter.number).is_some_and(|s| {
                    // A row the sketch leaves out is graded on nothing: no step, no points.
                    s.rows
                        .iter()
                        .any(|graded| graded.capability == row.capability && !graded.is_left_out())
                })
        })
        .map(|row| {
            let added = matches!(row.chapters[index - 1], Expect::No(_));
            (row.capability, if added { NEW_ROW } else { KEPT_ROW })
        })
        .collect();
    rows.sort_by_key(|(_, points)| std::cmp::Reverse(*points));
    rows
}

/// `grade.sh`, for the program `name` held to chapter `n`.
pub fn grade_sh(name: &str, n: u8, sketch: bool) -> String {
    let sketch = if sketch { " --sketch" } else { "" };
    format!(
        r#"#!/bin/sh
# grade.sh: builds this lab and grades it at chapter {n}, as its CI workflow
# (.github/workflows/grade.yml) does, one step at a time. Made by the workbook's lab command.
#
#   ./grade.sh              build, then report
#   ./grade.sh build        builds the lab's program and the grader
#   ./grade.sh report ...   grades at chapter {n}: grades/chapter-{n}.json and .xml (JUnit), and
#                           prints the summary line; any further arguments go to the suite
#                           (--only NAME, --row ROW)
#   ./grade.sh row ROW ...  grades one row of the capability table, the report on stdout
#
# The exit status is the suite's: 0 when no check failed and none was skipped, 1 when one
# failed, 3 when one was skipped (a skip checked nothing), 2 for a command line it refused.
# The grader is the lab's grader/ (a handout's), else the suite program $SUITE, else the
# workbook at $WORKBOOK. GRADE_PROFILE (default release) and CARGO_TARGET_DIR choose the
# build; JOBS (default 2) how many checks run at once, for a small CI runner.
set -u
cd "$(dirname "$0")" || exit 2
chapter={n}
name={name}
profile="${{GRADE_PROFILE:-release}}"
target="${{CARGO_TARGET_DIR:-target}}"
case "$profile" in
    dev | test) out="$target/debug" ;;
    *) out="$target/$profile" ;;
esac
program="$out/$name"

suite() {{
    if [ -d grader ]; then
        "$out/suite" "$@"
    elif [ -n "${{SUITE:-}}" ]; then
        "$SUITE" "$@"
    elif [ -n "${{WORKBOOK:-}}" ]; then
        cargo run -q --release --manifest-path "$WORKBOOK/Cargo.toml" -p suite -- "$@"
    else
        echo "grade.sh: no grader: this lab has no grader/ (a --handout has), so set SUITE" \
            "to the suite's program or WORKBOOK to the workbook's folder" >&2
        exit 2
    fi
}}

build() {{
    cargo build -q --profile "$profile" -p "$name" || exit 1
    if [ -d grader ]; then
        cargo build -q --profile "$profile" -p suite || exit 1
    fi
}}

report() {{
    mkdir -p grades
    grade="--command $program --chapter $chapter{sketch} --jobs ${{JOBS:-2}}"
    # shellcheck disable=SC2086 # $grade is words on purpose
    suite $grade --format junit "$@" > "grades/chapter-$chapter.xml"
    # shellcheck disable=SC2086
    suite $grade --format json "$@" > "grades/chapter-$chapter.json"
    status=$?
    sed -n 's/.*"line": "\([^"]*\)".*/\1/p' "grades/chapter-$chapter.json"
    return "$status"
}}

case "${{1:-all}}" in
    build) build ;;
    report) shift && report "$@" ;;
    row)
        [ $# -ge 2 ] || {{ echo "usage: ./grade.sh row ROW [SUITE FLAGS]" >&2 && exit 2; }}
        row="$2" && shift 2
        suite --command "$program" --chapter "$chapter"{sketch} --jobs "${{JOBS:-2}}" --row "$row" "$@"
        ;;
    all) build && report ;;
    *) echo "usage: ./grade.sh [build | report [SUITE FLAGS] | row ROW]" >&2 && exit 2 ;;
esac
"#
    )
}

/// `.github/workflows/grade.yml`: build, the whole grading into `grades/` (uploaded),
/// then one Classroom test per row with its points, and their sum.
pub fn grade_yml(chapter: &Chapter, sketch: bool) -> String {
    let n = chapter.number;
    let rows = points(chapter, sketch);
    let total: u32 = rows.iter().map(|(_, points)| points).sum();
    let mut out = String::new();
    let _ = write!(
        out,
        "# Builds the lab and grades it at chapter {n}: made by the workbook's lab command.\n\
         # Every step is a call of ./grade.sh, which runs the same way on a laptop. The row\n\
         # steps are GitHub Classroom's autograding: {} points in all, {NEW_ROW} for each row\n\
         # chapter {n} adds, {KEPT_ROW} for each it keeps; the grades/ artifact holds the whole\n\
         # grading, as JSON and as JUnit XML.\n\
         name: grade\n\
         on:\n  push:\n  workflow_dispatch:\n  repository_dispatch:\n\n\
         permissions:\n  checks: write\n  actions: read\n  contents: read\n\n\
         jobs:\n  grade:\n    runs-on: ubuntu-latest\n    timeout-minutes: 30\n    steps:\n\
         \x20     - uses: actions/checkout@v4\n\
         \x20     - name: build the lab and its grader\n        run: ./grade.sh build\n\
         \x20     - name: grade at chapter {n} (grades/chapter-{n}.json and .xml)\n\
         \x20       run: ./grade.sh report\n        continue-on-error: true\n\
         \x20     - name: keep the grading\n        if: always()\n\
         \x20       uses: actions/upload-artifact@v4\n        with:\n          name: grades\n\
         \x20         path: grades/\n",
        total
    );
    let mut ids = Vec::new();
    for (capability, points) in &rows {
        let row = row_name(*capability);
        let id = format!("row-{row}");
        let _ = write!(
            out,
            "      - name: \"{description} ({points} points)\"\n        id: {id}\n\
             \x20       uses: classroom-resources/autograding-command-grader@v1\n        with:\n\
             \x20         test-name: \"{description}\"\n          command: ./grade.sh row {row}\n\
             \x20         timeout: 10\n          max-score: {points}\n",
            description = manifest::row(*capability).description.replace('"', "'"),
        );
        ids.push(id);
    }
    let _ = write!(
        out,
        "      - name: points\n        uses: classroom-resources/autograding-grader-reporter@v1\n\
         \x20       env:\n"
    );
    for id in &ids {
        let _ = writeln!(
            out,
            "          {}_RESULTS: \"${{{{steps.{id}.outputs.result}}}}\"",
            id.to_uppercase()
        );
    }
    let _ = write!(out, "        with:\n          runners: {}\n", ids.join(","));
    out
}

/// The README's section: how the lab is graded in CI, and by GitHub Classroom.
pub fn readme_section(chapter: &Chapter, sketch: bool, handout: bool) -> String {
    let n = chapter.number;
    let rows = points(chapter, sketch);
    let total: u32 = rows.iter().map(|(_, points)| points).sum();
    let mut out = String::from("## Grading in CI and GitHub Classroom\n\n");
    out.push_str(&crate::readme::wrap(
        &format!(
            "`./grade.sh` builds the lab and grades it at chapter {n}, as the workflow \
             `.github/workflows/grade.yml` does: every step of the workflow is a call of it \
             (`./grade.sh build`, `./grade.sh report`, `./grade.sh row ROW`), so what passes \
             here passes there. `./grade.sh report` writes the whole grading to \
             `grades/chapter-{n}.json` and `grades/chapter-{n}.xml` (JUnit XML, which test \
             reporters read), which the workflow keeps as its `grades` artifact."
        ),
        "",
        "",
    ));
    out.push_str(&crate::readme::wrap(
        &format!(
            "GitHub Classroom grades with the same file. Its autograding runs each row step \
             (`classroom-resources/autograding-command-grader`) and gives the step's \
             `max-score` when `./grade.sh row ROW` exits 0, that is when every check of the \
             row passes; `autograding-grader-reporter` adds the points up, {total} in all, and \
             Classroom shows them beside each student's repository. In the assignment's \
             settings, keep the workflow the template repository has (do not add tests in \
             Classroom's editor, which would write another). A row chapter {n} adds is worth \
             {NEW_ROW} points, a row it keeps {KEPT_ROW}:"
        ),
        "",
        "",
    ));
    for (capability, points) in &rows {
        let _ = writeln!(
            out,
            "- {points} points: {} (`--row {}`)",
            manifest::row(*capability).description,
            row_name(*capability)
        );
    }
    out.push('\n');
    if !handout {
        out.push_str(&crate::readme::wrap(
            "This lab carries no grader of its own: here, `WORKBOOK=/path/to/the/workbook \
             ./grade.sh` grades with the workbook's suite (or `SUITE=` a suite program). For \
             CI, a course hands out labs made with `--handout`, which carry the suite in \
             `grader/`.",
            "",
            "",
        ));
    }
    out
}

#[cfg(test)]
#[path = "workflow_tests.rs"]
mod tests;
