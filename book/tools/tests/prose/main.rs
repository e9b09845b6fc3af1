//! Checks that the book's prose still says what the code does.
//!
//! `book.rs` keeps what a page quotes true: excerpts, diffs and outputs are generated, and
//! a stale one fails. The prose around them is typed, and drifts: a function is renamed and
//! the sentence that walks through it is not, a file is added and "five are new" stays, a
//! session is made again and the page goes on describing the old run. These checks hold
//! the prose to the code:
//!
//! - names (`names.rs`): every name in backticks on a chapter's page, its answers, and
//!   the pages about every chapter (`hostile-clients.md`, `shared.md`, `course.md`,
//!   `your-server.md`) is in the code the page speaks of (the chapter's sources and its
//!   neighbours', `shared`, the suite, and the page's own code blocks), or in
//!   `book/names-outside.txt` (std, libc, the kernel, nginx, libuv, Redis, Tokio...), whose
//!   groups say why. "`name` in `file.rs`" and "`file.rs`'s `name`" must be defined in
//!   that very file; `Type::member` must be a member of that type.
//! - answers (`answers.rs`): every Rust block of an answer is built into a copy of its
//!   chapter (one `cargo check` of all of them, cached under the target folder), or is
//!   `rust,ignore` with the reason in the line before it.
//! - counts (`counts.rs`): a number typed before the things that change with the code
//!   (checks, files, lines, turns, fields, functions, calls, rows...) is generated
//!   (`generated/facts.md`, made by the suite), checked where it is made (by the diffs
//!   check, or a session's `# expect:`), or allowed by `book/counts-allowed.txt` with a
//!   reason.
//! - sessions: each fresh session's output shows what its `# expect:`, `# range:` and
//!   `# quiet` lines say, prints something for every shown command, and shows no suite
//!   failure nobody expects (`book/tools/src/bin/sessions/expect.rs`, which the generator runs
//!   too).
//! - diffs (`diffs.rs`): what a chapter's page says of its step's files ("`a.rs` is new",
//!   "six are gone", "the other files are chapter 8's") agrees with the step's generated
//!   diff table.
//! - diagrams (`pictures.rs`): each `images/*.svg` says what code it depicts; its text's
//!   names are in that code and its counts are held as a page's; the lock makes it stale
//!   when that code changes.
//!
//! It lives beside `book.rs`, as a test of its own, so that each can be run alone:
//! `cargo test -p book-tools --test prose`.

mod answers;
mod code;
mod counts;
mod diffs;
mod names;
mod pages;
mod pictures;

// The sessions' format and what they expect of their outputs, as the generator reads them
// (`book/tools/gen-sessions.sh`), and the lock that says which outputs are fresh.
#[allow(dead_code)] // the parts only the generator needs
#[path = "../../src/bin/sessions/expect.rs"]
mod expect;
#[allow(dead_code)]
#[path = "../../src/bin/sessions/session.rs"]
mod session;

use book_tools::lock;

use std::collections::BTreeSet;
use std::sync::OnceLock;

use code::Code;
use names::{code_name, joins_a_list, outside, said_to_be_in, Scope, OUTSIDE_FILE};
use pages::{checked_pages, prose, repository, spans, ALWAYS_IN_SCOPE, NEVER_IN_SCOPE};

/// Every source file the pages may speak of, read once for all the checks.
fn code() -> &'static Code {
    static CODE: OnceLock<Code> = OnceLock::new();
    CODE.get_or_init(|| {
        let mut roots = vec!["chapters"];
        roots.extend(ALWAYS_IN_SCOPE);
        Code::read(&repository(), &roots, NEVER_IN_SCOPE)
    })
}

#[test]
fn the_lexer_tells_code_from_comments_and_strings() {
    let index = code::index(
        "//! `ghost` in a comment\nstruct Buffer { start: usize, bytes: Vec<u8> }\n\
         impl<T> Shared for Buffer { fn consume(&mut self, count: usize) { let (a, mut b) = \
         (1, 2); } }\nenum Step { Done, Later(u8) }\nconst HELD_AT_MOST: u8 = b'x';\n\
         fn f<'a>(x: &'a str) -> &'static str { \"loop_turns {}\" }\nmacro_rules! log { () => {} }\n",
    );
    let defined = |name: &str, owner: Option<&str>| {
        index.definitions.iter().any(|d| d.name == name && d.owner.as_deref() == owner)
    };
    assert!(!index.words.contains("ghost"));
    assert!(index.words.contains("loop_turns"), "a name the code prints is a word");
    assert!(defined("Buffer", None) && defined("start", Some("Buffer")));
    assert!(defined("consume", Some("Buffer")), "a method belongs to its impl's type");
    assert!(defined("count", None) && defined("a", None) && defined("b", None));
    assert!(defined("Done", Some("Step")) && defined("Later", Some("Step")));
    assert!(defined("HELD_AT_MOST", None) && defined("log", None) && defined("x", None));
    assert!(!defined("a", Some("Step")), "a lifetime is no variant");
}

