use super::*;

/// Chapter 4, as `--keep-trace` saved it from a real run: A (fd 6) sleeps on a timer, B
/// (fd 7) is answered at once, C gets fd 7 again after B closed and reads the slow disk on
/// the loop, which makes A's timer fire 200 ms late.
const CH04: &str = "\
[     0.090 ms] poll: waiting on 2 fds, timeout Some(999.995824ms)
[   108.410 ms] poll: 1 ready
[   108.450 ms] token 1 readable
[   108.481 ms] accept: client 127.0.0.1:42476 (token 2)
[   108.529 ms] poll: waiting on 3 fds, timeout Some(891.557752ms)
[   108.552 ms] poll: 1 ready
[   108.566 ms] token 2 readable
[   108.596 ms] fd 6: read 66 bytes
[   108.639 ms] poll: waiting on 3 fds, timeout Some(299.997056ms)
[   156.708 ms] poll: 1 ready
[   156.740 ms] token 1 readable
[   156.758 ms] accept: client 127.0.0.1:42482 (token 3)
[   156.785 ms] poll: waiting on 4 fds, timeout Some(251.851881ms)
[   156.797 ms] poll: 1 ready
[   156.803 ms] token 3 readable
[   156.813 ms] fd 7: read 59 bytes
[   158.214 ms] fd 7: response sent (174 bytes)
[   158.330 ms] poll: waiting on 4 fds, timeout Some(250.307164ms)
[   158.357 ms] poll: 1 ready
[   158.376 ms] token 3 readable
[   158.392 ms] fd 7: read 0 bytes
[   158.408 ms] fd 7: closed
[   158.433 ms] poll: waiting on 3 fds, timeout Some(250.20346ms)
[   206.717 ms] poll: 1 ready
[   206.762 ms] token 1 readable
[   206.782 ms] accept: client 127.0.0.1:42494 (token 4)
[   206.815 ms] poll: waiting on 4 fds, timeout Some(201.822905ms)
[   206.826 ms] poll: 1 ready
[   206.832 ms] token 4 readable
[   206.842 ms] fd 7: read 69 bytes
[   206.875 ms] fs: slow disk, 200 ms
[   407.017 ms] fs: slow disk, 200 ms
[   607.246 ms] fd 7: response sent (178 bytes)
[   607.296 ms] timer fired
[   607.318 ms] fd 6: response sent (173 bytes)
[   607.335 ms] poll: waiting on 4 fds, timeout Some(392.751361ms)
[   607.554 ms] poll: 1 ready
[   607.563 ms] token 4 readable
[   607.572 ms] fd 7: read 0 bytes
[   607.580 ms] fd 7: closed
[   607.594 ms] poll: waiting on 3 fds, timeout Some(392.490433ms)
[   608.569 ms] poll: 1 ready
[   608.579 ms] token 2 readable
[   608.586 ms] fd 6: read 0 bytes
[   608.593 ms] fd 6: closed
[   608.607 ms] poll: waiting on 2 fds, timeout Some(391.476946ms)
";

/// Chapter 1 from a real run: one client at a time, and the loop blocked in between.
const CH01: &str = "\
[     0.139 ms] accept: waiting for a client
[   103.232 ms] accept: client 127.0.0.1:58754
[   103.283 ms] read: waiting for the request
[   103.368 ms] read: 66 bytes
[   103.395 ms] sleep: 300 ms, blocking
[   403.514 ms] write: 172 bytes, status 200
[   403.816 ms] accept: waiting for a client
[   403.837 ms] accept: client 127.0.0.1:58758
[   403.850 ms] read: waiting for the request
[   403.857 ms] read: 59 bytes
[   403.878 ms] write: 173 bytes, status 200
[   404.050 ms] accept: waiting for a client
[   404.129 ms] accept: client 127.0.0.1:58764
[   404.232 ms] read: waiting for the request
[   404.262 ms] read: 69 bytes
[   404.279 ms] fs: slow disk, 200 ms
[   604.424 ms] fs: slow disk, 200 ms
[   804.618 ms] write: 177 bytes, status 200
[   805.236 ms] accept: waiting for a client
";

/// Chapter 6, C's part of a real run: the disk is read on a worker, the loop waits in poll.
const CH06: &str = "\
[   202.588 ms] token 5 readable
[   202.601 ms] fd 9: read 69 bytes
[   202.668 ms] poll: waiting on 5 fds, timeout Some(203.856498ms)
[   202.690 ms] [pool-worker-0] pool: starts JobId(0)
[   202.756 ms] [pool-worker-0] fs: slow disk, 200 ms
[   402.936 ms] [pool-worker-0] fs: slow disk, 200 ms
[   406.919 ms] poll: 0 ready
[   406.972 ms] timer fired
[   407.012 ms] poll: waiting on 5 fds, timeout Some(0ns)
[   407.033 ms] poll: 0 ready
[   407.087 ms] fd 8: response sent (175 bytes)
[   407.109 ms] poll: waiting on 5 fds, timeout Some(593.005149ms)
[   603.127 ms] [pool-worker-0] pool: finished JobId(0)
[   604.930 ms] poll: 1 ready
[   604.978 ms] token 2 readable
[   605.015 ms] fs: JobId(0) finished
[   605.115 ms] fd 9: response sent (180 bytes)
[   605.150 ms] poll: waiting on 4 fds, timeout Some(391.3ms)
";

