//! The Event Loop Workbook's tools for its book and its courses.
//!
//! The HTTP suite (`tests/`, package `suite`) holds every chapter to the contract. This
//! package holds what the book and a course make with it, each a program of its own in
//! `src/bin/`:
//!
//! - `bench`: the benchmark behind the book's page on performance (`bench.md`, `bench.svg`);
//! - `load`: the workbook's own load generator, which `bench` falls back to without `wrk`;
//! - `timeline`: a chapter's loop drawn from a real run (`timeline-chNN.svg`);
//! - `sessions`: runs the book's sessions (`book/sessions/*.sh`) and writes what they print;
//! - `lab`: makes a chapter into a lab for a student to write.
//!
//! They use the suite as a library (its chapters, capability table, client and server
//! handling), so there is one copy of each. The library here holds only [`lock`], the
//! freshness lock the generators write and the book's check (`tests/book.rs`,
//! `tests/prose/`) reads. The other checks of the book live in `tests/` too: the pages'
//! includes, diffs and links (`book.rs`), their prose against the code (`prose/`), and the
//! chapters' imports (`imports.rs`).

pub mod lock;