#[test]
fn code_names_are_told_from_other_spans() {
    let name = |span: &str| code_name(span).map(|name| name.text());
    assert_eq!(name("Buffer::consume").as_deref(), Some("Buffer::consume"));
    assert_eq!(name("self.received.consume(consumed)").as_deref(), Some("self.received.consume"));
    assert_eq!(name("&mut EventLoop<S>").as_deref(), Some("EventLoop"));
    assert_eq!(name("files::open(root, relative, delay)").as_deref(), Some("files::open"));
    assert_eq!(name("log!").as_deref(), Some("log"));
    assert_eq!(name("downcast_mut::<H>()").as_deref(), Some("downcast_mut"));
    let inner = code_name("Box<dyn Handler<S>>").map(|name| name.inner);
    assert_eq!(inner, Some(vec!["Handler".to_string()]));
    for not_code in [
        "--trace",
        "/stats",
        "main.rs",
        "shared/src/",
        "Connection: close",
        "GET /hello",
        "S",
        "async",
        "u8",
        "0x3",
        "Content-Length",
        "cargo test",
        "index.html",
    ] {
        assert_eq!(name(not_code), None, "{not_code}");
    }
}

#[test]
fn a_file_named_beside_a_name_is_found() {
    assert_eq!(
        said_to_be_in("read ", " in `tests/src/probes/bad_input.rs`: when").as_deref(),
        Some("tests/src/probes/bad_input.rs")
    );
    assert_eq!(said_to_be_in("", " in its `proactor.rs`), and").as_deref(), Some("proactor.rs"));
    assert_eq!(
        said_to_be_in("", " in chapter 4's event_loop.rs.").as_deref(),
        Some("event_loop.rs")
    );
    assert_eq!(said_to_be_in("see `buffer.rs`'s ", ", which").as_deref(), Some("buffer.rs"));
    assert_eq!(said_to_be_in("see ", " in the loop"), None);
}

/// The code a page writes itself, which its prose may name: its Rust blocks and those of
/// its other halves (a chapter's pages and its answers), and the spans that are code
/// (`fn size_of_return<A, B, F>(...)`, `if request.path == "/panic" { panic!("boom") }`).
fn own_code(page: &pages::Page) -> String {
    let mut sources = vec![page.path.clone()];
    if let Some(number) = page.chapter {
        let src = repository().join("book/src");
        sources.push(src.join(format!("answers/ch{number:02}.md")));
        sources.extend(pages::chapter_pages(number));
    }
    sources.sort();
    sources.dedup();
    let mut own = String::new();
    for source in sources.iter().filter(|source| source.is_file()) {
        let text = pages::read(source);
        for block in pages::blocks(&text).iter().filter(|block| block.info.starts_with("rust")) {
            own.push_str(&block.lines.join("\n"));
            own.push('\n');
        }
        for span in spans(&prose(&text)) {
            let first = span.text.split_whitespace().next().unwrap_or_default();
            if ["fn", "struct", "enum", "impl", "let", "pub", "const", "if", "match"]
                .contains(&first)
            {
                own.push_str(&span.text);
                own.push('\n');
            }
        }
    }
    own
}

/// The names in backticks on the checked pages that are not in the code they speak of,
/// nor outside it by the allow-list; `used` collects the allow-list's names that vouched.
/// Also how many code names were seen.
fn name_problems(allow_list: &names::Outside, used: &mut BTreeSet<String>) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut seen = 0;
    for page in checked_pages() {
        let text = pages::read(&page.path);
        let prose = prose(&text);
        let found = spans(&prose);
        let own = code::index(&own_code(&page));
        let scope = Scope { code: code(), roots: &page.scope, own: &own };
        for (index, span) in found.iter().enumerate() {
            let Some(name) = code_name(&span.text) else { continue };
            seen += 1;
            let place = format!("{}:{}", page.name(), span.line);
            // "`a`, `b` and `c` in file.rs": the file follows the list's last span.
            let mut last = index;
            while let Some(next) = found.get(last + 1) {
                if joins_a_list(&prose[found[last].end..next.start]) {
                    last += 1;
                } else {
                    break;
                }
            }
            let before = pages::slice(&prose, span.start.saturating_sub(60), span.start);
            let after = pages::slice(&prose, found[last].end, found[last].end + 60);
            let file = said_to_be_in(before, after);
            let why = match &file {
                Some(file) => scope.missing_in_file(&name, file),
                None => scope.missing(&name, allow_list, used),
            };
            if let Some(why) = why {
                problems.push(format!("{place}: `{}`: {why}", span.text));
            }
        }
    }
    (problems, seen)
}

