use super::*;
use crate::lanes::Span;
use crate::scenario::requests;

/// Chapter 4's picture, in outline: the loop blocked on the disk for C, A answered late.
fn chapter_4() -> (Timeline, Vec<Seen>) {
    let spans = vec![
        Span { start: 0.0, end: 0.2, activity: Activity::Running },
        Span { start: 0.2, end: 100.0, activity: Activity::Waiting("poll".into()) },
        Span { start: 100.0, end: 300.0, activity: Activity::Blocked("disk 200 ms".into()) },
        Span { start: 300.0, end: 500.0, activity: Activity::Blocked("disk 200 ms".into()) },
        Span { start: 500.0, end: 500.1, activity: Activity::Timer },
        Span { start: 500.1, end: 800.0, activity: Activity::Waiting("poll".into()) },
    ];
    let connection = |peer: &str, accepted: f64, sent: f64| Connection {
        peer: peer.into(),
        thread: "main".into(),
        accepted,
        request_read: Some(accepted),
        response_sent: Some(sent),
        closed: None,
        steps: vec![(sent, "response sent (170 bytes)".into())],
    };
    let timeline = Timeline {
        loops: vec![Lane { thread: "main".into(), spans }],
        workers: Vec::new(),
        connections: vec![
            connection("127.0.0.1:1001", 0.1, 500.1),
            connection("127.0.0.1:1002", 50.1, 50.3),
            connection("127.0.0.1:1003", 100.1, 500.0),
        ],
    };
    let [a, b, c] = requests();
    let seen = Seen::answered;
    let clients =
        vec![seen(a, 1001, 0.0, 500.5), seen(b, 1002, 50.0, 50.6), seen(c, 1003, 100.0, 500.4)];
    (timeline, clients)
}

fn draw_chapter_4() -> String {
    let (timeline, clients) = chapter_4();
    let picture = Picture {
        name: "ch04-scheduler",
        number: 4,
        timeline: &timeline,
        clients: &clients,
        flags: &[],
        tasks: false,
    };
    draw(&picture)
}

#[test]
fn the_picture_is_a_whole_svg_as_wide_as_the_code_column() {
    let svg = draw_chapter_4();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"880\""), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    // Self-contained: nothing fetched from elsewhere.
    assert!(!svg.contains("href"));
}

#[test]
fn it_names_the_chapter_the_scenario_and_every_lane() {
    let svg = draw_chapter_4();
    assert!(svg.contains("Chapter 4, ch04-scheduler"));
    assert!(svg.contains("A: GET /sleep?ms=300 at 0 ms · B: GET /hello at 50 ms"));
    for lane in [">loop<", ">A<", ">B<", ">C<", ">GET /files/hello.txt<"] {
        assert!(svg.contains(lane), "no {lane}");
    }
    // The blocked stretches are labelled, and the legend says what they mean.
    assert_eq!(svg.matches(">blocked: disk 200 ms<").count(), 2);
    assert!(svg.contains("blocked: every client waits"));
    assert!(svg.contains("running a timer"));
    // No worker, no worker in the legend; nobody waited to be accepted.
    assert!(!svg.contains("pool worker") && !svg.contains("not yet accepted"));
}

#[test]
fn a_client_held_up_by_others_says_by_how_much() {
    let svg = draw_chapter_4();
    // A slept 300 ms but was answered after 500: held up 200 ms by C's disk.
    assert!(svg.contains("answered after 500 ms"), "{svg}");
    assert!(svg.contains(" · held up 200 ms"));
    // B had no work of its own and got its answer at once.
    assert!(svg.contains("answered after 0.6 ms<tspan"));
    assert_eq!(svg.matches(" · held up ").count(), 1, "A only");
    assert!(svg.contains("held up: waiting for the server after that"), "the legend");
}

#[test]
fn text_is_escaped() {
    assert_eq!(escape("a < b & \"c\""), "a &lt; b &amp; &quot;c&quot;");
}
