//! The HTTP suite as `cargo test` runs it: one test per probe and chapter, named like
//! `idle_client::chapter_1_1` (`cargo test -p suite idle_client` runs one probe on every
//! chapter; `cargo test -p suite chapter_2_` every probe on chapter 2).
//!
//! Each test starts its own server on a free port, so they all run in parallel. Chapters
//! whose directory does not exist yet pass without running (the suite says so once on
//! stderr). Expected limitations are printed: see them with
//! `cargo test -p suite -- --nocapture`.

use std::path::PathBuf;

use rstest::rstest;

/// Where the chapters' programs are built: a target directory of their own (see
/// `Chapter::binary` for why), inside the one `cargo test` uses.
fn build_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("suite-bins")
}

/// One rstest function per probe, each with one case per chapter.
macro_rules! suite {
    (chapters: $chapters:tt; probes: [$($probe:ident),* $(,)?]) => {
        /// The chapter numbers the cases cover (checked against `CHAPTERS` below).
        const CHAPTER_NUMBERS: &[u8] = &$chapters;
        /// The probes that have a test here (checked against `PROBES` below).
        const PROBE_NAMES: &[&str] = &[$(stringify!($probe)),*];
        $( suite!(@test $probe $chapters); )*
    };
    (@test $probe:ident [$($chapter:literal),*]) => {
        #[rstest]
        fn $probe(#[values($($chapter),*)] chapter: u8) {
            suite::harness::test(chapter, stringify!($probe), &build_dir());
        }
    };
}

suite! {
    chapters: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    probes: [
        command_line, ipv6_host, index_page, hello, sleep_route, stats_route, head_requests, not_found,
        method_not_allowed, unknown_method, echo, echo_needs_length, echo_too_large, files,
        big_file_intact, path_traversal, fifo_under_root, upstream_relay, upstream_errors,
        upstream_timeout, conformance_corpus, trickled_request, body_split_across_writes,
        client_resets_mid_response, clients_that_vanish, serves_after_abuse,
        half_close, urgent_byte, file_removed_mid_response, stray_signals, closed_stderr, unread_stderr,
        descriptor_exhaustion, pipelined_without_reading, idle_buffers_given_back,
        idle_after_a_burst, memory_after_a_storm, burst_of_clients,
        idle_client, half_sent_request, ten_thousand_idle, slow_reader, keep_alive,
        pipelining, pipelined_flood, flood_behind_a_wait, graceful_shutdown, prompt_shutdown,
        sleep_elsewhere,
        slow_upstream, answers_as_ready, departing_clients, header_timeout, keep_alive_timeout, send_timeout, waits_without_spinning, slowloris, slow_disk,
        big_download_memory, ten_thousand_idle_slowdown, spread_over_loops,
    ]
}

#[test]
fn every_chapter_and_probe_has_tests() {
    let chapters: Vec<u8> = suite::chapters::CHAPTERS.iter().map(|c| c.number).collect();
    assert_eq!(CHAPTER_NUMBERS, chapters, "the chapters in tests/suite.rs and in CHAPTERS differ");
    let probes: Vec<&str> = suite::probes::PROBES.iter().map(|p| p.name).collect();
    assert_eq!(PROBE_NAMES, probes, "the probes in tests/suite.rs and in PROBES differ");
}

/// The book's appendix shows the capability table generated from the manifest; this
/// keeps the two the same.
#[test]
fn book_capability_table_is_current() {
    let path = suite::chapters::workspace_root().join("book/src/generated/capabilities.md");
    let in_book = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        in_book == suite::manifest::capability_table(),
        "{} is out of date with the manifest (tests/src/manifest.rs, and the rows' texts in \
         the modules of tests/src/probes/); regenerate it with\n    \
         cargo run -p suite -- --capability-table > book/src/generated/capabilities.md",
        path.display()
    );
}

/// The book's page on a reader's own server includes the checklist generated from the
/// probes (every rule, with the probes' own numbers); this keeps the two the same.
#[test]
fn book_checklist_is_current() {
    let path = suite::chapters::workspace_root().join("book/src/generated/checklist.md");
    let in_book = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        in_book == suite::probes::checklist::checklist(),
        "{} is out of date with the probes (the rules of each module in tests/src/probes/, \
         and the constants they quote); regenerate it with\n    \
         cargo run -p suite -- --checklist > book/src/generated/checklist.md",
        path.display()
    );
}
