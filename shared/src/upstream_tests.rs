use std::time::{Duration, Instant};

use super::*;

/// What the reader makes of `answer` pushed in pieces (cut at these offsets), then end
/// of file if it still wants more. Stops at the first `Done` or `Garbage`, as a chapter
/// does.
fn read_in_pieces(answer: &[u8], cuts: &[usize]) -> UpstreamParse {
    let mut reader = ResponseReader::new();
    let mut start = 0;
    for &end in cuts.iter().chain([&answer.len()]) {
        // An empty push means end of file; a read never returns an empty piece otherwise.
        if end == start {
            continue;
        }
        match reader.push(&answer[start..end]) {
            UpstreamParse::NeedMore => start = end,
            finished => return finished,
        }
    }
    reader.push(&[])
}

fn read_whole(answer: &[u8]) -> UpstreamParse {
    read_in_pieces(answer, &[])
}

fn done(outcome: UpstreamParse) -> Response {
    match outcome {
        UpstreamParse::Done(response) => response,
        other => panic!("expected a whole answer, got {other:?}"),
    }
}

/// What a 204 or 304 from a careless upstream looks like: a length and a body it must not
/// have, and that body shaped like a whole second answer.
const SMUGGLED: &str = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

fn bodyless_with_body(status_line: &str) -> Vec<u8> {
    format!("{status_line}\r\nContent-Length: {}\r\n\r\n{SMUGGLED}", SMUGGLED.len()).into_bytes()
}

/// Every kind of answer the tests below care about, good and bad.
fn samples() -> Vec<Vec<u8>> {
    let mut samples: Vec<Vec<u8>> = [
        &b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Type: text/x\r\n\r\nhi"[..],
        b"HTTP/1.0 200 OK\r\n\r\nuntil eof",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes",
        b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello",
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"SSH-2.0-OpenSSH\r\n",
        b"\r\n\r\n",
    ]
    .iter()
    .map(|answer| answer.to_vec())
    .collect();
    samples.push(bodyless_with_body("HTTP/1.1 204 No Content"));
    samples.push(bodyless_with_body("HTTP/1.1 304 Not Modified"));
    samples
}

#[test]
fn parses_answers() {
    let response = done(read_whole(
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Type: text/x\r\n\r\nhi",
    ));
    assert_eq!((response.status, response.body.as_bytes()), (201, &b"hi"[..]));
    assert_eq!(response.content_type, "text/x");
    let response = done(read_whole(b"HTTP/1.0 200 OK\r\n\r\nuntil eof"));
    assert_eq!(response.body.as_bytes(), b"until eof");

    let mut reader = ResponseReader::new();
    assert_eq!(reader.push(b"HTTP/1.0 200 OK\r\n\r\nuntil"), UpstreamParse::NeedMore);
    for garbage in [
        &b"SSH-2.0-OpenSSH\r\n"[..],
        b"HTTP/1.1 abc\r\n\r\n",
        b"HTTP/1.1 +20 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
    ] {
        assert!(
            matches!(read_whole(garbage), UpstreamParse::Garbage(_)),
            "{}",
            garbage.escape_ascii()
        );
    }
    // The same Content-Length twice is one length.
    let twice = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi";
    assert_eq!(done(read_whole(twice)).body.as_bytes(), b"hi");
}

/// However the answer is cut into reads, the reader comes to the same conclusion; and
/// `parse_response`, given it all at once, agrees.
#[test]
fn every_split_gives_the_same_answer() {
    for answer in samples() {
        let whole = read_whole(&answer);
        let shown = answer.escape_ascii().to_string();
        let at_once = match parse_response(&answer, false) {
            UpstreamParse::NeedMore => parse_response(&answer, true),
            finished => finished,
        };
        assert_eq!(at_once, whole, "parse_response on {shown}");
        for first in 0..=answer.len() {
            for second in first..=answer.len() {
                assert_eq!(
                    read_in_pieces(&answer, &[first, second]),
                    whole,
                    "{shown} cut at {first} and {second}"
                );
            }
        }
        let every_byte: Vec<usize> = (1..answer.len()).collect();
        assert_eq!(read_in_pieces(&answer, &every_byte), whole, "{shown} one byte at a time");
    }
}

#[test]
fn interim_answers_are_skipped() {
    let answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes";
    let response = done(read_whole(answer));
    assert_eq!((response.status, response.body.as_bytes()), (200, &b"yes"[..]));

    // An interim answer's Content-Length is no body of its own.
    let answer = b"HTTP/1.1 103 Early Hints\r\nContent-Length: 4\r\n\r\n\
                   HTTP/1.1 204 No Content\r\n\r\n";
    let response = done(read_whole(answer));
    assert_eq!((response.status, response.body.as_bytes()), (204, &b""[..]));

    // Interim answers alone are not an answer.
    let mut reader = ResponseReader::new();
    assert_eq!(reader.push(b"HTTP/1.1 100 Continue\r\n\r\n"), UpstreamParse::NeedMore);
    assert!(matches!(reader.push(&[]), UpstreamParse::Garbage(_)));
}

