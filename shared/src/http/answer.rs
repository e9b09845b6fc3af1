//! Taking the next request a connection has received, and answering it: the parser, the
//! application and the response writer in one step, the same in every chapter's sketch (the
//! chapters write it out in their `connection.rs`, with what each of them needs around it).

use std::io::Write;

use super::response::{write_response, Framing};
use super::{date, parse, Parse, Request, Response};
use crate::buffer::Buffer;

/// The next whole request in `received`, handed to `app`, and then forgotten: what `app`
/// made of it, with how to frame its answer. `Err`: the parser rejected the bytes, and this
/// is the answer (send it, then close). `None` while no whole request has come.
pub fn take_request<T>(
    received: &mut Buffer, app: impl FnOnce(&Request) -> T,
) -> Option<Result<(T, Framing), Response>> {
    match parse(received) {
        Parse::Complete { request, consumed } => {
            let taken = (app(&request), Framing::for_request(&request));
            received.consume(consumed);
            Some(Ok(taken))
        }
        Parse::Invalid(error) => Some(Err(Response::from_parse_error(error))),
        Parse::Incomplete => None,
    }
}

/// Answers the next whole request in `received` with what `app` returns, written to `out`.
/// `None` while no whole request has come; else whether the connection stays open after
/// this answer: if the client asked, the answer allows it, and so does `stay_open`.
pub fn answer(
    received: &mut Buffer, out: &mut impl Write, server: &str, stay_open: bool,
    app: impl FnOnce(&Request) -> Response,
) -> Option<bool> {
    let (response, mut framing) =
        take_request(received, app)?.unwrap_or_else(|rejected| (rejected, Framing::CLOSE));
    framing.keep_alive &= !response.close && stay_open;
    write_response(out, &response, &framing, server, &date::now());
    Some(framing.keep_alive)
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
