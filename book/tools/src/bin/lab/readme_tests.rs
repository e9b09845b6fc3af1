use super::*;

use suite::chapters;

#[test]
fn a_page_opens_with_its_title_and_first_paragraph() {
    let text = "# Chapter 7: Epoll\n\nChapter 6's server passes every row of the \
                [capability table](capabilities.md) but\ntwo: [this](#x), and [chapter \
                9](ch09-multicore.md)'s [sic].\n\nThe second paragraph.\n";
    let opening = page(text).expect("a page");
    assert_eq!(opening.title, "Chapter 7: Epoll");
    assert_eq!(
        opening.first_paragraph,
        "Chapter 6's server passes every row of the capability table but\ntwo: this, and \
         chapter 9's [sic]."
    );
    assert_eq!(page("no title\n\ntext\n"), None);
}

#[test]
fn the_new_rows_are_those_that_turn_from_no_to_yes() {
    let four = chapters::chapter(4).expect("chapter 4");
    let rows: Vec<&str> = new_rows(four).iter().map(|(row, _)| row.description).collect();
    assert_eq!(
        rows,
        [
            "`/sleep` and a slow upstream do not hold up others",
            "a client that leaves stops costing at once, even mid-wait or mid-pipeline",
            "idle, header and send timeouts",
            "slowloris does not deny service",
        ]
    );
    assert!(new_rows(four).iter().all(|(_, why)| why.starts_with("ch03")));
    assert!(new_rows(chapters::chapter(5).expect("chapter 5")).is_empty());
}

fn lab<'a>(number: u8, page: Option<(String, Page)>) -> Lab<'a> {
    Lab {
        chapter: chapters::chapter(number).expect("the chapter"),
        previous: chapters::chapter(number - 1).expect("the chapter before"),
        name: "ana",
        folder: "/labs/ana",
        workbook: "/workbook",
        program: "/labs/ana/target/release/ana",
        page,
        chapter_written: true,
        shared: "carries its own copy of the workbook's `shared` crate, in `shared/`",
        handout: false,
        handed_out: None,
        ci: String::new(),
    }
}

#[test]
fn the_readme_says_what_to_add_and_how_it_is_graded() {
    let page =
        Page { title: "Chapter 4: Waiting for time".into(), first_paragraph: "Timers.".into() };
    let text = readme(&lab(4, Some(("book/src/ch04-scheduler.md".into(), page))));
    // The prose is wrapped: compare it with its line breaks made spaces.
    let prose = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for wanted in [
        "make it chapter 4's: *Waiting for time*.",
        "`book/src/ch04-scheduler.md`",
        "- **idle, header and send timeouts**. ch03 has no timers yet",
        "Checked by `header_timeout`, `keep_alive_timeout`, `send_timeout`, \
         `waits_without_spinning`.",
        // The rules, and the page only up to the chapter's own code: not the answer.
        "its section *Chapter by chapter* gives every rule",
        "read it up to the section *The chapter's code*, where chapter 4's own code begins",
        "`--header-timeout SECONDS`, `--keep-alive-timeout SECONDS`, `--send-timeout SECONDS`",
    ] {
        assert!(prose.contains(wanted), "{wanted:?} not in:\n{text}");
    }
    for wanted in [
        "# ana: chapter 4 of the Event Loop Workbook, your way\n",
        "> Timers.\n",
        "cd /workbook    # the workbook\n",
        "cargo run -p suite -- --command /labs/ana/target/release/ana --chapter 4\n",
        "cargo run -p suite -- --command /labs/ana/target/release/ana --chapter 3\n",
        "diff -ru /workbook/chapters/03-event-loop/src src",
        "diff -ru /workbook/chapters/04-scheduler/src src",
    ] {
        assert!(text.contains(wanted), "{wanted:?} not in:\n{text}");
    }
}

#[test]
fn a_chapter_the_suite_cannot_tell_apart_says_so() {
    let text = readme(&lab(5, None));
    let prose = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(prose.contains("No row of the suite's capability table turns"), "{text}");
    assert!(prose.contains("it passes too, as made"), "{text}");
    assert!(!text.contains("Checked by") && !text.contains("> "), "{text}");
}

#[test]
fn prose_is_wrapped_at_spaces_but_never_inside_code() {
    let text = format!("{} `--keep-alive-timeout SECONDS` end", "word ".repeat(16));
    let wrapped = wrap(&text, "- ", "  ");
    assert!(wrapped.lines().all(|line| line.chars().count() <= WIDTH), "{wrapped}");
    assert!(wrapped.contains("\n  `--keep-alive-timeout SECONDS` end\n\n"), "{wrapped}");
    assert!(wrapped.starts_with("- word word"), "{wrapped}");
}

#[test]
fn a_sketchs_idea_is_the_opening_of_its_doc_comment() {
    let source = "//! Sketch of chapter 9: two loops.\n//! One per core.\n//!\n//! Left out: x.\n\nfn main() {}\n";
    assert_eq!(idea(source), "Sketch of chapter 9: two loops. One per core.");
    assert_eq!(idea("fn main() {}\n"), "");
}

#[test]
fn a_sketch_readme_grades_with_the_sketch_checks() {
    let lab = SketchLab {
        chapter: chapters::chapter(4).expect("4"),
        previous: chapters::chapter(3).expect("3"),
        name: "ana",
        folder: "/labs/ana",
        workbook: "/workbook",
        program: "/labs/ana/target/release/ana",
        idea: "Sketch of chapter 4: timers.",
        shared: "carries its own copy of the workbook's `shared` crate, in `shared/`",
        handout: false,
        ci: String::new(),
    };
    let text = sketch_readme(&lab);
    let prose = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for wanted in [
        "# ana: sketch 4 of the Event Loop Workbook, your way\n",
        "> Sketch of chapter 4: timers.\n",
        "--command /labs/ana/target/release/ana --chapter 4 --sketch\n",
        "--command /labs/ana/target/release/ana --chapter 3 --sketch\n",
        "diff -u /workbook/chapters/03-event-loop/examples/ch03-sketch.rs src/main.rs",
    ] {
        assert!(text.contains(wanted), "{wanted:?} not in:\n{text}");
    }
    // The timeouts row's checks that sketch 4 is graded on (manifest::SKETCHES), by name.
    assert!(prose.contains("Checked by `header_timeout`,"), "{text}");
    assert!(prose.contains("as made, the rows it adds fail"), "{text}");
    assert!(!prose.contains("`slow_upstream`"), "sketch 4 is not graded on it:\n{text}");
}
