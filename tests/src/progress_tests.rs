//! The progress line's text, and what it keeps count of.

use super::*;

#[test]
fn the_line_names_the_longest_running_check() {
    let running = ["keep_alive".to_string(), "hello".to_string(), "echo".to_string()];
    assert_eq!(line(12, 58, &running[..1]), "[12/58] keep_alive ...");
    assert_eq!(line(12, 58, &running), "[12/58] keep_alive ... (and 2 more running)");
    assert_eq!(line(58, 58, &[]), "[58/58]");
    let long = ["x".repeat(200)];
    assert_eq!(line(1, 2, &long).chars().count(), WIDTH);
}

#[test]
fn it_counts_what_finished_and_forgets_it() {
    let progress = Progress::showing(false, 3);
    progress.started("hello");
    progress.started("echo");
    progress.finished("hello");
    let state = progress.state.lock().expect("not poisoned");
    assert_eq!((state.done, state.running.as_slice()), (1, ["echo".to_string()].as_slice()));
}
