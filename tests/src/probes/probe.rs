//! What a probe is, what it says, and where it gets its servers: [`Probe`], [`Outcome`],
//! [`Stop`], and the [`Target`] it runs against (a chapter's program the suite starts, a
//! reader's, or a server someone else started).

use std::net::SocketAddr;

use crate::chapters::Chapter;
use crate::manifest::Capability;
use crate::probes::broken;
use crate::server::{Options, Program, Server};
use crate::site::Site;
use crate::upstream::Upstream;

/// What a probe saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Works,
    /// The capability is missing, in the expected way; what was seen.
    Lacks(String),
}

/// Why a probe stopped before it could say [`Outcome`].
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// Something is wrong that no chapter may get wrong.
    Broken(String),
    /// The probe cannot run against this target.
    Skipped(&'static str),
}

pub type Probed = Result<Outcome, Stop>;

/// One check, run against every chapter.
#[derive(Clone, Copy)]
pub struct Probe {
    /// The test's name: `cargo test -p suite hello` runs this probe on every chapter.
    pub name: &'static str,
    /// The manifest row this probe checks.
    pub capability: Capability,
    pub run: fn(&Target) -> Probed,
}

pub(crate) const fn probe(
    name: &'static str, capability: Capability, run: fn(&Target) -> Probed,
) -> Probe {
    Probe { name, capability, run }
}

/// Where a probe gets its servers from.
pub enum Launch {
    /// Start the chapter's program (or a reader's, the runner's `--command`), a fresh
    /// process for each server the probe asks for.
    Start { program: Program },
    /// A server someone else started; probes that need their own skip.
    External { address: SocketAddr },
}

/// What a probe runs against: a chapter, and how to get a server of it.
pub struct Target {
    pub chapter: &'static Chapter,
    pub launch: Launch,
}

impl Target {
    /// A server with the default command line: a fresh one of our own, or the external
    /// server.
    pub fn server(&self) -> Result<Server, Stop> {
        self.start(Options::default())
    }

    /// A fresh server started with `options`. Skips for an external server, which was
    /// started with whatever its owner chose.
    pub fn start(&self, options: Options) -> Result<Server, Stop> {
        match &self.launch {
            Launch::Start { program } => {
                Server::start(self.chapter, program, &options).map_err(|error| {
                    // A server that needs what this machine lacks (chapter 10: io_uring,
                    // which some kernels and containers turn off, and only Linux has)
                    // cannot be checked here. That is no failure of the server: every
                    // check says so, and why.
                    let refused = ["io_uring is not available", "needs Linux's io_uring"];
                    if refused.iter().any(|refusal| error.contains(refusal)) {
                        Stop::Skipped(NO_IO_URING)
                    } else {
                        Stop::Broken(error)
                    }
                })
            }
            Launch::External { address } if options.is_default() => {
                Ok(Server::external(self.chapter, *address))
            }
            Launch::External { .. } => Err(Stop::Skipped(NEEDS_OWN_SERVER)),
        }
    }
}

/// Why every check of a chapter that needs io_uring skips on a machine without it.
pub const NO_IO_URING: &str = "the server says io_uring is not available on this machine \
    (turned off, forbidden, too old a kernel, or not Linux): the suite cannot check it here";

/// The runner's note for a probe that cannot use someone else's server.
pub const NEEDS_OWN_SERVER: &str = "needs to start the server";

/// Skips a probe that must start its servers itself (with a `--root` of its own, say,
/// or to signal them) when it is pointed at someone else's.
pub fn needs_own_server(target: &Target) -> Result<(), Stop> {
    match target.launch {
        Launch::Start { .. } => Ok(()),
        Launch::External { .. } => Err(Stop::Skipped(NEEDS_OWN_SERVER)),
    }
}

/// A fresh site for `--root` (see [`Site`]), with a `big.bin` of `big` bytes if not 0.
pub fn make_site(big: usize) -> Result<Site, Stop> {
    Site::create(big).map_err(|error| broken(format!("cannot make a site: {error}")))
}

/// Starts a server on a fresh site (`big` as for [`make_site`]), or skips for an
/// external server.
pub fn with_site(target: &Target, big: usize) -> Result<(Server, Site), Stop> {
    needs_own_server(target)?;
    let site = make_site(big)?;
    let server = target.start(Options { root: Some(site.root.clone()), ..Options::default() })?;
    Ok((server, site))
}

/// Starts a server with `--upstream` pointing at a fresh [`Upstream`], or skips for an
/// external server.
pub fn with_upstream(target: &Target) -> Result<(Server, Upstream), Stop> {
    needs_own_server(target)?;
    let upstream =
        Upstream::start().map_err(|error| broken(format!("cannot start the upstream: {error}")))?;
    let server =
        target.start(Options { upstream: Some(upstream.address), ..Options::default() })?;
    Ok((server, upstream))
}

/// " (it has no --header-timeout flag)" when the chapter rejected the flags we tried.
pub fn dropped_note(server: &Server) -> String {
    if server.dropped_flags.is_empty() {
        String::new()
    } else {
        format!(" (it has no {} flag)", server.dropped_flags.join(" or "))
    }
}

#[cfg(test)]
mod tests {
    use crate::chapters;
    use crate::harness::{self, Verdict, Whose};
    use crate::probes::*;
    use crate::resources;

    /// What the suite says of a check whose measurement this system lacks. Simulated here
    /// (Linux lacks none) by a measurement that comes back with nothing, as `lsof` and
    /// `procstat` both missing would on a BSD: a skip, in one line that names it.
    #[test]
    fn a_measurement_that_returns_nothing_is_a_skip_said_in_one_line() {
        let descriptors: Option<usize> = None;
        let probed = measured(descriptors, resources::NO_DESCRIPTORS).map(|_| Outcome::Works);
        assert_eq!(probed, Err(Stop::Skipped(resources::NO_DESCRIPTORS)));
        let chapter = chapters::chapter(2).expect("chapter 2");
        let probe = find("descriptor_exhaustion").expect("the probe");
        let verdict = harness::judge(chapter, probe, probed, Whose::Ours);
        assert_eq!(verdict, Verdict::Skipped(resources::NO_DESCRIPTORS.to_string()));
        let runner = harness::describe(chapter, probe, &verdict);
        let cargo_test = harness::skipped_line(chapter, probe, resources::NO_DESCRIPTORS);
        for line in [&runner, &cargo_test] {
            assert!(!line.contains('\n'), "one line: {line}");
            assert!(line.contains("missing measurement") && line.contains("open descriptors"));
        }
        println!("(simulated) {cargo_test}"); // seen with --nocapture
    }
}
