//! HTTP/1.1, the small part of it a server needs.
//!
//! - [`request`]: an *incremental* parser. Call [`parse`] on everything received so far;
//!   it answers "complete, and this many bytes were the request", "need more", or "invalid,
//!   answer with this status". Chapter 1 calls it after each blocking `read`, chapter 2
//!   after each non-blocking one: the same code for both, so the parser is never the
//!   difference between two chapters.
//! - [`response`]: a [`Response`] and the code that writes it as bytes.
//! - [`date`]: the `Date` header's format (RFC 9110's IMF-fixdate).
//! - [`take_request`] and [`answer()`]: the three in one step, for the sketches.

mod answer;
pub mod date;
pub mod request;
pub mod response;

pub use answer::{answer, take_request};
pub use request::{parse, Parse, ParseError, Request, Version};
pub use response::{Body, Response};
