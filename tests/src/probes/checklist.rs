//! The checklist of the book's page on a reader's own server: every rule the probes hold a
//! server to, chapter by chapter, each with the probe that checks it, and every row of the
//! conformance corpus.
//!
//! It lives beside the probes so that every number it quotes (a bound, a timeout, a limit,
//! how many clients) is the probes' own constant, not a copy that could drift: change a
//! bound in a probe and the page changes with it. `cargo run -p suite -- --checklist`
//! prints it; `book/src/generated/checklist.md` is that output, and a test fails when the
//! two differ. Other tests here fail when a probe has no rule on the list, and when the
//! hand-written part of the page quotes a number the checklist does not.
//!
//! The chapters a rule applies to come from the manifest: a rule of a probe that checks
//! "keep-alive and pipelining" applies from the first chapter that has keep-alive, and a
//! rule can name another row of the table when part of a probe depends on it (the probe
//! that serves a FIFO sends SIGTERM only to chapters with a graceful shutdown).

use std::fmt::Write;
use std::time::Duration;

use super::basics::corpus::{self, Answer};
use super::slowloris::SLOWLORIS_CLIENTS;
use super::ten_thousand_idle::IDLE_BATCH;
use super::{PATIENCE, PROMPTLY};
use crate::chapters::CHAPTERS;
pub(crate) use crate::facts::in_words;
use crate::manifest::{self, Capability, Expect};
use crate::server::{FIRST_START_TIMEOUT, START_TIMEOUT};

/// Which chapters a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applies {
    /// Every chapter.
    Always,
    /// The chapters that have this capability.
    With(Capability),
    /// The chapters that lack it.
    Without(Capability),
}

impl Applies {
    /// The numbers of the chapters it applies to.
    pub fn chapters(self) -> Vec<u8> {
        CHAPTERS
            .iter()
            .filter(|chapter| match self {
                Applies::Always => true,
                Applies::With(capability) => {
                    manifest::expectation(capability, chapter) == Expect::Yes
                }
                Applies::Without(capability) => {
                    manifest::expectation(capability, chapter) != Expect::Yes
                }
            })
            .map(|chapter| chapter.number)
            .collect()
    }
}

/// One rule a server is held to.
#[derive(Debug)]
pub struct Rule {
    /// The probe that checks it, or [`EVERY_CHECK`].
    pub probe: &'static str,
    pub applies: Applies,
    /// What it is about, for a heading: "The routes".
    pub topic: &'static str,
    /// The rule, in Markdown.
    pub text: String,
}

/// A rule that every probe checks (the first line, the framing of every response).
pub const EVERY_CHECK: &str = "";

/// A rule of `probe`, for the chapters that have the probe's capability.
pub(crate) fn rule(probe: &'static str, topic: &'static str, text: String) -> Rule {
    let applies = match super::find(probe).map(|probe| probe.capability) {
        Some(Capability::Basics) | None => Applies::Always,
        Some(capability) => Applies::With(capability),
    };
    Rule { probe, applies, topic, text }
}

/// A rule of `probe` for the chapters `applies` says.
pub(crate) fn rule_if(
    applies: Applies, probe: &'static str, topic: &'static str, text: String,
) -> Rule {
    Rule { probe, applies, topic, text }
}

/// "5 s", "0.5 s", "1.5 s".
pub(crate) fn secs(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// "8 KiB", "1 MiB", "300,000 bytes".
pub(crate) fn size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes % KIB == 0 {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{} bytes", count(bytes as usize))
    }
}

/// A text built once for a table that lives as long as the program (a row's note, a
/// "no" sentence): kept for good, as the `&'static str` the table holds.
pub(crate) fn leak(text: String) -> &'static str {
    text.leak()
}

/// "once", "twice", "three times": how many times, in words.
pub(crate) fn times(count: usize) -> String {
    match count {
        1 => "once".into(),
        2 => "twice".into(),
        _ => format!("{} times", in_words(count)),
    }
}

/// "10,000".
pub(crate) fn count(number: usize) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// "`a`, `b` and `c`".
pub(crate) fn listed<T: AsRef<str>>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(|item| format!("`{}`", item.as_ref())).collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