/// Chapter 9 from a real run, cut short: two loops, and a descriptor closed on one loop
/// and given to a new client on the other.
const CH09: &str = "\
[     0.346 ms] epoll: waiting, timeout Some(999.964707ms)
[     2.002 ms] [loop-1] epoll: waiting, timeout Some(999.774655ms)
[   152.052 ms] epoll: 1 ready
[   152.247 ms] accept: client 127.0.0.1:46078 (fd 19)
[   152.444 ms] epoll: waiting, timeout Some(847.867391ms)
[   152.489 ms] epoll: 1 ready
[   152.541 ms] fd 19: read 59 bytes
[   152.665 ms] fd 19: response sent (174 bytes)
[   152.923 ms] fd 19: closed
[   153.024 ms] epoll: waiting, timeout Some(847.287259ms)
[   201.974 ms] [loop-1] epoll: 1 ready
[   202.071 ms] [loop-1] accept: client 127.0.0.1:46082 (fd 19)
[   202.123 ms] [loop-1] epoll: waiting, timeout Some(200.895091ms)
[   202.142 ms] [loop-1] epoll: 1 ready
[   202.177 ms] [loop-1] fd 19: read 69 bytes
[   202.302 ms] [loop-1] epoll: waiting, timeout Some(200.715954ms)
";

fn span(start: f64, end: f64, activity: Activity) -> Span {
    Span { start, end, activity }
}

fn waiting(call: &str) -> Activity {
    Activity::Waiting(call.to_string())
}

fn blocked(why: &str) -> Activity {
    Activity::Blocked(why.to_string())
}

#[test]
fn a_trace_line_gives_its_time_thread_and_text() {
    let line = parse_line("[   12.345 ms] poll: waiting on 3 fds, timeout None").unwrap();
    assert_eq!(line.at, 12.345);
    assert_eq!(line.thread, "main");
    assert_eq!(line.text, "poll: waiting on 3 fds, timeout None");

    let line = parse_line("[ 1002.000 ms] [pool-worker-1] pool: starts JobId(3)").unwrap();
    assert_eq!((line.at, line.thread.as_str()), (1002.0, "pool-worker-1"));
    assert_eq!(line.text, "pool: starts JobId(3)");

    // Not a thread: a bracket in the text itself.
    let line = parse_line("[    1.000 ms] [a b] text").unwrap();
    assert_eq!((line.thread.as_str(), line.text.as_str()), ("main", "[a b] text"));

    // `log!` lines have no time, and are not part of the trace.
    assert_eq!(parse_line("SIGTERM: shutting down: no new connections"), None);
    assert_eq!(parse_line("[oops] not a time"), None);
    assert_eq!(parse("listening on http://127.0.0.1:1\n[ 1.500 ms] timer fired\n").len(), 1);
}

#[test]
fn the_loop_waits_runs_and_is_blocked_on_the_disk_in_chapter_4() {
    let timeline = build(&parse(CH04), 700.0);
    assert_eq!(timeline.loops.len(), 1);
    assert!(timeline.workers.is_empty());
    let spans = &timeline.loops[0].spans;
    // Waiting from the first line until poll returns; then a callback, merged across the
    // lines it printed, until the next wait.
    assert_eq!(spans[0], span(0.090, 108.410, waiting("poll")));
    assert_eq!(spans[1], span(108.410, 108.529, Activity::Running));
    // C's request: the two slow disk accesses, each its own stretch, then the answers.
    let blocked: Vec<&Span> =
        spans.iter().filter(|span| matches!(span.activity, Activity::Blocked(_))).collect();
    assert_eq!(
        blocked,
        [
            &span(206.875, 407.017, self::blocked("disk 200 ms")),
            &span(407.017, 607.246, self::blocked("disk 200 ms")),
        ]
    );
    // A's timer fires only once the disk lets the loop go.
    let timers: Vec<&Span> = spans.iter().filter(|span| span.activity == Activity::Timer).collect();
    assert_eq!(timers, [&span(607.296, 607.318, Activity::Timer)]);
    // The last line's state lasts until the end.
    assert_eq!(spans.last(), Some(&span(608.607, 700.0, waiting("poll"))));
    // No two neighbours are the same but blocked stretches.
    for pair in spans.windows(2) {
        assert!(pair[0].end <= pair[1].start, "{pair:?}");
        assert!(
            pair[0].activity != pair[1].activity
                || matches!(pair[0].activity, Activity::Blocked(_))
        );
    }
}

