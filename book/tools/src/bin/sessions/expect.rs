//! What a session says its output must show, and the check of an output against it.
//!
//! A page describes what it quotes: "the greps show the two links of the chain", "a dozen
//! calls per hundred requests", "every check passes". A run made later may show something
//! else, and the page goes on describing the old one. So a session states, above a shown
//! command, what the page relies on in that command's output:
//!
//! ```text
//! # expect: 58 checks: * 0 fail
//! $ cargo run -p suite -- --chapter 4 2>/dev/null | tail -1
//! # range: 1..20 {} io_uring_enter calls per 100 requests
//! $ awk ... /tmp/requests.txt /tmp/calls.txt
//! # quiet
//! $ python3 /tmp/conns.py 8097 1000
//! ```
//!
//! - `# expect: PATTERN`: some line of the command's output matches.
//! - `# absent: PATTERN`: no line of it matches ("no `READ`: the file's bytes never
//!   reached our memory").
//! - `# range: LOW..HIGH PATTERN`: the pattern has one `{}`, a number; every line of the
//!   command's output that matches has it between LOW and HIGH (both included), and one
//!   line at least matches. A figure the page takes from a run, said in the prose as a
//!   range, is checked against each new run.
//! - `# quiet`: the command prints nothing, on purpose.
//!
//! A pattern matches anywhere in a line; `*` stands for any text, `{}` for a number
//! (`-1,024.5`: digits, with commas between thousands and a decimal point).
//!
//! And two rules every session is held to without saying anything:
//!
//! - A shown command prints something, unless it is quiet by nature (it only starts,
//!   stops, waits, builds or writes a file: `kill`, `sleep`, `cargo build`, a `>`) or is
//!   marked `# quiet`. A `grep` that finds nothing, on a page that describes what it found,
//!   is how an output goes stale.
//! - A suite summary that counts a failure (`58 checks: 53 pass, 4 expected limitations,
//!   1 fail`) is matched by an `# expect:` or `# range:` of its command: the page expects
//!   it. Otherwise a check failed while the session ran, and the page would show it.
//!
//! The generator (`main.rs`) checks each output before it writes it, and the book's check
//! (`book/tools/tests/prose`) checks the committed outputs of the fresh sessions.

use crate::session::{Kind, Step};

/// One thing a session expects of a command's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Expectation {
    Line(String),
    Absent(String),
    Range { low: f64, high: f64, pattern: String },
    Quiet,
}

impl Expectation {
    /// Reads an expectation from a comment line of a session, if it is one.
    pub fn parse(line: &str) -> Option<Result<Expectation, String>> {
        if line.trim_end() == "# quiet" {
            return Some(Ok(Expectation::Quiet));
        }
        for (prefix, absent) in [("# expect:", false), ("# absent:", true)] {
            if let Some(pattern) = line.strip_prefix(prefix) {
                let pattern = pattern.trim();
                if pattern.is_empty() {
                    return Some(Err(format!("`{prefix}` wants a pattern")));
                }
                let pattern = pattern.to_string();
                return Some(Ok(if absent {
                    Expectation::Absent(pattern)
                } else {
                    Expectation::Line(pattern)
                }));
            }
        }
        let rest = line.strip_prefix("# range:")?.trim();
        let parsed = (|| {
            let (range, pattern) = rest.split_once(' ')?;
            let (low, high) = range.split_once("..")?;
            let (low, high) = (number(low)?, number(high)?);
            let pattern = pattern.trim();
            (pattern.matches("{}").count() == 1 && low <= high).then(|| Expectation::Range {
                low,
                high,
                pattern: pattern.to_string(),
            })
        })();
        Some(parsed.ok_or_else(|| {
            format!(
                "`{line}`: a range is `# range: LOW..HIGH PATTERN`, with one `{{}}` in the \
                 pattern for the number"
            )
        }))
    }
}

/// `1,024.5` as a number.
fn number(text: &str) -> Option<f64> {
    text.trim().replace(',', "").parse().ok()
}

