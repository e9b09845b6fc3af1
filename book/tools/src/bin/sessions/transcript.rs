//! From what a session printed to what the page shows.
//!
//! Everything the session's bash printed, and everything its background jobs printed, went
//! to one file in the order it was written, with a marker (see [`marker`]) where each shown
//! command began. This module puts each command back in place of its marker, drops the
//! noise a reader's eye skips anyway (cargo's status lines, compiler warnings, bash's own
//! notes on its jobs), and wraps lines wider than the book's column.

use crate::session::{marker, Step};

/// How many characters fit across the book's code column: `CODE_COLUMN` in
/// book/tools/tests/book.rs, which checks every generated line against it.
pub const COLUMN: usize = 101;

/// The page's text for a session's output. `steps` are the session's steps (the markers
/// number them); `root` is the repository's absolute path, shown as `.`; `script` is the
/// path of the script bash ran, which its notes about jobs start with.
pub fn transcript(raw: &str, steps: &[Step], root: &str, script: &str) -> Result<String, String> {
    let mut lines: Vec<String> = Vec::new();
    let mut in_warning = false;
    let mut after_command = false;
    for piece in pieces(raw) {
        match piece {
            Piece::Command(index) => {
                in_warning = false;
                after_command = true;
                let step = steps.get(index).ok_or("a marker names no step")?;
                for line in step.shown() {
                    if width(&line) > COLUMN {
                        return Err(format!(
                            "`{}` is wider than the book's column ({COLUMN} characters): \
                             break it with `\\` at the end of a line",
                            step.lines[0]
                        ));
                    }
                    lines.push(line);
                }
            }
            Piece::Line(line) => {
                let line = tidy(&line, root);
                if in_warning && is_diagnostic(&line) {
                    continue;
                }
                in_warning = line.starts_with("warning:");
                if in_warning || is_cargo_status(&line) || line.starts_with(&format!("{script}: "))
                {
                    continue;
                }
                // A blank line right after a command is what was left between two of
                // cargo's status lines (`Running ...`, then a test's output).
                if line.is_empty() && after_command {
                    continue;
                }
                after_command = false;
                lines.extend(wrap(&line, COLUMN));
            }
        }
    }
    while lines.last().is_some_and(|line| line.is_empty()) {
        lines.pop();
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(text)
}

/// A line of output, or the place of shown command N.
#[derive(Debug, PartialEq)]
enum Piece {
    Line(String),
    Command(usize),
}

/// Splits the raw output into lines and markers. A marker may land in the middle of a
/// line a background job was writing: the part before it is a line of its own.
fn pieces(raw: &str) -> Vec<Piece> {
    let mut found = Vec::new();
    let mut line = String::new();
    let mut rest = raw;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('\u{1e}') {
            if let Some(end) = after.find('\u{1e}') {
                if let Ok(index) = after[..end].parse::<usize>() {
                    debug_assert_eq!(marker(index), format!("\u{1e}{}\u{1e}", &after[..end]));
                    if !line.is_empty() {
                        found.push(Piece::Line(std::mem::take(&mut line)));
                    }
                    found.push(Piece::Command(index));
                    rest = &after[end + 1..];
                    rest = rest.strip_prefix('\n').unwrap_or(rest);
                    continue;
                }
            }
        }
        let c = rest.chars().next().expect("rest is not empty");
        rest = &rest[c.len_utf8()..];
        if c == '\n' {
            found.push(Piece::Line(std::mem::take(&mut line)));
        } else {
            line.push(c);
        }
    }
    if !line.is_empty() {
        found.push(Piece::Line(line));
    }
    found
}

/// The repository's path shown as `.`, tabs as spaces, no carriage returns or trailing
/// blanks.
fn tidy(line: &str, root: &str) -> String {
    let line = line.replace(&format!("{root}/"), "").replace(root, ".");
    let mut tidy = String::new();
    for c in line.chars() {
        match c {
            '\t' => tidy.extend(std::iter::repeat_n(' ', 8 - tidy.chars().count() % 8)),
            '\r' => {}
            c => tidy.push(c),
        }
    }
    tidy.trim_end().to_string()
}

/// Is this one of cargo's status lines (`   Compiling x`, `    Finished ...`, `     Running
/// ...`, `    Blocking waiting for file lock ...`)? Cargo right-aligns the word to twelve
/// characters and puts a space after it.
fn is_cargo_status(line: &str) -> bool {
    let Some(head) = line.get(..12) else { return false };
    let word = head.trim_start();
    line.as_bytes().get(12) == Some(&b' ')
        && word.len() < 12
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
}

/// Is this a line of a compiler diagnostic below its `warning:` line (` --> file`, ` |`,
/// `12 |`, ` = note`, or blank)?
fn is_diagnostic(line: &str) -> bool {
    let trimmed = line.trim_start();
    let after_number = trimmed.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
    trimmed.is_empty()
        || trimmed.starts_with("-->")
        || trimmed.starts_with('=')
        || trimmed.starts_with("...")
        || after_number.starts_with('|')
}

/// How wide `line` is on screen, in characters.
pub fn width(line: &str) -> usize {
    line.chars().count()
}

/// `line` cut into lines no wider than `column`, at spaces where it can be. The lines
/// after the first are indented two more than the first line's text column: its own
/// indentation, or where its last column of text starts (the suite's table puts its
/// message at column 46), so that they read as the same entry.
pub fn wrap(line: &str, column: usize) -> Vec<String> {
    if width(line) <= column {
        return vec![line.to_string()];
    }
    let indent = (text_column(line) + 2).min(column / 2);
    let mut lines = Vec::new();
    let mut rest: Vec<char> = line.chars().collect();
    let mut first = true;
    loop {
        let lead = if first { 0 } else { indent };
        let room = column - lead;
        if rest.len() <= room {
            lines.push(format!("{}{}", " ".repeat(lead), rest.iter().collect::<String>()));
            break;
        }
        // The last space that leaves text on this line (not the indentation itself).
        let start = rest.iter().position(|c| *c != ' ').unwrap_or(0);
        let cut = rest[..=room]
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&space| space > start)
            .unwrap_or(room);
        let piece: String = rest[..cut].iter().collect();
        lines.push(format!("{}{}", " ".repeat(lead), piece.trim_end()));
        let skip = rest[cut..].iter().take_while(|c| **c == ' ').count();
        rest.drain(..cut + skip);
        first = false;
        if rest.is_empty() {
            break;
        }
    }
    lines
}

/// Where the text of a table-like line starts: after its indentation, or after the last
/// gap of two or more spaces in its first 60 characters.
fn text_column(line: &str) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let mut column = chars.iter().take_while(|c| **c == ' ').count();
    let mut index = column;
    while index + 1 < chars.len().min(60) {
        if chars[index] == ' ' && chars[index + 1] == ' ' {
            let end = index + chars[index..].iter().take_while(|c| **c == ' ').count();
            if end < 60 {
                column = end;
            }
            index = end;
        } else {
            index += 1;
        }
    }
    column
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
