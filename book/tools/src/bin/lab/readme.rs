//! The lab's `README.md`: what the student is to write, and how the suite grades it.
//!
//! What chapter N adds comes from two places. The capability table (`suite::manifest`)
//! gives the rows that turn from "no" at chapter N-1 to "yes" at chapter N, each with the
//! manifest's sentence of why chapter N-1 lacks it, and the checks that test it; the
//! flags table (`suite::flags`) gives the flags a server must accept from chapter N on.
//! The chapter's page in the book gives its title and first paragraph: the idea, in the
//! book's words. A chapter that adds nothing the suite can see from outside (promises,
//! `async`, io_uring) says so, and its page says the rest.

use std::fmt::Write;

use suite::chapters::Chapter;
use suite::flags::{Needed, FLAGS};
use suite::manifest::{self, Expect, Row, MANIFEST};
use suite::probes::PROBES;

/// What the README is made from.
pub struct Lab<'a> {
    /// The chapter the student writes...
    pub chapter: &'a Chapter,
    /// ... starting from this one's program.
    pub previous: &'a Chapter,
    /// The package's name, and its program's.
    pub name: &'a str,
    /// The lab's folder, the workbook's, and the program `cargo build --release` makes,
    /// as absolute paths.
    pub folder: &'a str,
    pub workbook: &'a str,
    pub program: &'a str,
    /// The chapter's page, from the workbook's root (`book/src/ch04-scheduler.md`), and
    /// what it says first, if it is there.
    pub page: Option<(String, Page)>,
    /// Whether chapter N's own program is in the workbook yet, to compare with.
    pub chapter_written: bool,
    /// How the lab has `shared`, in a sentence's words: "carries its own copy of ...".
    pub shared: &'a str,
    /// A handout: the suite is in the lab's `grader/`, and nothing names the workbook.
    pub handout: bool,
    /// The section "What fails as handed out", from a recorded grading of the lab as made
    /// (`handed_out.rs`), if there is one.
    pub handed_out: Option<String>,
    /// The section on `grade.sh` and the workflow (`workflow.rs`).
    pub ci: String,
}

/// The opening of a chapter's page.
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    /// "Chapter 4: Waiting for time"
    pub title: String,
    /// Its first paragraph, links made plain text (they lead nowhere from the lab).
    pub first_paragraph: String,
}

/// The title and first paragraph of a page in the book.
pub fn page(text: &str) -> Option<Page> {
    let mut lines = text.lines();
    let title = lines.by_ref().find(|line| !line.trim().is_empty())?.strip_prefix("# ")?;
    let paragraph: Vec<&str> = lines
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| !line.trim().is_empty())
        .collect();
    if paragraph.is_empty() {
        return None;
    }
    Some(Page { title: title.trim().to_string(), first_paragraph: plain(&paragraph.join("\n")) })
}

