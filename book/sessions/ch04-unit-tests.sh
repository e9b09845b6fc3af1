# Chapter 4's unit tests: the timer queue on a fake clock, and the loop with timers.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml
# timeout: 600
@ cargo build --tests -p ch04-scheduler
$ cargo test -p ch04-scheduler