// The topics: headings within a group of chapters, in the order of [`TOPICS`].
pub(crate) const STARTING: &str = "Starting, and the command line";
pub(crate) const RESPONSES: &str = "Every response";
pub(crate) const ROUTES: &str = "The routes";
pub(crate) const UPSTREAM: &str = "The upstream";
pub(crate) const READING: &str = "Reading requests";
pub(crate) const FAULTS: &str = "Odd clients and faults";
pub(crate) const FLOODS: &str = "Floods and memory";
pub(crate) const SHUTDOWN: &str = "Signals and shutdown";
pub(crate) const CONNECTIONS_TOPIC: &str = "Connections";
pub(crate) const WAITING: &str = "Waiting without blocking";
pub(crate) const DEPARTURES: &str = "Clients that leave";
pub(crate) const TIMEOUTS: &str = "Timeouts";
pub(crate) const LOOPS: &str = "Loops and threads";
const TOPICS: [&str; 13] = [
    STARTING,
    RESPONSES,
    CONNECTIONS_TOPIC,
    ROUTES,
    UPSTREAM,
    READING,
    WAITING,
    TIMEOUTS,
    DEPARTURES,
    FAULTS,
    FLOODS,
    SHUTDOWN,
    LOOPS,
];

// ANCHOR: rules
/// The rules every check holds a server to (its first line, the framing of every answer),
/// which no one module owns; each module of probes has its own (`rules` in each).
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
pub(super) fn every_check() -> Vec<Rule> {
    use Applies::Without;
    use Capability::KeepAlive;
    vec![
        rule(EVERY_CHECK, STARTING, format!(
            "The first line on standard output is exactly `listening on http://HOST:PORT`: the \
             host as given, and the port the system chose for `--port 0`. Flush it at once, \
             within {} of the start ({} the first time the runner starts your command, to leave \
             time for a compile).",
            secs(START_TIMEOUT), secs(FIRST_START_TIMEOUT))),
        rule(EVERY_CHECK, STARTING, format!(
            "Listen with a backlog of a thousand or more: a check opens up to {} connections at \
             once before it waits for the server to take them in, and while a chapter 1 server \
             serves one client, {} others may wait in the backlog.",
            count(IDLE_BATCH), count(SLOWLORIS_CLIENTS))),
        rule(EVERY_CHECK, RESPONSES,
            "The status line is `HTTP/1.1 NNN reason`, in answer to HTTP/1.0 requests too; \
             then `Name: value` header lines.".to_string()),
        rule(EVERY_CHECK, RESPONSES,
            "Exactly one `Server` header, not empty (name your server as you like).".to_string()),
        rule(EVERY_CHECK, RESPONSES,
            "One `Content-Length` on every answer but those to `HEAD`, and a 204 or a 304, \
             which never have a body. A `Content-Type` whenever there is a body (for `HEAD`: \
             whenever the `Content-Length` is not 0), error pages included.".to_string()),
        rule(EVERY_CHECK, RESPONSES, format!(
            "`Connection: close` on every answer after which the server closes; then the \
             connection ends, with nothing more sent, within {}. Closing without having said so \
             fails the check that sees it, but for these closes: a client that half-closed, \
             once it has all its answers, whether they said `Connection: close` or not \
             (`half_close`); at SIGTERM, a connection whose answer had sent its head before \
             the signal, once the rest is sent (`graceful_shutdown`), and one idle after its \
             answer (`prompt_shutdown`); and one whose timeout ran out (the *Timeouts* rules).",
            secs(PATIENCE))),
        rule_if(Without(KeepAlive), EVERY_CHECK, CONNECTIONS_TOPIC,
            "One request per connection: every answer says `Connection: close`, and the server \
             closes, whatever the request asked. A server that keeps a connection open here \
             fails nearly every check: keep-alive is not \"ahead\" of these chapters.".to_string()),
    ]
}
// ANCHOR_END: rules

/// A section of the checklist: the chapters it holds, as a heading says them.
fn heading(chapters: &[u8]) -> String {
    let all = CHAPTERS.len();
    let (Some(&first), Some(&last)) = (chapters.first(), chapters.last()) else {
        return "No chapter".into();
    };
    let contiguous = usize::from(last - first) + 1 == chapters.len();
    if chapters.len() == all {
        "Every chapter".into()
    } else if contiguous && usize::from(last) == all {
        format!("Chapter {first} on")
    } else if contiguous && first == 1 {
        match last {
            1 => "Chapter 1 only".into(),
            2 => "Chapters 1 and 2 only".into(),
            _ => format!("Chapters 1 to {last} only"),
        }
    } else {
        let names: Vec<String> = chapters.iter().map(u8::to_string).collect();
        format!("Chapters {}", names.join(", "))
    }
}

/// How a corpus row's answer reads in the list.
fn answer_text(answer: Answer) -> String {
    let statuses = |list: &[u16]| {
        let list: Vec<String> = list.iter().map(u16::to_string).collect();
        match list.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => list.concat(),
        }
    };
    match answer {
        Answer::Refused(list) => format!("refused, {}", statuses(list)),
        Answer::Answered(status, _) => format!("answered, {status}"),
        Answer::RefusedOrServed(list, _) => {
            format!("refused, {}, or answered, 200 with the body decoded", statuses(list))
        }
        Answer::RefusedEarly(list) => format!("refused early, {}", statuses(list)),
        Answer::Ends => "ends".into(),
    }
}

