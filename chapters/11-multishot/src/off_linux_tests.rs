//! Off Linux there is no io_uring, so none of this chapter's unit tests can run: they are
//! built on Linux only, and this one says so, past the test harness's capture.

use std::io::Write;

#[test]
fn the_unit_tests_need_linux() {
    let refusal = shared::system::refusal(11, "io_uring");
    let _ = writeln!(std::io::stderr(), "SKIPPED: chapter 11's unit tests: {refusal}");
}
