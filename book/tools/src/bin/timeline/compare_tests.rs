use super::*;
use crate::lanes::{build, parse, Timeline};
use crate::scenario::{requests, Seen};

/// A `poll` loop on A's clock: a wait that sleeps (0-10 ms), one that finds a socket ready
/// at once (11-15: the kernel's walk of the list and nothing else), one that sleeps until
/// A's timer, and the last, which goes on past the picture.
const POLL: &str = "\
[     0.000 ms] poll: waiting on 5004 fds, timeout None
[    10.000 ms] poll: 1 ready
[    10.400 ms] accept: client 127.0.0.1:1 (token 5003)
[    11.000 ms] poll: waiting on 5005 fds, timeout None
[    15.000 ms] poll: 1 ready
[    15.300 ms] token 5003 readable
[    16.500 ms] poll: waiting on 5005 fds, timeout Some(284ms)
[   300.000 ms] poll: 0 ready
[   300.100 ms] timer fired
[   301.200 ms] poll: waiting on 5005 fds, timeout None
";

const EPOLL: &str = "\
[     0.000 ms] epoll: waiting, timeout None
[     0.500 ms] epoll: 1 ready
[     0.600 ms] accept: client 127.0.0.1:1 (token 3)
[     0.650 ms] epoll: waiting, timeout None
[   300.000 ms] epoll: 0 ready
[   300.100 ms] epoll: waiting, timeout None
";

fn run(trace: &str, loop_cpu_ms: f64) -> Run {
    let [a, b, c] = requests();
    let seen = Seen::answered;
    Run {
        trace: trace.to_string(),
        clients: vec![seen(a, 1, 0.0, 301.0), seen(b, 2, 50.0, 62.0), seen(c, 3, 100.0, 501.0)],
        extra_flags: vec!["--workers 1".into(), "--backend poll".into()],
        read_at: 800.0,
        idle: 5000,
        clock: None,
        loop_cpu_ms: Some(loop_cpu_ms),
    }
}

#[test]
fn a_turn_is_the_work_between_two_waits() {
    let timeline = build(&parse(POLL), 800.0);
    let turns = turns(&timeline.loops[0], 800.0).expect("turns");
    // Work of 1.0, 1.5 and 1.2 ms; the waits that ended took 10, 4 and 283.5 ms.
    assert_eq!(turns.count, 3);
    assert!((turns.our_code_ms - 1.2).abs() < 1e-9, "{turns:?}");
    assert!((turns.shortest_wait_ms - 4.0).abs() < 1e-9, "{turns:?}");
    assert_eq!(most_polled(POLL), Some(5005));
    assert_eq!(most_polled(EPOLL), None);
    assert_eq!((ms(0.1234), ms(1.44), ms(16.2)), ("0.12".into(), "1.4".into(), "16".into()));
}

fn panel<'a>(backend: &'a str, timeline: &'a Timeline, run: &'a Run) -> Panel<'a> {
    let picture = Picture {
        name: "ch07-epoll",
        number: 7,
        timeline,
        clients: &run.clients,
        flags: &run.extra_flags,
        tasks: false,
    };
    Panel { backend, picture, run }
}

/// The picture's words, its lines of text joined by spaces (a paragraph's lines are
/// separate `<text>` elements).
fn words(svg: &str) -> String {
    let texts = svg.split("<text").skip(1).filter_map(|element| {
        let (_, rest) = element.split_once('>')?;
        Some(rest.split("</text>").next()?.replace("<tspan", "").to_string())
    });
    texts.collect::<Vec<_>>().join(" ")
}

fn draw_both(poll: &Timeline, epoll: &Timeline) -> String {
    let (poll_run, epoll_run) = (run(POLL, 98.0), run(EPOLL, 2.5));
    draw("ch07-epoll", 7, &[panel("poll", poll, &poll_run), panel("epoll", epoll, &epoll_run)])
}

#[test]
fn the_poll_panel_draws_the_kernel_walking_the_list_at_each_end_of_a_wait() {
    let (poll, epoll) = (build(&parse(POLL), 800.0), build(&parse(EPOLL), 800.0));
    let svg = draw_both(&poll, &epoll);
    assert!(svg.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="880""#));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    // Walks of 4 ms: both ends of the first and third waits, all of the second (no
    // longer than two walks), the start of the last; and the legend's swatch. None in
    // the epoll panel.
    assert_eq!(svg.matches(&format!(r#"fill="{WALKING}""#)).count(), 6 + 1, "{svg}");
    let svg = words(&svg);
    assert!(svg.contains("three clients beside 5,000 idle ones, poll against epoll"));
    assert!(svg.contains("--backend poll: every turn hands the kernel the list of all 5,005"));
    assert!(svg.contains("A turn takes 1.2 ms in our code"));
    assert!(svg.contains("about 4.0 ms in the kernel at each end of a wait"));
    assert!(svg.contains("on a CPU for 98 ms of these 0.8 s"));
    assert!(svg.contains("--backend epoll: the kernel keeps the list, and a turn hands it nothing"));
    assert!(svg.contains("idle: waiting in poll or epoll"), "one legend for both panels");
    // How to redraw it, without the backend (the tool picks each in turn).
    assert!(svg.contains("adds --workers 1, then --backend poll or"), "{svg}");
}