/// A request as an escaped code span, `GET /hello HTTP/1.1\r\nHost: suite\r\n\r\n`, with
/// a run of one byte or one pair of bytes written once with its count (`«7168 × a»`), and
/// the middle of what is still long left out (`…`).
fn request_shown(bytes: &[u8]) -> String {
    const WHOLE: usize = 100;
    const HEAD: usize = 64;
    const TAIL: usize = 28;
    // A backtick would end the code span.
    let escape = |bytes: &[u8]| -> String {
        bytes
            .iter()
            .map(|&byte| match byte {
                b'`' => "\\x60".to_string(),
                _ => std::ascii::escape_default(byte).to_string(),
            })
            .collect()
    };
    let mut pieces: Vec<String> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let run = |width: usize| {
            let unit = bytes.get(at..at + width)?;
            let count = bytes[at..].chunks(width).take_while(|chunk| *chunk == unit).count();
            (count >= 8).then_some((unit, count))
        };
        if let Some((unit, count)) = run(1).or_else(|| run(2)) {
            pieces.push(format!("«{count} × {}»", escape(unit)));
            at += unit.len() * count;
        } else {
            pieces.push(escape(&bytes[at..at + 1]));
            at += 1;
        }
    }
    let length =
        |pieces: &[String]| -> usize { pieces.iter().map(|piece| piece.chars().count()).sum() };
    if length(&pieces) <= WHOLE {
        return format!("`{}`", pieces.concat());
    }
    let mut head = Vec::new();
    for piece in &pieces {
        if length(&head) + piece.chars().count() > HEAD {
            break;
        }
        head.push(piece.clone());
    }
    let mut tail = Vec::new();
    for piece in pieces[head.len()..].iter().rev() {
        if length(&tail) + piece.chars().count() > TAIL {
            break;
        }
        tail.insert(0, piece.clone());
    }
    format!("`{}…{}`", head.concat(), tail.concat())
}

