//! The row "a slow reader of a big response does not hold up others" (chapter 2 on).
//!
//! - [`slow_reader`]: a client asks for a file bigger than the socket buffers hold and
//!   stops reading. Chapter 1 writes with a blocking `write_all`, and waits with it.

use std::time::Instant;

use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{rule, secs, Rule, CONNECTIONS_TOPIC};
use crate::probes::{
    drain, finish_hello, hello_meanwhile, seconds, start_big_download, with_site, Meanwhile,
    Outcome, Probed, Target, PROMPTLY,
};
use crate::probes::{probe, Module, Probe};
use crate::site;

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("slow_reader", Capability::SlowReader, slow_reader),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::SlowReader,
        description: "a slow reader of a big response does not hold up others",
        chapters: [
            No("ch01 writes each response with a blocking write_all: a client that stops \
                reading stops the whole server."),
            Yes,
            Yes,
            Yes,
            Yes,
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

/// Row 3: a client that asks for a big file and stops reading must not keep others
/// waiting. The file is bigger than the kernel's socket buffers can hold, so the server
/// cannot simply hand the whole response to the kernel and move on.
pub fn slow_reader(target: &Target) -> Probed {
    let (server, site) = with_site(target, site::stuck_response_size())?;
    let (mut reader, already) = start_big_download(&server, &site)?;
    let what = "the big response left unread for a while";
    match hello_meanwhile(&server)? {
        Meanwhile::Answered => {
            drain(&mut reader, &site, already, what)?;
            Ok(Outcome::Works)
        }
        Meanwhile::Waiting { client, sent } => {
            let resumed = Instant::now();
            drain(&mut reader, &site, already, what)?;
            drop(reader);
            finish_hello(&server, client, sent)?;
            Ok(Outcome::Lacks(format!(
                "GET /hello got no answer within {} while another client left a {} MiB \
                 response unread; it was answered {} after that client read the rest",
                seconds(PROMPTLY),
                site.big.len() >> 20,
                seconds(resumed.elapsed())
            )))
        }
    }
}

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("slow_reader", CONNECTIONS_TOPIC, format!(
            "Nor does one that asked for a file bigger than the kernel's socket buffers hold and \
             stopped reading: `GET /hello` within {}. The file then arrives whole when it \
             reads on.",
            secs(PROMPTLY))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    Vec::new()
}
