use super::*;

fn received(bytes: &[u8]) -> Buffer {
    let mut buffer = Buffer::new();
    buffer.extend_from_slice(bytes);
    buffer
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

#[test]
fn half_a_request_is_left_alone() {
    let half = b"GET /hello HTTP/1.1\r\nHost: x\r\n";
    let (mut buffer, mut out) = (received(half), Vec::new());
    assert_eq!(answer(&mut buffer, &mut out, "test", true, |_| panic!("not asked")), None);
    assert!(out.is_empty());
    assert_eq!(&buffer[..], half, "what came stays, for the rest to join it");
}

#[test]
fn a_whole_request_is_answered_and_forgotten_and_the_next_waits() {
    let mut buffer = received(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n");
    let mut out = Vec::new();
    let open = answer(&mut buffer, &mut out, "test", true, |request| {
        assert_eq!(request.path, "/a");
        Response::text(200, "a")
    });
    assert_eq!(open, Some(true), "HTTP/1.1 keeps the connection");
    assert!(text(&out).starts_with("HTTP/1.1 200 OK\r\nServer: test\r\n"), "{}", text(&out));
    assert!(!text(&out).contains("Connection: close"));
    assert!(buffer.starts_with(b"GET /b"), "the pipelined one is still there");
}

#[test]
fn the_connection_closes_when_the_client_the_answer_or_the_server_says_so() {
    let close = |request: &[u8], response: Response, stay_open| {
        let mut out = Vec::new();
        let open = answer(&mut received(request), &mut out, "test", stay_open, |_| response);
        assert!(text(&out).contains("Connection: close\r\n"), "{}", text(&out));
        open
    };
    let asked = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_eq!(close(asked, Response::text(200, ""), true), Some(false));
    let plain = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let closing = Response { close: true, ..Response::text(200, "") };
    assert_eq!(close(plain, closing, true), Some(false));
    assert_eq!(close(plain, Response::text(200, ""), false), Some(false));
}

#[test]
fn a_request_the_parser_rejects_gets_its_error_and_a_close() {
    let mut buffer = received(b"NOT HTTP AT ALL\r\n\r\n");
    match take_request(&mut buffer, |_| panic!("not asked")) {
        Some(Err(rejected)) => assert!(rejected.close && rejected.status >= 400),
        other => panic!("expected the parser's error, got {:?}", other.map(|r| r.map(|_| ()))),
    }
    let mut out = Vec::new();
    assert_eq!(answer(&mut buffer, &mut out, "test", true, |_| panic!("not asked")), Some(false));
    assert!(text(&out).starts_with("HTTP/1.1 4"), "{}", text(&out));
}

#[test]
fn take_request_hands_back_what_the_app_made_and_how_to_frame_it() {
    let mut buffer = received(b"HEAD /x HTTP/1.0\r\n\r\n");
    let Some(Ok((path, framing))) = take_request(&mut buffer, |r| r.path.to_string()) else {
        panic!("a whole request")
    };
    assert_eq!(path, "/x");
    assert!(framing.head_only && !framing.keep_alive);
    assert!(buffer.is_empty());
}
