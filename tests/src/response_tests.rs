use super::*;

#[test]
fn parses_a_head() {
    let response =
        parse_head(b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: close\r\n\r\n")
            .unwrap();
    assert_eq!(response.status, 404);
    assert_eq!(response.header("content-length"), Some("3"));
    assert!(response.says_close());
    assert!(parse_head(b"HTTP/1.1 20 OK\r\n\r\n").is_err());
    assert!(parse_head(b"SSH-2.0\r\n\r\n").is_err());
}

#[test]
fn a_head_says_where_its_body_ends() {
    let framing = |head: &[u8], to_head_request| RawHead::parse(head)?.framing(to_head_request);
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n", false),
        Ok(Framing::Length(14))
    );
    // HEAD, 1xx, 204 and 304 have no body, whatever their Content-Length says.
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n", true),
        Ok(Framing::Length(0))
    );
    assert_eq!(framing(b"HTTP/1.1 304 Not Modified\r\n\r\n", false), Ok(Framing::Length(0)));
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false),
        Ok(Framing::Chunked)
    );
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\n\r\n", false),
        Err("200 without Content-Length (the contract requires one)".to_string())
    );
    assert!(framing(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", false)
        .is_err());
    assert!(framing(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false).is_err());
    // A head the suite's client refuses, the splitter refuses too: one reader.
    assert!(RawHead::parse(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n").is_err());
}

#[test]
fn splits_pipelined_responses_across_reads() {
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nHello, world!\n";
    let stream: Vec<u8> = one.repeat(3);
    let mut splitter = Splitter::new();
    let mut seen = Vec::new();
    // Feed in awkward pieces, including one that splits "\r\n\r\n".
    for piece in stream.chunks(7) {
        splitter
            .feed(piece, |status, close| {
                seen.push((status, close));
                true
            })
            .expect("valid responses");
    }
    assert_eq!(seen, vec![(200, false); 3]);
    assert!(splitter.between_responses());
}

#[test]
fn stops_after_connection_close() {
    let bytes = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200";
    let mut splitter = Splitter::new();
    let mut seen = Vec::new();
    splitter
        .feed(bytes, |status, close| {
            seen.push((status, close));
            !close
        })
        .expect("valid response");
    assert_eq!(seen, vec![(200, true)]);
}

#[test]
fn heads_without_length_or_with_garbage_are_errors() {
    let mut splitter = Splitter::new();
    assert!(splitter.feed(b"HTTP/1.1 200 OK\r\n\r\n", |_, _| true).is_err());
    let mut splitter = Splitter::new();
    assert!(splitter.feed(b"SSH-2.0-OpenSSH\r\n\r\n", |_, _| true).is_err());
    let mut splitter = Splitter::new();
    assert!(splitter.feed(&vec![b'x'; MAX_HEAD + 1], |_, _| true).is_err());
}

#[test]
fn follows_chunked_bodies_across_reads() {
    let one = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                5\r\nhello\r\n10;x=y\r\n0123456789abcdef\r\n0\r\n\r\n";
    let stream: Vec<u8> = one.repeat(3);
    for size in [1, 2, 7, stream.len()] {
        let mut splitter = Splitter::new();
        let mut seen = 0;
        for piece in stream.chunks(size) {
            splitter
                .feed(piece, |_, _| {
                    seen += 1;
                    true
                })
                .expect("valid responses");
        }
        assert_eq!(seen, 3, "in pieces of {size}");
        assert!(splitter.between_responses(), "in pieces of {size}");
    }
}