/// Markdown links `[text](target)` as their text.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let link = after
            .find("](")
            .filter(|&close| !after[..close].contains('['))
            .and_then(|close| Some((close, after[close + 2..].find(')')? + close + 2)));
        match link {
            Some((close, end)) => {
                out.push_str(&rest[..open]);
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The rows of the capability table that `chapter` has and the chapter before lacks, each
/// with the sentence of why the one before lacks it.
pub fn new_rows(chapter: &Chapter) -> Vec<(&'static Row, &'static str)> {
    let index = usize::from(chapter.number - 1);
    MANIFEST
        .iter()
        .filter_map(|row| match (row.chapters[index - 1], row.chapters[index]) {
            (Expect::No(why), Expect::Yes) => Some((row, why)),
            _ => None,
        })
        .collect()
}

/// The names of the checks of a row, as `--only` takes them.
fn checks(row: &Row) -> Vec<String> {
    PROBES
        .iter()
        .filter(|probe| probe.capability == row.capability)
        .map(|probe| format!("`{}`", probe.name))
        .collect()
}

/// How wide the README's prose is.
const WIDTH: usize = 90;

/// `text` as lines at most [`WIDTH`] wide, broken at spaces, the first starting with
/// `first` and the others with `then` (a list item's hanging indent).
pub fn wrap(text: &str, first: &str, then: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    // A word is what lies between spaces, but an `inline code span` is one word.
    let mut words: Vec<String> = Vec::new();
    for piece in text.split_whitespace() {
        match words.last_mut() {
            Some(last) if last.matches('`').count() % 2 == 1 => {
                last.push(' ');
                last.push_str(piece);
            }
            _ => words.push(piece.to_string()),
        }
    }
    for word in &words {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = then.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push_str("\n\n");
    out
}

/// The README.
pub fn readme(lab: &Lab) -> String {
    let (n, before) = (lab.chapter.number, lab.previous.number);
    let rows = new_rows(lab.chapter);
    let mut out = String::new();
    // Writing into a String cannot fail, so the results of write! are ignored.
    let _ = write!(out, "# {}: chapter {n} of the Event Loop Workbook, your way\n\n", lab.name);
    let title = match &lab.page {
        Some((_, page)) => {
            format!(": *{}*", page.title.split_once(": ").map_or(page.title.as_str(), |t| t.1))
        }
        None => String::new(),
    };
    let origin = match lab.handout {
        true => format!(
            "It was made by the Event Loop Workbook's lab command (`lab {n} DIR --handout`), \
             {} (so it builds wherever it is moved), and carries in `grader/` the suite that \
             grades it",
            lab.shared
        ),
        false => format!(
            "It was made by `cargo run -p book-tools --bin lab -- {n} {}` in the workbook at `{}`, \
             and {} (so it builds wherever it is moved)",
            lab.folder, lab.workbook, lab.shared
        ),
    };
    out.push_str(&wrap(
        &format!(
            "This crate is chapter {before}'s program (`{}`) under the name `{}`, which the \
             program gives itself (in its usage, its `Server` header, its index page). Your \
             task is to make it chapter {n}'s{title}. {origin}.",
            lab.previous.name, lab.name,
        ),
        "",
        "",
    ));

    let _ = write!(out, "## What chapter {n} adds\n\n");
    if let Some((path, page)) = &lab.page {
        for line in page.first_paragraph.lines() {
            let _ = writeln!(out, "> {line}");
        }
        out.push('\n');
        let (rules, page, book) = match lab.handout {
            true => {
                ("the book's page *Your own server*".to_string(), format!("*{}*", page.title), "")
            }
            false => (
                "the workbook's `book/src/your-server.md`".to_string(),
                format!("`{path}`"),
                " (`mdbook serve book` in the workbook shows the pages as a book)",
            ),
        };
        out.push_str(&wrap(
            &format!(
                "What your server is held to is in {rules}: its section *Chapter by chapter* \
                 gives every rule with the check that holds it (the rules under *Chapter {n} \
                 on* are this lab's). The problem chapter {n} solves, and its idea, open the \
                 chapter's page, {page}: read it up to the section *The chapter's code*, where \
                 chapter {n}'s own code begins, the answer{book}."
            ),
            "",
            "",
        ));
    }
    if rows.is_empty() {
        out.push_str(&wrap(
            &format!(
                "No row of the suite's capability table turns from \"no\" to \"yes\" at \
                 chapter {n}: what it adds, the suite cannot see from outside. Both gradings \
                 below pass as the lab is made, and must still pass when you are done; the \
                 change is in how the code is written, which the chapter's page explains."
            ),
            "",
            "",
        ));
    } else {
        out.push_str(&wrap(
            &format!(
                "The rows of the suite's capability table that chapter {before} lacks and \
                 chapter {n} has: what your server must now do, why chapter {before}'s program \
                 cannot, and the checks that test it."
            ),
            "",
            "",
        ));
        for (row, why) in &rows {
            let item =
                format!("**{}**. {why} Checked by {}.", row.description, checks(row).join(", "));
            let wrapped = wrap(&item, "- ", "  ");
            out.push_str(&wrapped[..wrapped.len() - 1]); // the items, not a paragraph each
        }
        out.push('\n');
    }
    let flags: Vec<String> = FLAGS
        .iter()
        .filter(|flag| match &flag.needed {
            Needed::With(capability) => rows.iter().any(|(row, _)| row.capability == *capability),
            _ => false,
        })
        .map(|flag| format!("`{} {}`", flag.name, flag.value))
        .collect();
    if !flags.is_empty() {
        out.push_str(&wrap(
            &format!(
                "From chapter {n} on, the suite passes {} too, and your server must accept \
                 them (until now, refusing them with exit status 2 was right).",
                flags.join(", ")
            ),
            "",
            "",
        ));
    }

    let _ = write!(out, "## Build and grade\n\n");
    out.push_str(&grading(lab.handout, lab.workbook, lab.program, lab.name, [n, before], ""));
    let first = match rows.is_empty() {
        true => "it passes too, as made".to_string(),
        false => format!(
            "as made, it fails the checks above (a `FAIL` line for each, and their rows say \
             \"lacks it\"). A check of an older row may fail too, where its chapter {n} \
             version asks more (the report says what it saw); the rest pass{}",
            match lab.handed_out {
                Some(_) => ". *What fails as handed out*, below, lists every one, with why",
                None => "",
            }
        ),
    };
    out.push_str(&wrap(
        &format!(
            "The first holds your server to chapter {n}: {first}. The second holds it to \
             chapter {before}: it passes as made, and must go on passing, so that nothing \
             chapter {before} could do is lost. Each report ends with its summary line, `N \
             checks: P pass, L expected limitations, F fail, S skipped`, and the exit status \
             is 0 only when no check fails and none is skipped (1 for a failure, 3 for a skip). \
             To run some checks alone, add `--only NAME`: the checks whose name contains NAME."
        ),
        "",
        "",
    ));

    if let Some(section) = &lab.handed_out {
        out.push_str(section);
    }
    out.push_str(&lab.ci);
    let _ = write!(out, "## Compare\n\n");
    if lab.handout {
        out.push_str(&wrap(
            "Keep the lab in git from the first: `git diff` against the commit you were handed \
             is what you changed, and should read like the lesson.",
            "",
            "",
        ));
        return out;
    }
    let _ = writeln!(
        out,
        "```sh\ndiff -ru {}/chapters/{}/src src    # what you changed",
        lab.workbook, lab.previous.directory
    );
    if lab.chapter_written {
        let _ = writeln!(
            out,
            "diff -ru {}/chapters/{}/src src    # the workbook's own: when you are done",
            lab.workbook, lab.chapter.directory
        );
    }
    out.push_str("```\n");
    out
}

/// What a sketch lab's README is made from.
pub struct SketchLab<'a> {
    /// The sketch the student writes, from the one before.
    pub chapter: &'a Chapter,
    pub previous: &'a Chapter,
    pub name: &'a str,
    /// As in [`Lab`].
    pub folder: &'a str,
    pub workbook: &'a str,
    pub program: &'a str,
    /// Sketch N's idea, as its doc comment opens ([`idea`]).
    pub idea: &'a str,
    /// As in [`Lab`].
    pub shared: &'a str,
    pub handout: bool,
    pub ci: String,
}

/// The opening paragraph of a sketch's `//!` doc comment: what it shows, in its own words.
pub fn idea(source: &str) -> String {
    let lines: Vec<&str> = source
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(str::trim)
        .take_while(|line| !line.is_empty())
        .collect();
    lines.join(" ")
}

/// The README of a sketch lab (`lab -- --sketch N DIR`).
pub fn sketch_readme(lab: &SketchLab) -> String {
    let (n, before) = (lab.chapter.number, lab.previous.number);
    let mut out = String::new();
    let _ = write!(out, "# {}: sketch {n} of the Event Loop Workbook, your way\n\n", lab.name);
    let origin = match lab.handout {
        true => format!(
            "It was made by the Event Loop Workbook's lab command (`lab --sketch {n} DIR \
             --handout`), {} (so it builds wherever it is moved), and carries in `grader/` the \
             suite that grades it",
            lab.shared
        ),
        false => format!(
            "It was made by `cargo run -p book-tools --bin lab -- --sketch {n} {}` in the workbook \
             at `{}`, and {} (so it builds wherever it is moved)",
            lab.folder, lab.workbook, lab.shared
        ),
    };
    out.push_str(&wrap(
        &format!(
            "This crate is sketch {before} (`{}` in the workbook: chapter {before}'s idea, and \
             nothing else, in one small program) under the name `{}`, which the program gives \
             itself. Your task is to make it sketch {n}: to add chapter {n}'s idea, in as few \
             lines as it takes. {origin}.",
            lab.previous.sketch_path().display(),
            lab.name,
        ),
        "",
        "",
    ));
    let _ = write!(out, "## What sketch {n} adds\n\n");
    out.push_str(&wrap(&format!("In the words of the workbook's sketch {n}:"), "", ""));
    for line in wrap(lab.idea, "", "").lines().filter(|line| !line.is_empty()) {
        let _ = writeln!(out, "> {line}");
    }
    out.push('\n');
    let graded = manifest::sketch(n).map_or(&[][..], |sketch| sketch.rows);
    out.push_str(&wrap(
        &format!(
            "The suite grades sketch {n} on these rows of its capability table, held to \
             chapter {n}'s column:"
        ),
        "",
        "",
    ));
    for graded in graded {
        let checks: Vec<String> = PROBES
            .iter()
            .filter(|probe| probe.capability == graded.capability)
            .filter(|probe| graded.only.is_none_or(|(only, _)| only.contains(&probe.name)))
            .map(|probe| format!("`{}`", probe.name))
            .collect();
        let description = manifest::row(graded.capability).description;
        let why = graded.only.map(|(_, why)| format!(" Only these: {why}")).unwrap_or_default();
        let item = match graded.only {
            Some((_, why)) if graded.is_left_out() => {
                format!("**{description}**. Not graded: {why}")
            }
            _ => format!("**{description}**. Checked by {}.{why}", checks.join(", ")),
        };
        let wrapped = wrap(&item, "- ", "  ");
        out.push_str(&wrapped[..wrapped.len() - 1]);
    }
    out.push('\n');
    let _ = write!(out, "## Build and grade\n\n");
    out.push_str(&grading(
        lab.handout,
        lab.workbook,
        lab.program,
        lab.name,
        [n, before],
        " --sketch",
    ));
    let first = match new_rows(lab.chapter).is_empty() {
        true => "they pass as made too, since what it adds the suite cannot see from outside",
        false => "as made, the rows it adds fail (their lines say \"lacks it\")",
    };
    out.push_str(&wrap(
        &format!(
            "The first runs the checks of sketch {n}: {first}. The second runs sketch \
             {before}'s own checks: they pass as made, and must go on passing. Each report \
             ends with its summary line, and the exit status is 0 only when no check fails \
             and none is skipped."
        ),
        "",
        "",
    ));
    out.push_str(&lab.ci);
    let _ = write!(out, "## Compare\n\n");
    if lab.handout {
        out.push_str(&wrap(
            "Keep the lab in git from the first: `git diff` against the commit you were handed \
             is what you changed.",
            "",
            "",
        ));
        return out;
    }
    let _ = writeln!(
        out,
        "```sh\ndiff -u {}/{} src/main.rs    # what you changed\n\
         diff -u {}/{} src/main.rs    # the workbook's sketch {n}: when you are done\n```",
        lab.workbook,
        lab.previous.sketch_path().display(),
        lab.workbook,
        lab.chapter.sketch_path().display()
    );
    out
}

/// The commands that build the lab and grade it at these chapters: from the workbook, or
/// with the handout's own `grader/`, from the lab itself.
fn grading(
    handout: bool, workbook: &str, program: &str, name: &str, chapters: [u8; 2], sketch: &str,
) -> String {
    let mut out = String::from("```sh\ncargo build --release    # here, in the lab\n");
    let program = match handout {
        true => format!("target/release/{name}"),
        false => {
            let _ = writeln!(out, "cd {workbook}    # the workbook");
            program.to_string()
        }
    };
    let run = match handout {
        true => "cargo run --release -q -p suite --",
        false => "cargo run -p suite --",
    };
    for chapter in chapters {
        let _ = writeln!(out, "{run} --command {program} --chapter {chapter}{sketch}");
    }
    out.push_str("```\n\n");
    out
}

#[cfg(test)]
#[path = "readme_tests.rs"]
mod tests;
