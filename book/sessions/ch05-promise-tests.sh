# Chapter 5's unit tests of the promises, each pinning one rule.
# inputs: chapters/05-promises shared/src shared/Cargo.toml
# timeout: 600
@ cargo build --tests -p ch05-promises
$ cargo test -p ch05-promises promise::