/// Does `pattern` match somewhere in `line`? The numbers its `{}`s stood for, in order.
pub fn matches(pattern: &str, line: &str) -> Option<Vec<f64>> {
    let pattern: Vec<char> = format!("*{pattern}*").chars().collect();
    let line: Vec<char> = line.chars().collect();
    let mut numbers = Vec::new();
    matches_at(&pattern, &line, &mut numbers).then_some(numbers)
}

fn matches_at(pattern: &[char], line: &[char], numbers: &mut Vec<f64>) -> bool {
    match pattern.first() {
        None => line.is_empty(),
        Some('*') => (0..=line.len()).any(|skip| matches_at(&pattern[1..], &line[skip..], numbers)),
        Some('{') if pattern.get(1) == Some(&'}') => {
            // A number: the longest run first, then shorter ones.
            let sign = usize::from(line.first() == Some(&'-'));
            let digits = line[sign..]
                .iter()
                .take_while(|c| c.is_ascii_digit() || **c == ',' || **c == '.')
                .count();
            for length in (1..=digits).rev() {
                let text: String = line[..sign + length].iter().collect();
                let Some(value) = number(&text) else { continue };
                if !line[sign].is_ascii_digit() {
                    continue;
                }
                numbers.push(value);
                if matches_at(&pattern[2..], &line[sign + length..], numbers) {
                    return true;
                }
                numbers.pop();
            }
            false
        }
        Some(c) => line.first() == Some(c) && matches_at(&pattern[1..], &line[1..], numbers),
    }
}

/// The output of each shown step, from the page's text of a session: the lines after its
/// command, up to the next shown command. Indexed like `steps`; a hidden step's is empty.
pub fn sections<'a>(page: &'a str, steps: &[Step]) -> Vec<Vec<&'a str>> {
    let lines: Vec<&str> = page.lines().collect();
    let mut sections = vec![Vec::new(); steps.len()];
    let shown: Vec<usize> =
        (0..steps.len()).filter(|index| steps[*index].kind != Kind::Hidden).collect();
    let mut next = 0;
    let mut current: Option<usize> = None;
    let mut at = 0;
    while at < lines.len() {
        if let Some(&index) = shown.get(next) {
            let command = steps[index].shown();
            if lines[at..].starts_with(&command.iter().map(String::as_str).collect::<Vec<_>>()) {
                current = Some(index);
                next += 1;
                at += command.len();
                continue;
            }
        }
        if let Some(index) = current {
            sections[index].push(lines[at]);
        }
        at += 1;
    }
    sections
}

/// Commands that print nothing by nature: they start, stop or wait for something, or set
/// something up.
const QUIET_BY_NATURE: &[&str] = &[
    "kill", "sleep", "wait", "mkdir", "ulimit", "exec", "cd", "export", "rm", "cp", "mv", "touch",
    "true", "trap", "unset", "set", "chmod", "ln",
];

/// Does this command print nothing, by what it is? Each of its parts (between `;`, `&&`
/// and `||`) only starts, stops, waits or builds, or sends its output to a file.
pub fn quiet_by_nature(command: &str) -> bool {
    let first_line = command.lines().next().unwrap_or_default();
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut quote: Option<char> = None;
    let chars: Vec<char> = first_line.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        match quote {
            Some(open) if c == open => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == ';'
                || (c == '&' && chars.get(index + 1) == Some(&'&'))
                || (c == '|' && chars.get(index + 1) == Some(&'|')) =>
            {
                parts.push(std::mem::take(&mut part));
                index += if c == ';' { 1 } else { 2 };
                continue;
            }
            None => {}
        }
        part.push(if quote.is_some() { ' ' } else { c });
        index += 1;
    }
    parts.push(part);
    parts.iter().all(|part| {
        let words: Vec<&str> = part.split_whitespace().collect();
        let Some(first) = words.first() else { return true };
        let assignment = first.contains('=') && !first.starts_with('=');
        let builds = words.len() > 1 && *first == "cargo" && words[1] == "build";
        let in_place = *first == "sed" && words.contains(&"-i");
        // `> file`, `>> file`, `>&3`, `&> file`; not `2> file` or `2>&1`.
        let redirected = part.char_indices().any(|(at, c)| {
            let before = part[..at].chars().next_back();
            c == '>'
                && before != Some('>')
                && before.is_none_or(|b| !b.is_ascii_digit() || b == '1')
                && before != Some('-')
        });
        QUIET_BY_NATURE.contains(first) || assignment || builds || in_place || redirected
    })
}

