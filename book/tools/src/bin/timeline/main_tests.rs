use super::*;
use crate::scenario::{requests, Clock, Seen};

fn args(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

#[test]
fn the_command_line_picks_chapters_and_a_folder() {
    let asked = arguments(args("--chapter 4 --chapter 1 --chapter 4 --out /tmp/x --keep-trace"));
    let asked = asked.unwrap().unwrap();
    let numbers: Vec<u8> = asked.chapters.iter().map(|chapter| chapter.number).collect();
    assert_eq!(numbers, [1, 4]);
    assert_eq!(asked.out, PathBuf::from("/tmp/x"));
    assert!(asked.keep_trace);

    // No chapter named: every chapter there is.
    let every = arguments(Vec::new()).unwrap().unwrap();
    let present = CHAPTERS.iter().filter(|chapter| chapter.is_present()).count();
    assert_eq!(every.chapters.len(), present);
    assert!(every.out.ends_with("book/src/generated"));
    assert_eq!(arguments(args("--all")).unwrap().unwrap().chapters.len(), present);

    assert_eq!(arguments(args("--help")), Ok(None));
    assert!(arguments(args("--chapter 99")).is_err());
    assert!(arguments(args("--chapter")).is_err());
    assert!(arguments(args("--colour")).is_err());

    // Chapter 7's idle connections: 5,000 unless asked otherwise.
    assert_eq!(every.idle, IDLE);
    assert_eq!(arguments(args("--chapter 7 --idle 200")).unwrap().unwrap().idle, 200);
    assert!(arguments(args("--idle many")).is_err());
}

/// A run whose clients all got their answers, with `trace` as the server's trace.
fn run_with(trace: &str) -> Run {
    let [a, b, c] = requests();
    let seen = Seen::answered;
    Run {
        trace: trace.to_string(),
        clients: vec![seen(a, 1, 0.5, 300.5), seen(b, 2, 50.5, 51.0), seen(c, 3, 100.5, 500.9)],
        extra_flags: Vec::new(),
        read_at: 800.0,
        idle: 0,
        clock: None,
        loop_cpu_ms: None,
    }
}

#[test]
fn the_trace_is_put_on_the_clients_clock_by_as_accept() {
    let run = run_with(
        "[  1000.000 ms] poll: waiting on 2 fds, timeout None
[  1100.000 ms] accept: client 127.0.0.1:1 (fd 6)
[  1150.000 ms] accept: client 127.0.0.1:2 (fd 7)
[  1200.000 ms] accept: client 127.0.0.1:3 (fd 8)
[  1210.000 ms] poll: waiting on 5 fds, timeout None
",
    );
    let timeline = align(&run).unwrap();
    // A connected at 0.5 ms on the clients' clock, and was accepted at 1100 on the trace's.
    let accepted: Vec<f64> = timeline.connections.iter().map(|c| c.accepted).collect();
    assert_eq!(accepted, [0.5, 50.5, 100.5]);
    let loop_lane = &timeline.loops[0].spans;
    assert_eq!(loop_lane[0].start, -99.5);
    // The last state lasts until the trace was read.
    assert_eq!(loop_lane.last().map(|span| span.end), Some(800.0));
}

#[test]
fn the_earliest_accept_sets_the_clock_when_a_loop_was_slow_to_take_a() {
    // A's accept came 19 ms after its connect (the loop was waking, or busy), B's and C's
    // at once: the clocks are 1,100.5 ms apart, not 1,119.5.
    let run = run_with(
        "[  1000.000 ms] poll: waiting on 2 fds, timeout None
[  1120.000 ms] accept: client 127.0.0.1:1 (fd 6)
[  1151.000 ms] accept: client 127.0.0.1:2 (fd 7)
[  1201.000 ms] accept: client 127.0.0.1:3 (fd 8)
",
    );
    let accepted: Vec<f64> = align(&run).unwrap().connections.iter().map(|c| c.accepted).collect();
    assert_eq!(accepted, [19.5, 50.5, 100.5]);

    // With idle connections, the clock's own connection, made while the loop had nothing
    // else to do, ties the clocks; A, B and C all came to a loop slow to wake.
    let mut run = run_with(
        "[   500.000 ms] accept: client 127.0.0.1:9 (fd 5)
[  1110.000 ms] accept: client 127.0.0.1:1 (fd 6)
[  1160.000 ms] accept: client 127.0.0.1:2 (fd 7)
[  1210.000 ms] accept: client 127.0.0.1:3 (fd 8)
",
    );
    run.clock = Some(Clock { local: "127.0.0.1:9".into(), connected: -599.5 });
    let accepted: Vec<f64> = align(&run).unwrap().connections.iter().map(|c| c.accepted).collect();
    assert_eq!(accepted, [-599.5, 10.5, 60.5, 110.5]);
    run.clock = Some(Clock { local: "127.0.0.1:8".into(), connected: -599.5 });
    let error = align(&run).unwrap_err();
    assert!(error.contains("never accepts the clock's client (127.0.0.1:8)"), "{error}");
}

#[test]
fn a_trace_that_lost_a_client_or_a_client_without_an_answer_is_an_error() {
    let run = run_with("[ 1.000 ms] accept: client 127.0.0.1:1 (fd 6)\n");
    let error = align(&run).unwrap_err();
    assert!(error.contains("never accepts B (127.0.0.1:2)"), "{error}");

    let mut run = run_with("[ 1.000 ms] poll: waiting on 1 fds, timeout None\n");
    run.clients[2].answered = None;
    run.clients[2].error = Some("no answer: the server closed the connection".into());
    let error = align(&run).unwrap_err();
    assert!(error.starts_with("client C: no answer"), "{error}");
}

/// The real thing, once: chapter 4, run with the scenario, drawn. About a second once the
/// chapter is built (the suite's tests build it into the same folder).
#[test]
fn chapter_4_runs_and_draws_the_disk_blocking_its_loop() {
    let chapter = chapters::chapter(4).expect("chapter 4");
    let binary = chapter.binary(&build_dir()).expect("chapter 4 builds");
    let run = scenario::run(chapter, &binary, &Setup::default()).expect("the scenario runs");
    let timeline = align(&run).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(timeline.loops.len(), 1);
    assert!(timeline.workers.is_empty());
    let blocked: Vec<&lanes::Span> = timeline.loops[0]
        .spans
        .iter()
        .filter(|span| matches!(span.activity, lanes::Activity::Blocked(_)))
        .collect();
    assert_eq!(blocked.len(), 2, "C's open and read, on the loop: {blocked:?}");
    let (disk_start, disk_end) = (blocked[0].start, blocked[1].end);
    // Each connection was followed from accept to answer.
    for (seen, connection) in run.clients.iter().zip(&timeline.connections) {
        assert_eq!(connection.peer, seen.local);
        assert!(connection.request_read.is_some() && connection.response_sent.is_some());
    }
    // A's timer (due at 300 ms) could only fire once the disk let go of the loop.
    let a_sent = timeline.connections[0].response_sent.unwrap_or_default();
    assert!(a_sent >= disk_end, "A answered at {a_sent}, the disk let go at {disk_end}");
    assert!(disk_start < 300.0 && disk_end > 300.0, "{disk_start}..{disk_end}");
    let svg = svg::draw(&svg::Picture {
        name: chapter.name,
        number: 4,
        timeline: &timeline,
        clients: &run.clients,
        flags: &run.extra_flags,
        tasks: false,
    });
    assert!(svg.contains("held up"));
}

/// Chapter 7 beside a few hundred idle connections, once: they are opened and accepted
/// before A comes, every poll turn hands the kernel all of them, and the clock's own
/// connection puts the trace on our clock. A few seconds once the chapter is built.
#[test]
fn chapter_7_runs_beside_idle_connections_with_poll() {
    let chapter = chapters::chapter(7).expect("chapter 7");
    let binary = chapter.binary(&build_dir()).expect("chapter 7 builds");
    let setup = Setup { idle: 300, flags: vec![("--backend", "poll".to_string())] };
    let run = scenario::run(chapter, &binary, &setup).expect("the scenario runs");
    assert!(run.extra_flags.contains(&"--backend poll".to_string()), "{:?}", run.extra_flags);
    assert!(run.clock.as_ref().is_some_and(|clock| clock.connected < 0.0));
    let polled = compare::most_polled(&run.trace).expect("a poll trace");
    assert!(polled > 300, "poll was handed {polled} sockets");
    let timeline = align(&run).unwrap_or_else(|error| panic!("{error}"));
    // The idle ones were accepted before A, and A, B and C after.
    let before = timeline.connections.iter().filter(|c| c.accepted < 0.0).count();
    assert!(before > 300, "{before} accepted before A");
    for seen in &run.clients {
        let connection = svg::connection_of(&timeline, seen).expect("followed");
        assert!(connection.accepted >= 0.0, "{} accepted at {}", seen.local, connection.accepted);
    }
    let turns = compare::turns(&timeline.loops[0], run.read_at).expect("turns");
    assert!(turns.count >= 6, "{turns:?}");
    // The loop's thread did some work, and less than all the time there was.
    if let Some(cpu) = run.loop_cpu_ms {
        assert!(cpu > 0.0 && cpu < run.read_at, "{cpu} ms");
    }
}
