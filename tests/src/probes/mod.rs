//! The probes: one function per thing the suite checks, shared by `cargo test` and the
//! runner, in one module per row of the capability table.
//!
//! A probe only *observes*. It starts a server (or is given one), pokes it, and reports:
//!
//! - `Ok(Outcome::Works)`: the chapter has the capability;
//! - `Ok(Outcome::Lacks(seen))`: it lacks it, *in the way a chapter without it must*:
//!   the `/hello` waited behind the idle client, and was answered the moment that client
//!   left; SIGTERM killed the process instead of letting it exit 0. `seen` says what
//!   happened;
//! - `Err(Stop::Broken(what))`: anything else: a wrong status, a missing header, a crash,
//!   a server that stopped answering. Always a failure, whatever the manifest says;
//! - `Err(Stop::Skipped(why))`: the probe cannot run here (it needs to start the server
//!   itself, and was pointed at someone else's).
//!
//! Whether the outcome is *good* is not the probe's business: the [`harness`]
//! compares it with the manifest.
//!
//! Each module below owns one row of the table: its probes, the row's words (the "no"
//! sentences, the note) and its rules on the checklist, all quoting its own constants
//! (`basics/` holds the first row, split by what it checks). Adding a probe is a change
//! to one module; this file only gathers them, and `probe.rs` and `common.rs` hold what
//! every module uses.
//!
//! [`harness`]: crate::harness

mod basics;
pub mod checklist;
mod common;
mod probe;

mod bounded_download;
mod departure;
mod flood;
mod graceful_shutdown;
mod idle_client;
mod keep_alive;
mod more_than_one_core;
mod sleep_and_upstream;
mod slow_disk;
mod slow_reader;
mod slowloris;
mod ten_thousand_idle;
mod timeouts;

#[cfg(test)]
#[path = "numbers_tests.rs"]
mod numbers_tests;

use std::ops::Deref;
use std::sync::OnceLock;

pub use common::*;
pub use probe::*;

use crate::manifest::Row;
use checklist::Rule;

/// What one module of probes brings the suite.
pub(crate) struct Module {
    /// Its checks, in the order the runner reports them.
    pub probes: &'static [Probe],
    /// Those of its checks that start a server with more than one loop as one loop (see
    /// [`ON_ONE_LOOP`]).
    pub on_one_loop: &'static [&'static str],
    /// Its row of the capability table (`None` for the parts of `basics/` but one).
    pub row: Option<fn() -> Row>,
    /// What its checks hold a server to, for the checklist.
    pub rules: fn() -> Vec<Rule>,
    /// Its constants as its texts (the row's, the rules') quote them: a test holds every
    /// number in those texts to this list (`numbers_tests.rs`, the only reader).
    #[cfg_attr(not(test), allow(dead_code))]
    pub quoted: fn() -> Vec<String>,
}

// ANCHOR: modules
/// Every module, in the order of the capability table's rows.
const MODULES: [&[Module]; 14] = [
    &basics::MODULES,
    &[idle_client::MODULE],
    &[slow_reader::MODULE],
    &[keep_alive::MODULE],
    &[flood::MODULE],
    &[graceful_shutdown::MODULE],
    &[sleep_and_upstream::MODULE],
    &[departure::MODULE],
    &[timeouts::MODULE],
    &[slowloris::MODULE],
    &[slow_disk::MODULE],
    &[bounded_download::MODULE],
    &[ten_thousand_idle::MODULE],
    &[more_than_one_core::MODULE],
];
// ANCHOR_END: modules

fn modules() -> impl Iterator<Item = &'static Module> {
    MODULES.iter().flat_map(|modules| modules.iter())
}

/// A list gathered from the modules the first time it is read, that reads like the
/// `&'static [T]` it replaced: `for probe in PROBES`, `PROBES.iter()`, `PROBES.len()`.
/// (The modules' texts are built with `format!`, which a `const` cannot call.)
pub struct Gathered<T: 'static>(pub(crate) fn() -> &'static [T]);

impl<T> Deref for Gathered<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        (self.0)()
    }
}

impl<T> IntoIterator for &Gathered<T> {
    type Item = &'static T;
    type IntoIter = std::slice::Iter<'static, T>;
    fn into_iter(self) -> Self::IntoIter {
        (self.0)().iter()
    }
}

// ANCHOR: probes
/// Every probe, in the order the runner reports them: by row of the capability table,
/// then as each module lists them. (`ten_thousand_idle.rs` holds `ten_thousand_idle`, a
/// check of the idle-client row, beside the row's own check: both open 10,000
/// connections.) tests/suite.rs has one test per entry (and a test that checks the two
/// lists agree).
pub const PROBES: &Gathered<Probe> = &Gathered(|| {
    static ALL: OnceLock<Vec<Probe>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<Probe> = modules().flat_map(|module| module.probes.to_vec()).collect();
        // A stable sort: `Capability` is declared in the table's order.
        all.sort_by_key(|probe| probe.capability);
        all
    })
});
// ANCHOR_END: probes

/// Every row of the capability table, from its module.
pub(crate) fn rows() -> Vec<Row> {
    modules().filter_map(|module| module.row).map(|row| row()).collect()
}

/// Every rule of the checklist: those of every check, then each module's.
pub(crate) fn rules() -> Vec<Rule> {
    let mut rules = checklist::every_check();
    rules.extend(modules().flat_map(|module| (module.rules)()));
    rules
}

/// The probes that start a server with more than one loop (chapter 9 on) as one loop,
/// `--threads 1`: what they check is how one loop shares its turns, and with two loops a
/// client that lands on the loop the others leave alone is served by luck. Each module
/// names its own; the book lists them from here (`facts.rs`), and a test checks the list
/// against the probes' code.
pub const ON_ONE_LOOP: &Gathered<&str> = &Gathered(|| {
    static ALL: OnceLock<Vec<&str>> = OnceLock::new();
    ALL.get_or_init(|| modules().flat_map(|module| module.on_one_loop.iter().copied()).collect())
});

/// The probe called `name`.
pub fn find(name: &str) -> Option<&'static Probe> {
    PROBES.iter().find(|probe| probe.name == name)
}