/// Is this line a suite summary, and how many failures does it count?
/// (`58 checks: 53 pass, 4 expected limitations, 1 fail, 0 skipped`, perhaps after a
/// label such as `chapter 4: `.)
pub fn summary_failures(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once(" checks: ").or_else(|| line.split_once(" check: "))?;
    let before_fail = rest.split(" fail").next()?;
    if !rest.contains(" pass, ") || before_fail.len() == rest.len() {
        return None;
    }
    before_fail.rsplit(' ').next()?.parse().ok()
}

/// What is wrong with `page`, the text a session printed, against what its `steps` expect.
pub fn check(page: &str, steps: &[Step]) -> Vec<String> {
    let sections = sections(page, steps);
    let mut problems = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        if step.kind == Kind::Hidden {
            continue;
        }
        let output = &sections[index];
        let command = step.lines.join("\n");
        let shown = &step.lines[0];
        let printed = output.iter().any(|line| !line.trim().is_empty());
        let backgrounded = step.kind == Kind::Background || command.trim_end().ends_with('&');
        let quiet = step.expect.contains(&Expectation::Quiet);
        if !printed && !backgrounded && !quiet && !quiet_by_nature(&command) {
            problems.push(format!(
                "`$ {shown}` printed nothing: a page that describes its output describes \
                 nothing (if it prints nothing on purpose, say so: `# quiet` above it)"
            ));
        }
        if printed && quiet && !backgrounded {
            problems.push(format!("`$ {shown}` is marked `# quiet` but printed: {}", output[0]));
        }
        for expectation in &step.expect {
            match expectation {
                Expectation::Quiet => {}
                Expectation::Absent(pattern) => {
                    if let Some(line) = output.iter().find(|line| matches(pattern, line).is_some())
                    {
                        problems.push(format!(
                            "`$ {shown}`: `{line}` matches `# absent: {pattern}`, which the page \
                             says is not there"
                        ));
                    }
                }
                Expectation::Line(pattern) => {
                    if !output.iter().any(|line| matches(pattern, line).is_some()) {
                        problems.push(format!(
                            "`$ {shown}`: no line of its output matches `# expect: {pattern}`"
                        ));
                    }
                }
                Expectation::Range { low, high, pattern } => {
                    let mut seen = 0;
                    for line in output {
                        let Some(numbers) = matches(pattern, line) else { continue };
                        seen += 1;
                        let value = numbers[0];
                        if value < *low || value > *high {
                            problems.push(format!(
                                "`$ {shown}`: {value} is outside the range the page gives, \
                                 {low}..{high}, in `{line}`: say what this run shows, and \
                                 give the range that holds (`# range:` and the prose)"
                            ));
                        }
                    }
                    if seen == 0 {
                        problems.push(format!(
                            "`$ {shown}`: no line of its output matches `# range: {low}..{high} \
                             {pattern}`"
                        ));
                    }
                }
            }
        }
        for line in output {
            let Some(failures) = summary_failures(line) else { continue };
            let expected = step.expect.iter().any(|expectation| match expectation {
                Expectation::Line(pattern) | Expectation::Range { pattern, .. } => {
                    matches(pattern, line).is_some()
                }
                Expectation::Quiet | Expectation::Absent(_) => false,
            });
            if failures > 0 && !expected {
                problems.push(format!(
                    "`$ {shown}`: the suite counts {failures} failing, which the page does not \
                     expect: `{line}`. A check failed while the session ran: run it again \
                     (alone, if the machine was busy); or, if the page shows a failure on \
                     purpose, say which with `# expect:` above the command"
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
#[path = "expect_tests.rs"]
mod tests;
