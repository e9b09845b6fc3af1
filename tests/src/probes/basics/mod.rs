//! The first row of the capability table, "routes, HEAD, errors, bad input, big files
//! intact": what every chapter must do, from chapter 1 on. It holds more checks than all
//! the other rows together, so it is split by what they check:
//!
//! - [`command_line`]: the flags, `--help`, a bad flag, a port in use, an IPv6 host;
//! - [`routes`]: every route of the demo application, `HEAD`, 404, 405 and 501;
//! - [`files`]: `/files/`, typed, whole, and never outside the root;
//! - [`upstream`]: `/upstream/`, relayed, refused, timed out;
//! - [`corpus`]: the conformance corpus, requests that break or stretch RFC 9112;
//! - [`bad_input`]: requests sent oddly (a byte at a time, split), clients that vanish;
//! - [`faults`]: half-closes, urgent bytes, stray signals, a closed or full standard error;
//! - [`exhaustion`]: more clients than descriptors, a pipeline never read;
//! - [`memory`]: what idle clients and bursts of them cost, and what comes back.

pub(crate) mod bad_input;
pub(crate) mod command_line;
pub(crate) mod corpus;
pub(crate) mod exhaustion;
pub(crate) mod faults;
pub(crate) mod files;
pub(crate) mod memory;
pub(crate) mod routes;
pub(crate) mod upstream;

use crate::manifest::Expect::Yes;
use crate::manifest::{Capability, Row};
use crate::probes::checklist::{count, leak, size};
use crate::probes::Module;
use memory::{BURST_BODY, BURST_CLIENTS, BURST_GROWTH_BOUND, BURST_OF, BURST_TURNS_BOUND};

/// The row, then its parts, in the order the runner reports their checks.
pub(super) const MODULES: [Module; 10] = [
    Module { probes: &[], on_one_loop: &[], row: Some(row), rules: Vec::new, quoted },
    command_line::MODULE,
    routes::MODULE,
    files::MODULE,
    upstream::MODULE,
    corpus::MODULE,
    bad_input::MODULE,
    faults::MODULE,
    exhaustion::MODULE,
    memory::MODULE,
];

// ANCHOR: row
/// The row of the capability table; its note tells what two of [`memory`]'s probes do.
fn row() -> Row {
    Row {
        capability: Capability::Basics,
        description: "routes, HEAD, errors, bad input, big files intact",
        chapters: [Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes, Yes],
        note: Some(leak(format!(
            "A callback that panics (chapter 3 on) cannot be provoked from outside, since no \
            route panics. The event loop catches the panic and closes only that callback's \
            connection; each chapter's own unit test \
            `a_panicking_callback_costs_only_its_own_registration` (in `event_loop.rs`) \
            checks it. Two probes stop the server (SIGSTOP) while clients send, so that it \
            finds them all at once when it goes on (SIGCONT): in `idle_after_a_burst`, {} \
            idle kept-alive clients each send a {} `POST /echo`, and once they are idle \
            again the server's resident memory must be within {} of what it was before; \
            in `burst_of_clients`, {} new clients each send `GET /hello`, and `/stats` must \
            count at most {} turns of the loop until all are answered (one client let in a \
            turn is {}).",
            count(BURST_CLIENTS),
            size(BURST_BODY as u64),
            size(BURST_GROWTH_BOUND),
            BURST_OF,
            BURST_TURNS_BOUND,
            BURST_OF,
        ))),
    }
}
// ANCHOR_END: row

/// The constants the row's note quotes (see `Module::quoted`).
fn quoted() -> Vec<String> {
    vec![
        count(BURST_CLIENTS),
        size(BURST_BODY as u64),
        size(BURST_GROWTH_BOUND),
        BURST_OF.to_string(),
        BURST_TURNS_BOUND.to_string(),
    ]
}
