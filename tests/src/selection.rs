//! Which checks a run of the runner makes: `--only` (names) and `--row` (rows of the
//! capability table), for a course that grades one lesson at a time.
//!
//! ```text
//! --only keep_alive              the checks whose name contains keep_alive (and so
//!                                keep_alive_timeout too)
//! --only =keep_alive             the check called keep_alive, and no other
//! --only hello,=echo --only file several at once: a check that any of them names
//! --row keep-alive               the checks of the row "keep-alive and pipelining"
//! ```
//!
//! A row's short name is its `Capability` in kebab case ([`row_name`]): the one name for a
//! row in the runner's flags, its JSON and its JUnit XML.

use crate::manifest::{Capability, MANIFEST};
use crate::probes::Probe;

/// One name given to `--only`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `NAME`: a check whose name contains it.
    Contains(String),
    /// `=NAME`: the check with exactly this name.
    Exactly(String),
}

impl Pattern {
    pub fn matches(&self, probe: &Probe) -> bool {
        match self {
            Pattern::Contains(part) => probe.name.contains(part.as_str()),
            Pattern::Exactly(name) => probe.name == name,
        }
    }

    /// How the run says a pattern that chose nothing: `name contains "x"`, `name is "x"`.
    pub fn describe(&self) -> String {
        match self {
            Pattern::Contains(part) => format!("name contains {part:?}"),
            Pattern::Exactly(name) => format!("name is {name:?}"),
        }
    }
}

/// One value of `--only`: names separated by commas, each a [`Pattern`].
pub fn patterns(value: &str) -> Result<Vec<Pattern>, String> {
    value
        .split(',')
        .map(|name| match name.trim() {
            "" | "=" => Err(format!("--only {value:?} has an empty name")),
            name => Ok(match name.strip_prefix('=') {
                Some(exact) => Pattern::Exactly(exact.to_string()),
                None => Pattern::Contains(name.to_string()),
            }),
        })
        .collect()
}

/// A row's short name: its capability in kebab case, `KeepAlive` as `keep-alive`.
pub fn row_name(capability: Capability) -> String {
    let mut name = String::new();
    for c in format!("{capability:?}").chars() {
        if c.is_ascii_uppercase() && !name.is_empty() {
            name.push('-');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// The rows one value of `--row` names: short names separated by commas. A name is
/// compared without case, dashes or underscores, so `keep_alive` and `KeepAlive` (the
/// capability as the code spells it) find `keep-alive` too.
pub fn rows(value: &str) -> Result<Vec<Capability>, String> {
    let loose = |name: &str| name.to_lowercase().replace(['-', '_'], "");
    value
        .split(',')
        .map(|name| {
            MANIFEST
                .iter()
                .find(|row| loose(&row_name(row.capability)) == loose(name.trim()))
                .map(|row| row.capability)
                .ok_or_else(|| format!("no row {:?}; `--row list` lists them", name.trim()))
        })
        .collect()
}

/// What `--row list` prints: each row's short name, its words in the capability table,
/// and how many checks it has.
pub fn row_list(probes: &[Probe]) -> String {
    let width = MANIFEST.iter().map(|row| row_name(row.capability).len()).max().unwrap_or(0);
    let mut out = String::new();
    for row in MANIFEST {
        let checks = probes.iter().filter(|probe| probe.capability == row.capability).count();
        let checks = crate::report::plural(checks, "check");
        out.push_str(&format!(
            "{:<width$}  {} ({checks})\n",
            row_name(row.capability),
            row.description
        ));
    }
    out
}

/// The checks of `candidates` that `rows` (all, if none is given) and `only` (all, if
/// none) choose, in their order; or, if a pattern chose none of them, what it was (a
/// misspelt name would otherwise grade nothing, silently).
pub fn choose(
    candidates: &[&'static Probe], rows: &[Capability], only: &[Pattern],
) -> Result<Vec<&'static Probe>, String> {
    let in_rows: Vec<&'static Probe> = candidates
        .iter()
        .filter(|probe| rows.is_empty() || rows.contains(&probe.capability))
        .copied()
        .collect();
    if let Some(pattern) = only.iter().find(|p| !in_rows.iter().any(|probe| p.matches(probe))) {
        let chosen = !rows.is_empty() || candidates.len() < crate::probes::PROBES.len();
        let of = if chosen { " of those chosen" } else { "" };
        return Err(format!(
            "no check{of} whose {}; `cargo test -p suite -- --list` lists them",
            pattern.describe()
        ));
    }
    Ok(in_rows
        .into_iter()
        .filter(|probe| only.is_empty() || only.iter().any(|pattern| pattern.matches(probe)))
        .collect())
}

#[cfg(test)]
#[path = "selection_tests.rs"]
mod tests;
