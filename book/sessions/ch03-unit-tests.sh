# Chapter 3's unit tests: the loop's edge cases, on real sockets.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml
# timeout: 600
@ cargo build --tests -p ch03-event-loop
$ cargo test -p ch03-event-loop