/// Every name in backticks is in the code its page speaks of, or outside it by the
/// allow-list; a name said to be in a file is defined in that file.
#[test]
fn every_name_in_backticks_is_in_the_code() {
    let allow_list = outside(&pages::read(&repository().join(OUTSIDE_FILE)));
    let (problems, seen) = name_problems(&allow_list, &mut BTreeSet::new());
    assert!(seen > 100, "only {seen} code names found: is code_name still finding them?");
    assert!(
        problems.is_empty(),
        "{} names in the book are not in the code they speak of. Name what the code calls \
         it (a name said to be in a file: what that file defines); or, if it is not ours, add \
         it to {OUTSIDE_FILE} in the group that says why:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

#[test]
fn an_answers_items_are_found_with_their_comments() {
    let source = "use std::io;\n\n/// Reads.\n#[inline]\npub(crate) fn read(x: u8) -> impl Fn() { || {} }\n\
                  impl Handler<S> for Connection {\n    fn on_readable(&mut self) { let _ = 1; }\n}\n\
                  const LIMIT: [u8; 2] = [1, 2];\n";
    let top: Vec<(String, String)> =
        answers::items(source, false).into_iter().map(|item| (item.keyword, item.name)).collect();
    assert_eq!(
        top,
        [
            ("use".to_string(), "use std :: io".to_string()),
            ("fn".to_string(), "read".to_string()),
            ("impl".to_string(), "impl Handler < S > for Connection".to_string()),
            ("const".to_string(), "LIMIT".to_string()),
        ]
    );
    let read = &answers::items(source, false)[1];
    assert!(source[read.start..read.end].starts_with("/// Reads.\n#[inline]\npub(crate) fn"));
    assert!(source[read.start..read.end].ends_with("|| {} }"));
    let deep: Vec<String> =
        answers::items(source, true).into_iter().map(|item| item.name).collect();
    assert!(deep.contains(&"on_readable".to_string()));
}

/// Every Rust block of an answer builds against its chapter, or says why it cannot.
#[test]
fn every_answers_rust_builds_against_its_chapter() {
    let (blocks, mut problems) = answers::answer_blocks();
    assert!(!blocks.is_empty(), "no answer has a Rust block to build: are they all marked ignore?");
    let workspace = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("answers");
    problems.extend(answers::build(&blocks, &workspace));
    assert!(
        problems.is_empty(),
        "{} blocks of Rust in the answers do not build against their chapter. Fix the block \
         (it is what the reader is told to write), or mark it `rust,ignore` with the reason in \
         the line before it, `<!-- ignore: a fragment of ... -->`:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// Every fresh session's output shows what the session expects of it: no shown command
/// that printed nothing, no suite failure the page does not expect, every `# expect:` and
/// `# range:` holding (`book/tools/src/bin/sessions/expect.rs`). The generator checks the same
/// before it writes an output; this catches an output made before a session said what it
/// expects, or edited by hand. (A stale session is `book.rs`'s to report; set
/// `PROSE_CHECK_STALE=1` to check the stale ones' last outputs too.)
#[test]
fn every_session_shows_what_it_expects() {
    let root = repository();
    let locked = lock::read_lock(&root);
    let mut problems = Vec::new();
    let mut checked = 0;
    // `PROSE_CHECK_STALE=1`: the stale ones too, to try a session's new expectations on
    // the output it made last, before running it again.
    let every_output = std::env::var_os("PROSE_CHECK_STALE").is_some();
    for piece in lock::pieces(&root).unwrap_or_else(|error| panic!("{error}")) {
        if !piece.output.starts_with(lock::SESSION_OUTPUTS) {
            continue;
        }
        let fresh = lock::hash_of(&root, &piece).ok().as_ref() == locked.get(&piece.name);
        let Ok(page) = std::fs::read_to_string(root.join(&piece.output)) else { continue };
        if !fresh && !every_output {
            continue;
        }
        checked += 1;
        let script = pages::read(&root.join(lock::SESSIONS).join(format!("{}.sh", piece.name)));
        match session::parse(&script) {
            Err(error) => problems.push(format!("{}/{}.sh: {error}", lock::SESSIONS, piece.name)),
            Ok(session) => problems.extend(
                expect::check(&page, &session.steps)
                    .into_iter()
                    .map(|problem| format!("{}: {problem}", piece.output)),
            ),
        }
    }
    assert!(
        checked > 0 || lock::pieces(&root).is_ok_and(|p| p.is_empty()),
        "no fresh session to check"
    );
    assert!(
        problems.is_empty(),
        "{} sessions show what their page does not expect. Fix the session (or the page's \
         description and the session's `# expect:` / `# range:` lines with it), and run \
         book/tools/gen-sessions.sh NAME:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

#[test]
fn counts_are_found_before_the_nouns_that_drift() {
    let phrases = |text: &str| -> Vec<String> {
        counts::counts(text).into_iter().map(|count| count.phrase).collect()
    };
    assert_eq!(
        phrases(
            "Six files are new. It runs four of the 54): three timeout checks, and `four \
                 calls` in code, five depths, 16 KiB, 200 MiB file, a dozen or so calls."
        ),
        ["Six files", "four of the 54", "three timeout checks", "five depths"]
    );
    assert_eq!(
        phrases("Three more\nrows turn to yes; one line; two, then files"),
        ["Three more rows"]
    );
}

/// The counts typed on the checked pages that nothing vouches for; `used` collects the
/// allow-list's lines that vouched.
fn count_problems(allowed: &counts::Allowed, used: &mut BTreeSet<(String, String)>) -> Vec<String> {
    let src = repository().join("book/src");
    let mut problems = Vec::new();
    for page in checked_pages() {
        let name =
            page.path.strip_prefix(&src).unwrap_or(&page.path).to_string_lossy().into_owned();
        let prose = prose(&pages::read(&page.path));
        let verified = match page.chapter {
            Some(chapter) if !name.starts_with("answers/") => diffs::check_page(chapter, &prose).1,
            _ => Vec::new(),
        };
        for count in counts::unvouched(&name, &prose, allowed, &verified, used) {
            problems.push(format!("{}:{}: \"{}\"", page.name(), count.line, count.phrase));
        }
    }
    problems
}

/// A count the prose types is generated, checked, or allowed with a reason.
#[test]
fn no_count_is_typed_where_it_can_drift() {
    let allowed = counts::allowed(&pages::read(&repository().join(counts::ALLOWED_FILE)));
    let problems = count_problems(&allowed, &mut BTreeSet::new());
    assert!(
        problems.is_empty(),
        "{} counts are typed where they can drift. Include the generated number \
         (generated/facts.md), let the sentence say what the count was for without it, or, \
         for a fact that cannot change without the page's lesson, list `PAGE: PHRASE` in {} \
         under the reason:\n  {}",
        problems.len(),
        counts::ALLOWED_FILE,
        problems.join("\n  ")
    );
}

/// What a chapter's page says about its step's files agrees with the step's diff table.
#[test]
fn what_a_page_says_of_its_files_is_what_its_diff_shows() {
    let mut problems = Vec::new();
    for page in checked_pages() {
        let Some(chapter) = page.chapter else { continue };
        if page.name().contains("/answers/") {
            continue;
        }
        let prose = prose(&pages::read(&page.path));
        for problem in diffs::check_page(chapter, &prose).0 {
            problems.push(format!("{}:{problem}", page.name()));
        }
    }
    assert!(
        problems.is_empty(),
        "{} things the pages say of their step's files are not what its diff shows \
         (book/src/generated/diff-MM-NN.md):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

#[test]
fn a_diagrams_words_and_names_are_found() {
    let svg = "<svg><title>A turn</title><text x=\"1\">a HashMap from Token</text>\
               <text>poll(list, timeout) on loop-1</text><textPath>no</textPath>\
               <text>run_app &amp; files::CHUNK</text></svg>";
    let lines = pictures::text_of(svg);
    assert_eq!(
        lines,
        [
            "A turn",
            "a HashMap from Token",
            "poll(list, timeout) on loop-1",
            "run_app & files::CHUNK"
        ]
    );
    let names: Vec<String> = lines.iter().flat_map(|line| pictures::names_in(line)).collect();
    assert_eq!(names, ["HashMap", "poll", "run_app", "files::CHUNK"]);
}

/// What the diagrams say that the code they depict does not have: names, and counts
/// nothing vouches for. `used_names` and `used_counts` collect what the allow-lists
/// vouched for.
fn diagram_problems(
    allow_list: &names::Outside, allowed: &counts::Allowed, used_names: &mut BTreeSet<String>,
    used_counts: &mut BTreeSet<(String, String)>,
) -> Vec<String> {
    let root = repository();
    let mut problems = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(root.join(lock::IMAGES))
        .expect("book/src/images")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "svg"))
        .collect();
    entries.sort();
    for path in &entries {
        let name = pages::short(path);
        let svg = pages::read(path);
        let Some(files) = lock::depicted(&svg) else {
            problems.push(format!(
                "{name}: says nothing of what it depicts: add `<!-- depicts: FILE... -->` (the \
                 code it shows, from the repository's root) or `<!-- depicts: none -->`"
            ));
            continue;
        };
        for file in files.iter().filter(|file| !root.join(file).is_file()) {
            problems.push(format!("{name}: depicts {file}, which does not exist"));
        }
        // A picture of an idea may use any of our names; a picture of code, its code's.
        let roots: Vec<String> = if files.is_empty() {
            std::iter::once("chapters")
                .chain(ALWAYS_IN_SCOPE.iter().copied())
                .map(str::to_string)
                .collect()
        } else {
            files.clone()
        };
        let nothing = code::FileIndex::default();
        let scope = Scope { code: code(), roots: &roots, own: &nothing };
        let lines = pictures::text_of(&svg);
        for line in &lines {
            for word in pictures::names_in(line) {
                let Some(parsed) = code_name(&word) else { continue };
                if let Some(why) = scope.missing(&parsed, allow_list, used_names) {
                    let at = line.find(&word).unwrap_or_default();
                    let context = pages::slice(line, at.saturating_sub(30), at + word.len() + 30);
                    problems.push(format!("{name}: `{word}` (in \"...{context}...\"): {why}"));
                }
            }
        }
        let page =
            path.strip_prefix(root.join("book/src")).unwrap_or(path).to_string_lossy().into_owned();
        for count in counts::unvouched(&page, &lines.join(".\n"), allowed, &[], used_counts) {
            problems
                .push(format!("{name}: \"{}\" is a count typed where it can drift", count.phrase));
        }
    }
    problems
}

/// Every diagram says what it depicts; the names its text writes are in those files (or
/// outside our code, by the allow-list), and its counts are held as a page's.
#[test]
fn every_diagram_names_what_the_code_it_depicts_has() {
    let root = repository();
    let allow_list = outside(&pages::read(&root.join(OUTSIDE_FILE)));
    let allowed = counts::allowed(&pages::read(&root.join(counts::ALLOWED_FILE)));
    let problems =
        diagram_problems(&allow_list, &allowed, &mut BTreeSet::new(), &mut BTreeSet::new());
    assert!(
        problems.is_empty(),
        "{} things the diagrams say are not what the code they depict has (a name must be in \
         the files its `depicts:` line names, or in {OUTSIDE_FILE}; a count, in {}):\n  {}",
        problems.len(),
        counts::ALLOWED_FILE,
        problems.join("\n  ")
    );
}

/// The allow-lists are well formed, and every line of them still vouches for something a
/// page or a diagram writes.
#[test]
fn the_allow_lists_hold_only_what_is_used() {
    let root = repository();
    let allow_list = outside(&pages::read(&root.join(OUTSIDE_FILE)));
    let allowed = counts::allowed(&pages::read(&root.join(counts::ALLOWED_FILE)));
    let mut problems = allow_list.problems.clone();
    problems.extend(allowed.problems.iter().cloned());
    let (mut used_names, mut used_counts) = (BTreeSet::new(), BTreeSet::new());
    let _ = name_problems(&allow_list, &mut used_names);
    let _ = count_problems(&allowed, &mut used_counts);
    let _ = diagram_problems(&allow_list, &allowed, &mut used_names, &mut used_counts);
    for (name, (group, line)) in &allow_list.names {
        if !used_names.contains(name) {
            problems.push(format!(
                "{OUTSIDE_FILE}:{line}: `{name}` (\"{group}\") vouches for no name a page or \
                 diagram writes outside our code any more: remove it"
            ));
        }
    }
    for ((page, phrase), (_, line)) in &allowed.phrases {
        if !used_counts.contains(&(page.clone(), phrase.clone())) {
            problems.push(format!(
                "{}:{line}: `{page}: {phrase}` allows a count no page or diagram types any \
                 more: remove it",
                counts::ALLOWED_FILE
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
