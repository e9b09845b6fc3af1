# The suite on chapter 10: what it measured, and the summary.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 10 | grep -e 'ch10-io-uring:' -e 'checks:'