/// The checklist as Markdown, for the book (`cargo run -p suite -- --checklist`).
pub fn checklist() -> String {
    let mut out = String::new();
    // Writing into a String cannot fail, so the results are ignored.
    let _ = writeln!(
        out,
        "<!-- Generated from tests/src/probes/checklist.rs by `cargo run -p suite -- \
         --checklist`.\n     Do not edit: a test fails when this file and the code disagree. \
         -->"
    );
    let rules = super::rules();
    // The groups of chapters, in order: every chapter; those for the first chapters only,
    // the narrowest first; then "chapter N on", by N.
    let mut groups: Vec<Vec<u8>> = Vec::new();
    for rule in &rules {
        let chapters = rule.applies.chapters();
        if !groups.contains(&chapters) {
            groups.push(chapters);
        }
    }
    let last = CHAPTERS.last().map(|chapter| chapter.number);
    groups.sort_by_key(|chapters| {
        let to_the_end = chapters.last().copied() == last;
        (chapters.first().copied(), !to_the_end, chapters.last().copied())
    });
    for group in &groups {
        let _ = writeln!(out, "\n### {}", heading(group));
        let in_group: Vec<&Rule> =
            rules.iter().filter(|rule| &rule.applies.chapters() == group).collect();
        for topic in TOPICS {
            if !in_group.iter().any(|rule| rule.topic == topic) {
                continue;
            }
            let _ = writeln!(out, "\n**{topic}**\n");
            for rule in in_group.iter().filter(|rule| rule.topic == topic) {
                let by = match rule.probe {
                    EVERY_CHECK => "every check".to_string(),
                    probe => format!("`{probe}`"),
                };
                let _ = writeln!(out, "- {} ({by})", rule.text);
            }
        }
    }

    let _ = writeln!(
        out,
        "\n### The conformance corpus, row by row\n\n\
         Checked by `conformance_corpus` in every chapter (and sent again, all of it, by \
         `serves_after_abuse`). Each row is one request on a new connection (escaped: `\\r\\n` is \
         CR LF, `«7168 × a»` that many bytes `a`, `…` a part left out here; `cargo run -p suite \
         -- --only conformance_corpus` shows the rows your server answers differently), and \
         the answer it must get:\n\n\
         - **refused**: one of those statuses, with `Connection: close`, and then the \
         connection ends. A valid request is sent right behind it in the same write, and must \
         never be answered.\n\
         - **answered**: that status (and the body the route gives), and the connection stays \
         usable: a `POST /echo` sent right behind it must be answered next, with its own body \
         (unless the answer said `Connection: close`).\n\
         - **refused early**: the client sends only these bytes and waits, the connection \
         open; the refusal, with `Connection: close`, must come within {}.\n\
         - **ends**: the client sends these bytes and half-closes; the server must close \
         within {}, having sent nothing or a 4xx.\n",
        secs(PROMPTLY),
        secs(PATIENCE)
    );
    for case in corpus::corpus() {
        let _ = writeln!(
            out,
            "- **{}**: {}: {}",
            answer_text(case.answer),
            case.rule,
            request_shown(&case.request)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chapters::workspace_root;
    use crate::probes::PROBES;

    /// Every probe has a rule on the page, so a new probe cannot check what the page does
    /// not say; and every rule names a probe that exists.
    #[test]
    fn every_probe_has_a_rule() {
        let rules = crate::probes::rules();
        for probe in PROBES {
            assert!(
                rules.iter().any(|rule| rule.probe == probe.name),
                "the probe {} has no rule: say in its module's `rules` what it checks, then regenerate book/src/generated/checklist.md",
                probe.name
            );
        }
        for rule in &rules {
            assert!(
                rule.probe == EVERY_CHECK || crate::probes::find(rule.probe).is_some(),
                "a rule names {}, which is no probe",
                rule.probe
            );
        }
    }

    /// Every rule applies to some chapter, and has a topic the page shows: a rule for the
    /// chapters without a row every chapter has would be lost from the page.
    #[test]
    fn every_rule_is_shown() {
        for rule in crate::probes::rules() {
            assert!(!rule.applies.chapters().is_empty(), "{rule:?} applies to no chapter");
            assert!(TOPICS.contains(&rule.topic), "{rule:?}: its topic is not in TOPICS");
        }
    }

    #[test]
    fn numbers_read_as_the_page_writes_them() {
        assert_eq!(secs(Duration::from_millis(500)), "0.5 s");
        assert_eq!(secs(Duration::from_secs(30)), "30 s");
        assert_eq!(size(8 * 1024), "8 KiB");
        assert_eq!(size(24 << 20), "24 MiB");
        assert_eq!(size(300_000), "300,000 bytes");
        assert_eq!(count(10_000), "10,000");
        assert_eq!(count(100), "100");
        assert_eq!(heading(&[1, 2]), "Chapters 1 and 2 only");
        assert_eq!(heading(&[4, 5, 6, 7, 8, 9, 10, 11]), "Chapter 4 on");
        assert_eq!(listed(&["a", "b", "c"]), "`a`, `b` and `c`");
        assert_eq!(request_shown(b"GET /`x\r\n"), "`GET /\\x60x\\r\\n`");
        assert_eq!(request_shown(b"/?aaaaaaaaaa\r\n\r\n"), "`/?«10 × a»\\r\\n\\r\\n`");
        let long = request_shown(&crate::site::pattern(512));
        assert!(long.contains('…') && long.chars().count() < 100, "{long}");
    }

    /// The hand-written part of the page quotes no number the suite does not use: every
    /// "N s", "N ms", "N KiB" or "N MiB" on it appears in the generated checklist too, so a
    /// bound typed by hand cannot drift from the probes' constants. (Code blocks are left
    /// out: a command line is no bound.)
    #[test]
    fn the_page_quotes_only_the_suites_numbers() {
        let page = std::fs::read_to_string(workspace_root().join("book/src/your-server.md"))
            .expect("book/src/your-server.md");
        // As whole quotes, not text: "5 s" is not in the checklist because "1.5 s" is.
        let generated: std::collections::HashSet<String> =
            checklist().lines().flat_map(numbers_with_units).collect();
        let mut in_code = false;
        let mut strays = Vec::new();
        for line in page.lines() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            if in_code {
                continue;
            }
            for quoted in numbers_with_units(line) {
                if !generated.contains(&quoted) {
                    strays.push(quoted);
                }
            }
        }
        assert!(
            strays.is_empty(),
            "book/src/your-server.md quotes {strays:?}, which the generated checklist does not: \
             say the rule in the probe's module (its `rules`), with the probe's own constant"
        );
    }

    /// "10 s", "0.5 s", "8 KiB", "1 MiB", "700 ms" in a line of text.
    fn numbers_with_units(line: &str) -> Vec<String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut found = Vec::new();
        for pair in words.windows(2) {
            let number = pair[0].trim_start_matches(['(', '`']);
            let unit = pair[1].trim_end_matches([',', '.', ')', ';', ':']);
            let is_number = !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
                && number.starts_with(|c: char| c.is_ascii_digit());
            if is_number && ["s", "ms", "KiB", "MiB"].contains(&unit) {
                found.push(format!("{number} {unit}"));
            }
        }
        found
    }

    #[test]
    fn finds_numbers_with_units() {
        assert_eq!(
            numbers_with_units("within 10 s (30 s the first time), 8 KiB, 2 seconds"),
            ["10 s", "30 s", "8 KiB"]
        );
    }
}
