# The suite on chapter 8: what it measured, and the summary.
# inputs: chapters/08-async shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 8 | grep -e 'ch08-async:' -e 'checks:'
