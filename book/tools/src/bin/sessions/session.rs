//! A session file, `book/sessions/NAME.sh`: what it runs and shows, and the bash script
//! that runs it.
//!
//! The format (the generator's `--help` says the same):
//!
//! ```text
//! # inputs: chapters/08-async shared/src shared/Cargo.toml
//! # timeout: 120
//! # any other line starting with `# ` is a comment
//! @ cargo build -p ch08-async
//! $ cargo run -p ch08-async &
//! @ book/tools/wait-for-port.sh 8080
//! $ curl -s http://127.0.0.1:8080/stats
//! & cargo run -p ch08-async -- --port 8081
//! @ kill %1 %2; wait
//! ```
//!
//! - `# inputs:` what the output depends on (files, or folders taken recursively),
//!   relative to the repository's root; `book/tools/src/lock.rs` hashes them.
//! - `# timeout:` how many seconds the whole session may take (default 120).
//! - `$ command`: shown on the page as `$ command`, and run.
//! - `& command`: shown as `$ command`, and run in the background: a server the page runs
//!   in a terminal of its own. It must not end with a comment (` &` is added at its end).
//! - `@ command`: run, not shown, its output dropped: setup (build first, wait until a
//!   server listens, stop it). A setup command that fails stops the session.
//! - `# expect: PATTERN`, `# absent: PATTERN`, `# range: LOW..HIGH PATTERN`, `# quiet`,
//!   above a shown command:
//!   what its output must show, checked each time the session runs (`expect.rs`). A shown
//!   command that prints nothing, and a suite summary that counts a failure, fail the
//!   session unless these lines say the page expects it.
//!
//! A line ending in `\` continues on the next line, and a here-document (`<<'EOF'`) runs
//! to its end marker: shown and run as one command. All of it runs from the repository's
//! root, in one bash process, in order, so `&`, `%1` and `kill %1` work as in a terminal.

use std::time::Duration;

use crate::expect::Expectation;

/// How a step of a session is run and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `$`: shown and run.
    Shown,
    /// `&`: shown, run in the background.
    Background,
    /// `@`: run, not shown.
    Hidden,
}

/// One command of a session, with its continuation lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub kind: Kind,
    /// The command as the reader types it: the first line without its prefix, then any
    /// continuation lines as they are.
    pub lines: Vec<String>,
    /// What its output must show (`# expect:`, `# range:`, `# quiet` above it; see
    /// `expect.rs`).
    pub expect: Vec<Expectation>,
}

impl Step {
    /// How the page shows it: `$ ` before the first line.
    pub fn shown(&self) -> Vec<String> {
        let mut shown = self.lines.clone();
        shown[0] = format!("$ {}", shown[0]);
        shown
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub steps: Vec<Step>,
    pub timeout: Duration,
}

/// The default time a session may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Reads a session file's text.
pub fn parse(text: &str) -> Result<Session, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut timeout = TIMEOUT;
    // Inside a command: the here-document's end marker we wait for, or a `\` at the end of
    // the last line.
    let mut until: Option<String> = None;
    let mut continues = false;
    // Expectations read since the last command, for the next.
    let mut expect = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if let Some(marker) = &until {
            let step = steps.last_mut().expect("a here-document is inside a step");
            step.lines.push(line.to_string());
            if line.trim() == marker {
                until = None;
            }
            continue;
        }
        if continues {
            let step = steps.last_mut().expect("a continuation is inside a step");
            step.lines.push(line.to_string());
            continues = line.ends_with('\\');
            until = here_document(line);
            continue;
        }
        let kind = match line.get(..2) {
            Some("$ ") => Kind::Shown,
            Some("& ") => Kind::Background,
            Some("@ ") => Kind::Hidden,
            _ if line.trim().is_empty() => continue,
            _ if line.starts_with('#') => {
                if let Some(expectation) = Expectation::parse(line) {
                    expect.push(expectation.map_err(|error| format!("line {number}: {error}"))?);
                } else if let Some(seconds) = line.strip_prefix("# timeout:") {
                    let seconds: u64 = seconds.trim().parse().map_err(|_| {
                        format!("line {number}: `# timeout:` wants a number of seconds")
                    })?;
                    timeout = Duration::from_secs(seconds);
                }
                continue;
            }
            _ => {
                return Err(format!(
                    "line {number}: a line starts with `$ `, `& `, `@ ` or `#`, or continues \
                     the command above it (which then ends with `\\`): {line}"
                ))
            }
        };
        let command = line[2..].to_string();
        if command.trim().is_empty() {
            return Err(format!("line {number}: an empty command"));
        }
        continues = command.ends_with('\\');
        until = here_document(&command);
        if kind == Kind::Hidden && !expect.is_empty() {
            return Err(format!(
                "line {number}: an expectation (`# expect:`, `# absent:`, `# range:`, `# quiet`) \
                 above a hidden step, whose output is dropped"
            ));
        }
        steps.push(Step { kind, lines: vec![command], expect: std::mem::take(&mut expect) });
    }
    if continues || until.is_some() {
        return Err("the last command is not finished (a `\\` or a here-document)".to_string());
    }
    if !expect.is_empty() {
        return Err("an expectation after the last command: it goes above its command".to_string());
    }
    for step in steps.iter().filter(|step| step.kind == Kind::Background) {
        let last = step.lines.last().map(String::as_str).unwrap_or_default();
        if last.contains(" #") {
            return Err(format!(
                "`& {}`: a background command must not end with a comment",
                step.lines[0]
            ));
        }
    }
    Ok(Session { steps, timeout })
}

