# Chapter 6's unit tests: the pool, waited on with poll and a deadline.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml
# timeout: 600
@ cargo build --tests -p ch06-thread-pool
$ cargo test -p ch06-thread-pool
