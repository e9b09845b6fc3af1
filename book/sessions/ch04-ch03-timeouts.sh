# Chapter 3 has no timers: the suite's timeout probes.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 3 --only timeout
