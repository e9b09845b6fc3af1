//! The one HTTP suite every chapter of the Event Loop Workbook is held to.
//!
//! The workbook builds one server again and again, once per chapter. This crate checks
//! every chapter from the outside, over real TCP connections, with the same probes, and
//! holds each to what the contract says it can and cannot do:
//!
//! - [`chapters`]: which chapters exist, and how their programs are built for the tests.
//! - [`manifest`]: the capability table. For every capability and chapter: yes, or no
//!   and one sentence of why. It is the single source of the book's appendix table.
//! - [`probes`]: one function per thing we check. A probe starts (or is given) a server,
//!   pokes it, and reports an [`Outcome`](probes::Outcome): it *works*, it *lacks* the
//!   capability in the way we expect a chapter without it to (the idle client held
//!   everyone up), or it is *broken* in some other way (a wrong status, a crash).
//! - [`harness`]: compares a probe's outcome with the manifest. A chapter that lacks a
//!   capability the manifest says it lacks passes, and the suite prints why: that
//!   failing-as-expected result is the lesson. Working where the manifest says "no" is
//!   an error too, so the table can never drift from the truth.
//! - [`server`], [`client`], [`upstream`], [`kernel`], [`resources`]: the tools the probes
//!   use: a guard around a server process, a deliberately low-level HTTP client (which
//!   reads what [`response`] says a response is, as the book's load generator does), a tiny
//!   upstream server for `/upstream/`, a look at the kernel's socket queues, and at what a
//!   server process uses (CPU time, memory, descriptors).
//!
//! - [`flags`]: every flag the suite passes a server, and from which chapter on it must
//!   be accepted (the book's page on a reader's own server lists them).
//! - [`facts`]: the counts and lists the book's prose states about the suite and the
//!   chapters (how many checks, which run one loop, which chapters add no row, the extra
//!   flags each chapter has), generated for the pages to include.
//! - [`report`]: the runner's report: a cause shared by many checks said once, at the
//!   top; one line per check and per row of the capability table; the summary last.
//! - [`gradebook`]: the same verdicts for a program to read: JSON, and JUnit XML for
//!   GitHub Actions and Classroom; [`selection`]: which checks a run makes (`--only`,
//!   `--row`, and a row's short name); [`progress`]: the runner's progress line.
//!
//! The book's tools (the benchmark, the load generator, the timelines, the sessions, the
//! lab maker) and the book's checks use this crate as a library: they are the package
//! `book-tools`, in `book/tools/`.
//!
//! Two front ends share all of this: `cargo test` (tests/suite.rs: one test per probe
//! and chapter) and the runner in `src/main.rs`, which can also check a server the suite
//! did not start (`cargo run -p suite -- --addr 127.0.0.1:8080 --chapter 2`), or start a
//! reader's own, in any language, for every probe as it starts ours
//! (`cargo run -p suite -- --command 'python3 my_server.py' --chapter 3`).

pub mod chapters;
pub mod client;
pub mod facts;
pub mod flags;
pub mod gradebook;
pub mod harness;
pub mod kernel;
pub mod manifest;
pub mod probes;
pub mod progress;
pub mod report;
pub mod resources;
pub mod response;
pub mod selection;
pub mod server;
pub mod site;
#[cfg(target_os = "linux")]
pub mod sock_diag;
pub mod upstream;
