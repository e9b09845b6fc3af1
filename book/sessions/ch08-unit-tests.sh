# Chapter 8's unit tests: the machinery, one piece at a time.
# inputs: chapters/08-async shared/src shared/Cargo.toml
# timeout: 600
@ cargo build --tests -p ch08-async
$ cargo test -p ch08-async
