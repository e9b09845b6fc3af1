//! HTTP/1.1, the small part of it a server needs.
//!
//! - [`request`]: an *incremental* parser. Call [`parse`] on everything received so far;
//!   it answers "complete, and this many bytes were the request", "need more", or "invalid,
//!   answer with this status". Chapter 1 calls it after each blocking `read`, chapter 2
//!   after each non-blocking one: the same code for both, so the parser is never the
//!   difference between two chapters.
//! - [`response`]: a [`Response`] and the code that writes it as bytes.
//! - [`date`]: the `Date` header's format (RFC 9110's IMF-fixdate).

pub mod date;
pub mod request;
pub mod response;

pub use request::{parse, Parse, ParseError, Request, Version};
pub use response::{Body, Response};

/// How much capacity a connection's buffer keeps between requests: enough for the head of
/// a usual request or the whole of a small answer, so keep-alive traffic of small requests
/// reuses one allocation.
pub const KEPT_CAPACITY: usize = 4 * 1024;

/// Gives back what `buffer` holds beyond its contents and [`KEPT_CAPACITY`]. Call it once a
/// request is consumed or an answer sent. Why: a `Vec` that is drained or cleared keeps its
/// capacity, so a client that once sent (or was sent) a megabyte would otherwise keep that
/// megabyte for as long as it stays connected, idle or not.
pub fn trim_buffer(buffer: &mut Vec<u8>) {
    buffer.shrink_to(KEPT_CAPACITY);
}