#[test]
fn connections_are_followed_from_token_to_descriptor_in_chapter_4() {
    let timeline = build(&parse(CH04), 700.0);
    let expected = [
        // A: token 2, fd 6; its answer comes after the timer.
        Connection {
            peer: "127.0.0.1:42476".into(),
            thread: "main".into(),
            accepted: 108.481,
            request_read: Some(108.596),
            response_sent: Some(607.318),
            closed: Some(608.593),
            steps: vec![
                (108.596, "read 66 bytes".into()),
                (607.318, "response sent (173 bytes)".into()),
                (608.586, "read 0 bytes".into()),
                (608.593, "closed".into()),
            ],
        },
        // B: token 3, fd 7.
        Connection {
            peer: "127.0.0.1:42482".into(),
            thread: "main".into(),
            accepted: 156.758,
            request_read: Some(156.813),
            response_sent: Some(158.214),
            closed: Some(158.408),
            steps: vec![
                (156.813, "read 59 bytes".into()),
                (158.214, "response sent (174 bytes)".into()),
                (158.392, "read 0 bytes".into()),
                (158.408, "closed".into()),
            ],
        },
        // C: token 4, and fd 7 again, free since B closed.
        Connection {
            peer: "127.0.0.1:42494".into(),
            thread: "main".into(),
            accepted: 206.782,
            request_read: Some(206.842),
            response_sent: Some(607.246),
            closed: Some(607.580),
            steps: vec![
                (206.842, "read 69 bytes".into()),
                (607.246, "response sent (178 bytes)".into()),
                (607.572, "read 0 bytes".into()),
                (607.580, "closed".into()),
            ],
        },
    ];
    assert_eq!(timeline.connections, expected);
}

#[test]
fn chapter_1_blocks_in_sleep_and_on_the_disk_and_serves_one_client_at_a_time() {
    let timeline = build(&parse(CH01), 900.0);
    let spans = &timeline.loops[0].spans;
    assert_eq!(spans[0], span(0.139, 103.232, waiting("accept")));
    assert_eq!(spans[2], span(103.283, 103.368, waiting("read")));
    assert_eq!(spans[4], span(103.395, 403.514, blocked("sleep 300 ms")));
    let blocked = spans.iter().filter(|span| matches!(span.activity, Activity::Blocked(_)));
    assert_eq!(blocked.count(), 3);
    let served: Vec<(f64, Option<f64>, Option<f64>)> = timeline
        .connections
        .iter()
        .map(|connection| (connection.accepted, connection.request_read, connection.response_sent))
        .collect();
    assert_eq!(
        served,
        [
            (103.232, Some(103.368), Some(403.514)),
            (403.837, Some(403.857), Some(403.878)),
            (404.129, Some(404.262), Some(804.618)),
        ]
    );
}

#[test]
fn a_pool_worker_has_its_own_lane_and_the_disk_no_longer_blocks_the_loop() {
    let timeline = build(&parse(CH06), 700.0);
    assert_eq!(timeline.workers.len(), 1);
    let worker = &timeline.workers[0];
    assert_eq!(worker.thread, "pool-worker-0");
    let disk = |start, end| span(start, end, Activity::Disk("disk 200 ms".into()));
    assert_eq!(
        worker.spans,
        [
            span(202.690, 202.756, Activity::Job("JobId(0)".into())),
            disk(202.756, 402.936),
            disk(402.936, 603.127),
        ]
    );
    let loop_lane = &timeline.loops[0];
    assert_eq!(loop_lane.thread, "main");
    assert!(loop_lane.spans.iter().all(|span| !matches!(span.activity, Activity::Blocked(_))));
    assert!(loop_lane.spans.contains(&span(202.668, 406.919, waiting("poll"))));
}

#[test]
fn each_of_chapter_9s_loops_has_a_lane_and_its_own_connections() {
    let timeline = build(&parse(CH09), 300.0);
    let threads: Vec<&str> = timeline.loops.iter().map(|lane| lane.thread.as_str()).collect();
    assert_eq!(threads, ["main", "loop-1"]);
    assert_eq!(timeline.loops[1].spans[0], span(2.002, 201.974, waiting("epoll")));
    let connections: Vec<(&str, &str, Option<f64>, Option<f64>)> = timeline
        .connections
        .iter()
        .map(|c| (c.peer.as_str(), c.thread.as_str(), c.request_read, c.response_sent))
        .collect();
    assert_eq!(
        connections,
        [
            ("127.0.0.1:46078", "main", Some(152.541), Some(152.665)),
            ("127.0.0.1:46082", "loop-1", Some(202.177), None),
        ]
    );
}

/// Chapters 7-9 on macOS and the BSDs wait in kqueue, and say so as epoll does.
#[test]
fn kqueue_is_a_wait_too() {
    let trace = "\
[     0.100 ms] kqueue: waiting, timeout None, with 6 changes
[     5.000 ms] kqueue: 1 ready
[     5.200 ms] kqueue: waiting, timeout None, with 0 changes
";
    let timeline = build(&parse(trace), 10.0);
    let spans = &timeline.loops[0].spans;
    assert_eq!(spans[0], span(0.100, 5.000, waiting("kqueue")));
    assert_eq!(spans[1], span(5.000, 5.200, Activity::Running));
    assert_eq!(spans[2], span(5.200, 10.0, waiting("kqueue")));
}
