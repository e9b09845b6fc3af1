//! The ring alone, with entries that point at nothing (a no-op, a timer) or at memory that
//! outlives their completion: what the kernel reads and writes, and when.

use std::time::Instant;

use super::*;

const IORING_OP_NOP: u8 = 0;
const IORING_OP_TIMEOUT: u8 = 11;
const LONG: Option<Duration> = Some(Duration::from_secs(5));

fn nop(user_data: u64) -> io_uring_sqe {
    io_uring_sqe { user_data, ..prep_rw(IORING_OP_NOP, -1, 0, 0, 0, 0) }
}

fn push(ring: &mut Ring, entries: &[io_uring_sqe]) {
    // SAFETY: the tests' entries point at nothing, or at memory alive until reaped.
    unsafe { ring.push(entries) }.expect("push");
}

/// Every completion in the ring, as (user_data, res), in the order they came.
fn reap(ring: &mut Ring) -> Vec<(u64, i32)> {
    let mut seen = Vec::new();
    ring.reap(|completion| seen.push((completion.user_data, completion.res))).expect("reap");
    seen
}

#[test]
fn an_entry_comes_back_with_its_user_data_once() {
    let mut ring = Ring::new(8, 16).expect("a ring");
    push(&mut ring, &[nop(42)]);
    assert_eq!(ring.submit_and_wait(LONG).expect("enter"), 1);
    assert_eq!(reap(&mut ring), [(42, 0)]);
    assert_eq!(reap(&mut ring), [], "the head moved on: nothing is seen twice");
}

#[test]
fn a_full_submission_ring_hands_its_entries_over_to_make_room() {
    let mut ring = Ring::new(4, 8).expect("a ring");
    push(&mut ring, &[nop(0), nop(1), nop(2)]);
    push(&mut ring, &[nop(3), nop(4)]); // a pair that does not fit: the three go first
    assert_eq!(ring.queued(), 2, "the pair waits, whole, for the next submission");
    ring.submit_and_wait(LONG).expect("enter");
    let mut seen: Vec<u64> = reap(&mut ring).into_iter().map(|(user_data, _)| user_data).collect();
    seen.sort();
    assert_eq!(seen, [0, 1, 2, 3, 4]);
}

#[test]
fn a_burst_of_completions_overflows_a_small_ring_and_none_is_lost() {
    let mut ring = Ring::new(4, 4).expect("a ring");
    for user_data in 0..40 {
        push(&mut ring, &[nop(user_data)]); // every fifth push submits the four before it
    }
    ring.submit_and_wait(LONG).expect("enter");
    let flags = ring.field(ring.params.sq_off.flags).load(Relaxed);
    assert!(flags & IORING_SQ_CQ_OVERFLOW != 0, "36 had no room: the kernel holds them");
    let mut seen: Vec<u64> = reap(&mut ring).into_iter().map(|(user_data, _)| user_data).collect();
    seen.sort();
    assert_eq!(seen, (0..40).collect::<Vec<u64>>(), "each exactly once");
}

#[test]
fn a_wait_ends_when_its_timeout_passes() {
    let mut ring = Ring::new(4, 8).expect("a ring");
    let started = Instant::now();
    assert_eq!(ring.submit_and_wait(Some(Duration::from_millis(200))).expect("enter"), 0);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(190) && waited < Duration::from_secs(2), "{waited:?}");
}

#[test]
fn a_timer_entry_completes_once_its_time_has_passed() {
    let mut ring = Ring::new(4, 8).expect("a ring");
    let ts = __kernel_timespec::from(Duration::from_millis(150));
    let timer = prep_rw(IORING_OP_TIMEOUT, -1, &raw const ts as u64, 1, 0, 0);
    let started = Instant::now();
    push(&mut ring, &[io_uring_sqe { user_data: 7, ..timer }]);
    let mut seen = Vec::new();
    while seen.is_empty() && started.elapsed() < Duration::from_secs(3) {
        ring.submit_and_wait(LONG).expect("enter");
        seen.extend(reap(&mut ring));
    }
    assert_eq!(seen, [(7, -libc::ETIME)], "a timer that fires says ETIME");
    assert!(started.elapsed() >= Duration::from_millis(140), "not before its time");
}

#[test]
fn no_io_uring_is_one_line_that_says_why() {
    let error = io::Error::from_raw_os_error(libc::EPERM).to_string();
    let message = unavailable(&error).to_string();
    assert!(message.starts_with("io_uring is not available: "), "{message}");
    assert!(message.contains("not permitted") && message.contains("Linux 6.1"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}
