//! `--only` and `--row`, on the suite's own checks.

use super::*;
use crate::probes::PROBES;

fn every_check() -> Vec<&'static Probe> {
    PROBES.iter().collect()
}

fn names(probes: &[&Probe]) -> Vec<&'static str> {
    probes.iter().map(|probe| probe.name).collect()
}

#[test]
fn only_takes_parts_of_names_and_exact_names() {
    let part = choose(&every_check(), &[], &patterns("keep_alive").expect("ok")).expect("some");
    assert!(names(&part).contains(&"keep_alive_timeout"), "{:?}", names(&part));
    let exact = choose(&every_check(), &[], &patterns("=keep_alive").expect("ok")).expect("one");
    assert_eq!(names(&exact), ["keep_alive"]);
}

#[test]
fn only_takes_several_names_in_the_checks_own_order() {
    let chosen = patterns("=keep_alive, hello").expect("two");
    assert_eq!(chosen, [Pattern::Exactly("keep_alive".into()), Pattern::Contains("hello".into())]);
    let probes = choose(&every_check(), &[], &chosen).expect("some");
    assert_eq!(names(&probes), ["hello", "keep_alive"]);
    for empty in ["", "a,,b", "=", "hello,"] {
        assert!(patterns(empty).is_err(), "{empty:?}");
    }
}

/// The error `choose` gave, or a panic naming what it chose instead.
fn refused(chosen: Result<Vec<&'static Probe>, String>) -> String {
    chosen.map(|probes| panic!("chose {:?}", names(&probes))).unwrap_or_else(|error| error)
}

#[test]
fn a_name_that_names_no_check_is_an_error() {
    let error = refused(choose(&every_check(), &[], &patterns("hello,kep_alive").expect("ok")));
    assert!(error.contains("no check whose name contains \"kep_alive\""), "{error}");
    let error = refused(choose(&every_check(), &[], &patterns("=keep").expect("ok")));
    assert!(error.contains("no check whose name is \"keep\""), "{error}");
    let rows = super::rows("timeouts").expect("a row");
    let error = refused(choose(&every_check(), &rows, &patterns("hello").expect("ok")));
    assert!(error.contains("no check of those chosen whose name contains \"hello\""), "{error}");
}

#[test]
fn a_row_is_named_by_its_capability_in_kebab_case() {
    let names: Vec<String> = MANIFEST.iter().map(|row| row_name(row.capability)).collect();
    assert!(names.contains(&"keep-alive".to_string()), "{names:?}");
    assert!(names.contains(&"ten-thousand-idle".to_string()), "{names:?}");
    assert!(names.contains(&"sleep-and-upstream".to_string()), "{names:?}");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "two rows, one name: {names:?}");
    for name in &names {
        assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{name}");
    }
}

#[test]
fn row_runs_the_rows_checks_and_only_narrows_them() {
    for spelling in ["keep-alive", "keep_alive", "KeepAlive", " keep-alive "] {
        assert_eq!(rows(spelling), Ok(vec![Capability::KeepAlive]), "{spelling}");
    }
    let keep_alive = choose(&every_check(), &rows("keep-alive").expect("ok"), &[]).expect("some");
    assert!(!keep_alive.is_empty());
    assert!(keep_alive.iter().all(|probe| probe.capability == Capability::KeepAlive));
    let expected = PROBES.iter().filter(|probe| probe.capability == Capability::KeepAlive).count();
    assert_eq!(keep_alive.len(), expected);
    let two = rows("keep-alive,timeouts").expect("two rows");
    let narrowed = choose(&every_check(), &two, &patterns("timeout").expect("ok")).expect("some");
    assert!(names(&narrowed).contains(&"keep_alive_timeout"), "{:?}", names(&narrowed));
    assert!(narrowed.iter().all(|probe| probe.name.contains("timeout")));
    let error = rows("keepalive-and-pipelining").expect_err("no such row");
    assert!(error.contains("`--row list`"), "{error}");
}

#[test]
fn the_row_list_names_every_row_once() {
    let list = row_list(PROBES);
    assert_eq!(list.lines().count(), MANIFEST.len());
    for row in MANIFEST {
        let line = list
            .lines()
            .find(|line| line.starts_with(&format!("{} ", row_name(row.capability))))
            .unwrap_or_else(|| panic!("no line for {:?}:\n{list}", row.capability));
        assert!(line.contains(row.description), "{line}");
    }
}
