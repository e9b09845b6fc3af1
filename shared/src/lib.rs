//! The part of the workbook that never changes from chapter to chapter.
//!
//! Every chapter is one HTTP server. What differs between them is only *how they wait*:
//! blocking calls, `poll(2)`, an event loop, timers, promises, a thread pool. Everything
//! else lives here, once, so that `diff -ru` between two chapters shows the lesson and
//! nothing else:
//!
//! - [`args`]: the command line every chapter accepts (`--port`, `--root`, `--trace`, ...).
//! - [`listener`]: the listening socket, with the options real servers set.
//! - [`buffer`]: a connection's buffer, consumed by an offset, and empty when idle.
//! - [`http`]: an incremental HTTP/1.1 request parser and the response writer.
//! - [`app`]: the demo application, a pure function from a request to what to do next.
//! - [`blocking`]: doing what the application asks with calls that wait (chapters 1-3).
//! - [`files`]: serving files from `--root` without ever leaving it.
//! - [`upstream`]: the bits of an HTTP client that `/upstream/` needs.
//! - [`memory`]: what a burst of big requests took, given back once the server is idle.
//! - [`trace`]: `log!` and the `--trace` switch: lines on stderr that never fail or wait.
//! - [`self_pipe`] and [`signals`]: how a thread or a signal (SIGTERM) wakes an event loop.
//! - [`system`]: the system's name, and the line chapters 10-11 refuse to start with off
//!   Linux; [`linux`]: the Linux numbers those chapters use, so that they build everywhere.

pub mod app;
pub mod args;
pub mod blocking;
pub mod buffer;
pub mod files;
pub mod http;
pub mod linux;
pub mod listener;
pub mod memory;
pub mod self_pipe;
pub mod signals;
pub mod system;
pub mod trace;
pub mod upstream;
