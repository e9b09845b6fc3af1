//! `first_piece`: what chapter 6's sketch runs on a worker for the first piece of an answer.

use std::path::PathBuf;

use super::*;
use crate::args::default_root;

fn config() -> Config {
    Config::parse("ch00-test", &[], &[]).expect("the defaults parse").expect("not --help")
}

/// How a `GET` (or, with `head_only`, a `HEAD`) is framed.
fn framing(head_only: bool) -> Framing {
    Framing { head_only, ..Framing::CLOSE }
}

#[test]
fn a_file_comes_back_open_after_its_head_alone() {
    let path = PathBuf::from("notes.txt");
    let length = std::fs::metadata(default_root().join(&path)).expect("the sample file").len();
    let taken = Ok((Action::ReadFile { path }, framing(false)));
    let (piece, file) = first_piece(taken, &config());
    let head = String::from_utf8(piece).expect("a head is text");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains(&format!("Content-Length: {length}\r\n")), "{head}");
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert!(head.ends_with("\r\n\r\n"), "the head alone, no body: {head}");
    assert!(file.is_some(), "the body is the caller's to send");
}

#[test]
fn a_head_request_or_a_missing_file_leaves_nothing_to_send() {
    let head_only = Ok((Action::ReadFile { path: "notes.txt".into() }, framing(true)));
    assert!(first_piece(head_only, &config()).1.is_none());
    let missing = Ok((Action::ReadFile { path: "missing.txt".into() }, framing(false)));
    let (piece, file) = first_piece(missing, &config());
    assert!(piece.starts_with(b"HTTP/1.1 404 "), "{}", String::from_utf8_lossy(&piece));
    assert!(file.is_none());
}

#[test]
fn refused_bytes_are_answered_whole_and_closed() {
    let (piece, file) = first_piece(Err(Response::error(400, "bad request")), &config());
    let answer = String::from_utf8(piece).expect("text");
    assert!(answer.starts_with("HTTP/1.1 400 ") && answer.contains("Connection: close"));
    assert!(file.is_none());
}