#[test]
fn switching_protocols_is_garbage_at_once() {
    let mut reader = ResponseReader::new();
    assert_eq!(
        reader.push(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
        UpstreamParse::Garbage("the upstream switched protocols")
    );
}

/// A 204 or 304 ends with its head: the bytes after it are not its body, and the reader
/// says so without waiting for them (or for end of file).
#[test]
fn no_content_and_not_modified_end_with_their_head() {
    for (status_line, status) in
        [("HTTP/1.1 204 No Content", 204), ("HTTP/1.1 304 Not Modified", 304)]
    {
        let answer = bodyless_with_body(status_line);
        let mut reader = ResponseReader::new();
        let response = done(reader.push(&answer));
        assert_eq!((response.status, response.body.as_bytes()), (status, &b""[..]));
        // And the reader is finished: the smuggled bytes are no second answer.
        assert!(matches!(reader.push(SMUGGLED.as_bytes()), UpstreamParse::Garbage(_)));
    }
    // Even a Content-Length that would be garbage elsewhere is ignored.
    let answer = b"HTTP/1.1 304 Not Modified\r\nContent-Length: lots\r\n\r\n";
    assert_eq!(done(read_whole(answer)).status, 304);
}

#[test]
fn a_head_over_8_kib_is_garbage_as_soon_as_the_8_kib_are_in() {
    let mut head = b"HTTP/1.1 200 OK\r\nX-Filler: ".to_vec();
    head.resize(MAX_HEAD - 1, b'a');
    let mut reader = ResponseReader::new();
    assert_eq!(reader.push(&head), UpstreamParse::NeedMore);
    assert_eq!(
        reader.push(b"a"),
        UpstreamParse::Garbage("the upstream's response head is over 8 KiB")
    );

    // Exactly 8 KiB, blank line included, is still a head.
    let mut head = b"HTTP/1.1 200 OK\r\nX-Filler: ".to_vec();
    head.resize(MAX_HEAD - 4, b'a');
    head.extend_from_slice(b"\r\n\r\n");
    let mut reader = ResponseReader::new();
    assert_eq!(reader.push(&head), UpstreamParse::NeedMore);
    assert_eq!(done(reader.push(&[])).status, 200);

    // The limit is per head: an interim answer does not use up the final one's 8 KiB.
    let mut answer = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
    answer.extend_from_slice(&head);
    assert_eq!(done(read_whole(&answer)).status, 200);
}

/// The case that was quadratic: 16 MiB without a blank line, read 16 KiB at a time. The
/// first read is already past the 8 KiB cap, so that is where it ends.
#[test]
fn an_endless_head_is_refused_in_linear_time() {
    let piece = [b'a'; 16 * 1024];
    let started = Instant::now();
    let mut reader = ResponseReader::new();
    assert_eq!(
        reader.push(&piece),
        UpstreamParse::Garbage("the upstream's response head is over 8 KiB")
    );
    for _ in 1..MAX_RESPONSE / piece.len() {
        assert!(matches!(reader.push(&piece), UpstreamParse::Garbage(_)));
    }
    // The old reader took seconds here; this one does next to nothing per read.
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());

    // `parse_response` too looks no further than 8 KiB, however much it is given.
    let everything = vec![b'a'; MAX_RESPONSE];
    let started = Instant::now();
    for _ in 0..1024 {
        assert!(matches!(parse_response(&everything, false), UpstreamParse::Garbage(_)));
    }
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

/// A big body read 16 KiB at a time: each read costs the same, however much came before.
#[test]
fn a_big_body_is_read_in_linear_time() {
    let head = "HTTP/1.1 200 OK\r\nContent-Length: 15000000\r\n\r\n";
    let mut answer = head.as_bytes().to_vec();
    answer.resize(head.len() + 15_000_000, b'b');
    let started = Instant::now();
    let mut reader = ResponseReader::new();
    let mut outcome = UpstreamParse::NeedMore;
    for piece in answer.chunks(16 * 1024) {
        assert_eq!(outcome, UpstreamParse::NeedMore);
        outcome = reader.push(piece);
    }
    let response = done(outcome);
    assert_eq!(response.body.as_bytes().len(), 15_000_000);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn too_large_is_garbage() {
    // A Content-Length over the limit is refused as soon as the head says it.
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {MAX_RESPONSE}\r\n\r\n");
    assert_eq!(
        ResponseReader::new().push(head.as_bytes()),
        UpstreamParse::Garbage("the upstream's answer is too large")
    );
    // Without one, when the bytes pass it.
    let mut reader = ResponseReader::new();
    assert_eq!(reader.push(b"HTTP/1.1 200 OK\r\n\r\n"), UpstreamParse::NeedMore);
    let piece = vec![b'b'; 1024 * 1024];
    for _ in 0..15 {
        assert_eq!(reader.push(&piece), UpstreamParse::NeedMore);
    }
    assert_eq!(reader.push(&piece), UpstreamParse::Garbage("the upstream's answer is too large"));
}

#[test]
fn start_connecting_returns_at_once() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stream = start_connecting(listener.local_addr().unwrap()).unwrap();
    // Non-blocking: a read with nothing to read says "would block", not waits.
    let mut byte = [0u8; 1];
    let error = (&stream).read(&mut byte).unwrap_err();
    assert!(
        matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::NotConnected),
        "{error}"
    );
}
