//! The sketches as `cargo test` grades them: one test per sketch and check, named like
//! `sketch_4::departing_clients` (`cargo test -p suite --test sketches sketch_4::` grades one
//! sketch). Each chapter's sketch, `chapters/NN-name/examples/chNN-sketch.rs`, is built once
//! and held to its chapter's column on the checks `manifest::SKETCHES` declares, run as a
//! reader's server is run under `--command`. A sketch not written yet is skipped, loudly.

use std::path::PathBuf;

/// Where the sketches are built: the suite's target directory of its own (see
/// `Chapter::binary`), shared with tests/suite.rs.
fn build_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("suite-bins")
}

/// A module per sketch, a test per check.
macro_rules! sketches {
    ($($module:ident: $chapter:literal [$($check:ident),* $(,)?]),* $(,)?) => {
        /// Each sketch's checks as this file has them (checked against the manifest below).
        const GRADED: &[(u8, &[&str])] = &[$(($chapter, &[$(stringify!($check)),*])),*];
        $(
            mod $module {
                $(
                    #[test]
                    fn $check() {
                        suite::harness::test_sketch($chapter, stringify!($check), &super::build_dir());
                    }
                )*
            }
        )*
    };
}

sketches! {
    sketch_1: 1 [
        command_line, ipv6_host, index_page, hello, sleep_route, stats_route, head_requests,
        not_found, method_not_allowed, unknown_method, echo, echo_needs_length, echo_too_large,
        files, big_file_intact, path_traversal, fifo_under_root, upstream_relay, upstream_errors,
        upstream_timeout, conformance_corpus, trickled_request, body_split_across_writes,
        client_resets_mid_response, clients_that_vanish, serves_after_abuse, half_close,
        urgent_byte, file_removed_mid_response, stray_signals, closed_stderr, unread_stderr,
        descriptor_exhaustion, pipelined_without_reading, idle_buffers_given_back,
        idle_after_a_burst, memory_after_a_storm, burst_of_clients,
    ],
    sketch_2: 2 [idle_client, half_sent_request, ten_thousand_idle, slow_reader],
    sketch_3: 3 [
        keep_alive, pipelining, pipelined_flood, flood_behind_a_wait, graceful_shutdown,
        prompt_shutdown,
    ],
    sketch_4: 4 [sleep_elsewhere, departing_clients, header_timeout, waits_without_spinning, slowloris],
    sketch_5: 5 [sleep_elsewhere],
    sketch_6: 6 [slow_disk],
    sketch_7: 7 [ten_thousand_idle_slowdown],
    sketch_8: 8 [sleep_elsewhere, answers_as_ready],
    sketch_9: 9 [spread_over_loops],
    sketch_10: 10 [keep_alive, pipelining],
    sketch_11: 11 [keep_alive, pipelining],
}

/// The tests here are exactly what the manifest declares: a sketch's rows changed there
/// must change here too, or this fails.
#[test]
fn every_sketch_and_check_has_a_test() {
    for sketch in suite::manifest::SKETCHES {
        let declared: Vec<&str> = sketch.checks().iter().map(|probe| probe.name).collect();
        let here = GRADED.iter().find(|(chapter, _)| *chapter == sketch.chapter);
        assert_eq!(
            here.map(|(_, checks)| checks.to_vec()),
            Some(declared),
            "sketch {}: the checks in tests/sketches.rs and in manifest::SKETCHES differ",
            sketch.chapter
        );
    }
    assert_eq!(GRADED.len(), suite::manifest::SKETCHES.len());
}