/// The end marker of a here-document this line opens (`<<'EOF'`, `<<"EOF"`, `<<EOF`,
/// `<<-EOF`), if it opens one.
pub fn here_document(line: &str) -> Option<String> {
    let start = line.find("<<")?;
    let rest = line[start + 2..].trim_start_matches('-').trim_start();
    if rest.starts_with('<') {
        return None; // `<<<`, a here-string, is one line
    }
    let word: String = rest
        .chars()
        .filter(|c| *c != '\'' && *c != '"')
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The bytes that mark, in the output, where shown command `index` begins: the record
/// separator, the number, the separator again. No program we run prints them.
pub fn marker(index: usize) -> String {
    format!("\u{1e}{index}\u{1e}")
}

/// The bash script that runs `session` from `root`. `setup_log` takes the output of the
/// setup steps, which a failure shows. A setup step that fails ends the script with
/// status 97.
pub fn script(session: &Session, root: &str) -> String {
    let mut script = String::new();
    script.push_str(&format!("cd {} || exit 98\n", quote(root)));
    for (index, step) in session.steps.iter().enumerate() {
        let command = step.lines.join("\n");
        match step.kind {
            Kind::Shown => {
                script.push_str(&format!("printf '%s\\n' {}\n", quote(&marker(index))));
                script.push_str(&command);
                script.push('\n');
            }
            Kind::Background => {
                script.push_str(&format!("printf '%s\\n' {}\n", quote(&marker(index))));
                script.push_str(&command);
                script.push_str(" &\n");
            }
            Kind::Hidden => {
                // Braces, not a subshell: `kill %1` and `wait` must see this shell's jobs.
                script.push_str(&format!(
                    "{{ {command}\n}} >>\"$SESSION_SETUP_LOG\" 2>&1 || {{ \
                     echo \"setup failed: \"{} >>\"$SESSION_SETUP_LOG\"; exit 97; }}\n",
                    quote(&step.lines[0])
                ));
            }
        }
    }
    script
}

/// `text` in single quotes, for bash.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The ports a session waits for with `book/tools/wait-for-port.sh PORT`: nothing else may
/// listen there before it starts.
pub fn ports(session: &Session) -> Vec<u16> {
    let mut ports = Vec::new();
    for step in &session.steps {
        for line in &step.lines {
            let mut words = line.split_whitespace();
            while let Some(word) = words.next() {
                if word.ends_with("wait-for-port.sh") {
                    ports.extend(words.next().and_then(|port| port.parse::<u16>().ok()));
                }
            }
        }
    }
    ports
}
