use super::*;

/// A read that gave up says how long it waited.
#[test]
fn a_timeout_says_how_long_it_waited() {
    let timed_out = ReadError::TimedOut { received: 12, waited: Duration::from_secs(5) };
    assert_eq!(timed_out.to_string(), "no whole response within 5.00 s (12 bytes arrived)");
}
