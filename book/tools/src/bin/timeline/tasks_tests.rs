use super::*;
use crate::lanes::{build, parse};
use crate::scenario::requests;

/// Chapter 8 from a real run: A (fd 9) sleeps 300 ms, B (fd 11) is answered at once, C
/// gets fd 11 again and waits for the pool. Between the waits in epoll, the listener's
/// task accepts and each connection's task reads, answers and closes.
const CH08: &str = "\
[     0.194 ms] epoll: waiting, timeout Some(0ns)
[     0.220 ms] epoll: 1 ready
[     0.272 ms] epoll: waiting, timeout Some(999.995173ms)
[   102.683 ms] epoll: 1 ready
[   102.831 ms] accept: client 127.0.0.1:46954 (fd 9)
[   102.895 ms] epoll: waiting, timeout Some(0ns)
[   102.918 ms] epoll: 1 ready
[   103.040 ms] fd 9: read 66 bytes
[   103.084 ms] epoll: waiting, timeout Some(299.993358ms)
[   151.118 ms] epoll: 1 ready
[   151.232 ms] accept: client 127.0.0.1:46962 (fd 11)
[   151.270 ms] epoll: waiting, timeout Some(0ns)
[   151.278 ms] epoll: 1 ready
[   151.310 ms] fd 11: read 59 bytes
[   151.427 ms] fd 11: response sent (170 bytes)
[   151.477 ms] epoll: waiting, timeout Some(251.600335ms)
[   151.678 ms] epoll: 1 ready
[   151.717 ms] fd 11: closed
[   151.758 ms] epoll: waiting, timeout Some(251.319381ms)
[   201.214 ms] epoll: 1 ready
[   201.401 ms] accept: client 127.0.0.1:46972 (fd 11)
[   201.471 ms] epoll: waiting, timeout Some(0ns)
[   201.483 ms] epoll: 1 ready
[   201.538 ms] fd 11: read 69 bytes
[   201.670 ms] [pool-worker-0] pool: starts a job
[   201.692 ms] [pool-worker-0] fs: slow disk, 200 ms
[   201.722 ms] epoll: waiting, timeout Some(201.356557ms)
[   401.897 ms] [pool-worker-0] fs: slow disk, 200 ms
[   404.043 ms] epoll: 0 ready
[   404.270 ms] fd 9: response sent (169 bytes)
[   404.423 ms] epoll: waiting, timeout Some(499.988487ms)
[   404.479 ms] epoll: 1 ready
[   404.666 ms] epoll: waiting, timeout Some(499.745101ms)
[   404.725 ms] epoll: 1 ready
[   404.762 ms] fd 9: closed
[   404.809 ms] epoll: waiting, timeout Some(595.457659ms)
[   602.382 ms] [pool-worker-0] pool: finished a job
[   602.586 ms] epoll: 1 ready
[   602.752 ms] fd 11: response sent (174 bytes)
[   602.801 ms] epoll: waiting, timeout Some(397.466866ms)
[   602.817 ms] epoll: 1 ready
[   602.822 ms] epoll: waiting, timeout Some(397.444608ms)
[   603.062 ms] epoll: 1 ready
[   603.089 ms] fd 11: closed
[   603.115 ms] epoll: waiting, timeout Some(397.152054ms)
";

/// The run on the trace's clock (as if A had connected when the trace began).
fn chapter_8() -> (Timeline, Vec<Seen>) {
    let timeline = build(&parse(CH08), 900.0);
    let [a, b, c] = requests();
    let seen = Seen::answered;
    let clients = vec![
        seen(a, 46954, 102.8, 404.3),
        seen(b, 46962, 151.2, 151.5),
        seen(c, 46972, 201.4, 602.8),
    ];
    (timeline, clients)
}

fn span(start: f64, end: f64) -> Span {
    Span { start, end, activity: Activity::Running }
}

#[test]
fn a_connections_task_ran_in_the_turns_that_printed_lines_about_it() {
    let (timeline, clients) = chapter_8();
    let runs = |index: usize| {
        let connection = svg::connection_of(&timeline, &clients[index]).expect("followed");
        task_runs(&timeline, connection).into_iter().cloned().collect::<Vec<Span>>()
    };
    // B: read and answered in one turn, closed in the next; its accept was the listener's.
    assert_eq!(runs(1), [span(151.278, 151.477), span(151.678, 151.758)]);
    // A: read its request, then nothing for 300 ms, then answered, then closed.
    assert_eq!(runs(0), [span(102.918, 103.084), span(404.043, 404.423), span(404.725, 404.809)]);
    assert_eq!(runs(2).len(), 3);
}

#[test]
fn the_zoomed_window_runs_from_the_accepting_turn_to_the_closing_one() {
    let (timeline, clients) = chapter_8();
    assert_eq!(window(&timeline, &clients[1]), Some((151.118, 151.758)));
    // Each stretch of work is named for whoever printed in it.
    let ran = |start, end| who_ran(&timeline, &clients, &span(start, end));
    assert_eq!(ran(151.118, 151.270), ("the listener's task".into(), "accepts B".into()));
    assert_eq!(ran(151.278, 151.477), ("B's task".into(), "reads, answers".into()));
    assert_eq!(ran(151.678, 151.758), ("B's task".into(), "closes".into()));
    // A turn that printed nothing is nobody's we can name.
    assert_eq!(ran(602.817, 602.822), (String::new(), String::new()));
}

#[test]
fn deeds_and_factors_read_as_words() {
    assert_eq!(deed("read 59 bytes"), "reads");
    assert_eq!(deed("read 0 bytes"), "reads the end");
    assert_eq!(deed("response sent (170 bytes)"), "answers");
    assert_eq!(deed("closed"), "closes");
    assert_eq!(deed("write failed: broken pipe"), "write");
    assert_eq!(roughly(1143.2), "1,100");
    assert_eq!(roughly(760.4), "760");
    assert_eq!(roughly(95.0), "95");
    assert_eq!(roughly(7.0), "7");
}

#[test]
fn chapter_8s_picture_shows_the_tasks_on_the_clients_lanes_and_zoomed_in() {
    let (timeline, clients) = chapter_8();
    let picture = |tasks| Picture {
        name: "ch08-async",
        number: 8,
        timeline: &timeline,
        clients: &clients,
        flags: &[],
        tasks,
    };
    let running = |svg: &str| svg.matches(&format!(r#"fill="{RUNNING}""#)).count();
    // Eight runs of the three clients' tasks, each marked on its client's lane.
    let plain = svg::draw(&picture(false));
    let marked = svg::draw(&picture(true));
    assert_eq!(running(&marked), running(&plain) + 8);

    let svg = draw(&picture(true));
    assert!(svg.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="880""#));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    assert!(svg.contains("on a client's lane: its task runs"));
    // The inset: B's turns, named, between waits in epoll, on an axis of tenths of a ms.
    assert!(svg.contains("B's request, about 1,000 times closer"), "{svg}");
    for label in
        [">the listener's task<", ">accepts B<", ">B's task<", ">reads, answers<", ">closes<"]
    {
        assert!(svg.contains(label), "no {label}");
    }
    assert!(svg.contains(">151.2<") && svg.contains(">151.7<"), "the zoomed axis");
}
