//! The row "a slow disk (`--fs-delay-ms`) does not hold up others" (chapter 6 on): file
//! work leaves the loop.
//!
//! - [`slow_disk`]: a `GET /hello` while another client's file waits on a slow disk, in
//!   the shape of `sleep_and_upstream.rs`'s probes.

use std::time::Duration;

use super::sleep_and_upstream::{served_while_busy, with_longer_holds, HOLDS_MS};
use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{rule, Rule, WAITING};
use crate::probes::{
    check, connect, expect_status, get, make_site, needs_own_server, sending, until_read, Probed,
    Target,
};
use crate::probes::{probe, Module, Probe};
use crate::server::Options;
use crate::site;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("slow_disk", Capability::SlowDisk, slow_disk),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::SlowDisk,
        description: "a slow disk (`--fs-delay-ms`) does not hold up others",
        chapters: [
            No("ch01 reads files with blocking calls: a slow disk stops the whole server."),
            No("ch02 reads files with blocking calls inside its poll loop: a slow disk \
                stalls every connection."),
            No("ch03 reads files with blocking calls inside its event loop: a slow disk \
                stalls every connection."),
            No("ch04's timers don't help with files: a file read still blocks the loop \
                thread."),
            No("ch05's promises change how callbacks are written, not where the work runs: \
                a file read still blocks the loop thread."),
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
            Yes,
        ],
        note: None,
    }
}
// ANCHOR_END: row

/// Row 8: a slow disk (`--fs-delay-ms`) holds up only the request that reads the file.
pub fn slow_disk(target: &Target) -> Probed {
    needs_own_server(target)?;
    let site = make_site(0)?;
    with_longer_holds(|hold| {
        // The delay is paid twice: once to open the file, once to read it.
        let delay_ms = hold / 2;
        let server = target.start(Options {
            root: Some(site.root.clone()),
            fs_delay_ms: Some(delay_ms),
            ..Options::default()
        })?;
        let what = format!("another client's GET /files/hello.txt (--fs-delay-ms {delay_ms})");
        let mut client = connect(&server)?;
        sending(&mut client, &get("/files/hello.txt"), &what)?;
        until_read(&client, &what)?;
        served_while_busy(&server, client, &what, Duration::from_millis(hold), |response| {
            expect_status(response, &[200], &what)?;
            check!(
                response.body == site::HELLO_TXT.as_bytes(),
                "{what}: body {:?}",
                response.text()
            );
            Ok(())
        })
    })
}

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("slow_disk", WAITING, format!(
            "Started with `--fs-delay-ms N`, which makes every file open and every file read \
             take N ms longer: while one client's `GET /files/hello.txt` waits on the disk ({} \
             ms in all), another's `GET /hello` is answered at least a third of that before it.",
            HOLDS_MS[0])),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![HOLDS_MS[0].to_string()]
}
