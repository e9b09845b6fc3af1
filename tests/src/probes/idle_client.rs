//! The row "an idle or slow client does not hold up others" (chapter 2 on).
//!
//! - [`idle_client`]: a client that connects and says nothing.
//! - [`half_sent_request`]: one that sends half a request head and stalls.
//!
//! Chapter 1 serves one client at a time: the `/hello` waits exactly as long as the other
//! client holds it, and is answered as soon as it lets go. The row's third check,
//! `ten_thousand_idle`, is in `ten_thousand_idle.rs`, beside the other probe that opens
//! 10,000 connections.

use std::time::Instant;

use crate::manifest::Capability;
use crate::manifest::Expect::{No, Yes};
use crate::manifest::Row;
use crate::probes::checklist::{rule, secs, Rule, CONNECTIONS_TOPIC};
use crate::probes::{
    connect, finish_hello, hello_meanwhile, seconds, sending, until_accepted, until_read,
    Meanwhile, Outcome, Probed, Target, PROMPTLY,
};
use crate::probes::{probe, Module, Probe};

/// What this module brings the suite: its checks, its row of the capability table and
/// its rules on the checklist.
pub(super) const MODULE: Module =
    Module { probes: PROBES, on_one_loop: &[], row: Some(row), rules, quoted };

/// The checks, in the order the runner reports them.
#[rustfmt::skip] // a table: one probe per line
const PROBES: &[Probe] = &[
    probe("idle_client", Capability::IdleClient, idle_client),
    probe("half_sent_request", Capability::IdleClient, half_sent_request),
];

// ANCHOR: row
/// The row of the capability table this module checks.
fn row() -> Row {
    Row {
        capability: Capability::IdleClient,
        description: "an idle or slow client does not hold up others",
        chapters: [
            No("ch01 serves one client at a time: an idle client holds the accept loop, and \
                everyone else waits in the kernel's backlog."),
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

// ANCHOR: idle_client
/// Row 2: a client that connects and says nothing must not keep others waiting.
pub fn idle_client(target: &Target) -> Probed {
    let server = target.server()?;
    let idle = connect(&server)?;
    // Make sure the server has taken the idle client in before anyone else arrives;
    // otherwise a one-at-a-time server could simply serve the next client first.
    until_accepted(&server, "an idle client's connection")?;
    match hello_meanwhile(&server)? {
        Meanwhile::Answered => Ok(Outcome::Works),
        Meanwhile::Waiting { client, sent } => {
            let left = Instant::now();
            drop(idle);
            finish_hello(&server, client, sent)?;
            Ok(Outcome::Lacks(format!(
                "GET /hello got no answer within {} while an idle client held a connection; \
                 it was answered {} after the idle client left",
                seconds(PROMPTLY),
                seconds(left.elapsed())
            )))
        }
    }
}
// ANCHOR_END: idle_client

/// Row 2: a client that sends half a request head and stalls (slowloris) must not keep
/// others waiting.
pub fn half_sent_request(target: &Target) -> Probed {
    let server = target.server()?;
    let mut slow = connect(&server)?;
    sending(&mut slow, b"GET /hello HTTP/1.1\r\nHost: su", "half a request head")?;
    until_read(&slow, "half a request head")?;
    match hello_meanwhile(&server)? {
        Meanwhile::Answered => Ok(Outcome::Works),
        Meanwhile::Waiting { client, sent } => {
            let left = Instant::now();
            drop(slow);
            finish_hello(&server, client, sent)?;
            Ok(Outcome::Lacks(format!(
                "GET /hello got no answer within {} while another client sat on half a \
                 request head; it was answered {} after that client left",
                seconds(PROMPTLY),
                seconds(left.elapsed())
            )))
        }
    }
}

// ANCHOR: rules
/// What this module's checks hold a server to, for the checklist.
#[rustfmt::skip] // a list: one rule after another, each as long as it needs
fn rules() -> Vec<Rule> {
    vec![
        rule("idle_client", CONNECTIONS_TOPIC, format!(
            "A client that connects and sends nothing, once accepted, holds up no one: \
             another client's `GET /hello` is answered within {}.",
            secs(PROMPTLY))),
        rule("half_sent_request", CONNECTIONS_TOPIC, format!(
            "Nor does one that sent half a request head and stopped: `GET /hello` within {}.",
            secs(PROMPTLY))),
    ]
}
// ANCHOR_END: rules

/// This module's constants as its texts quote them (see `Module::quoted`).
fn quoted() -> Vec<String> {
    Vec::new()
}
