use super::*;

#[test]
fn percentiles_use_nearest_rank() {
    let values: Vec<u32> = (1..=100).collect();
    assert_eq!(percentile(&values, 50.0), 50);
    assert_eq!(percentile(&values, 99.0), 99);
    assert_eq!(percentile(&[], 99.0), 0);
}
