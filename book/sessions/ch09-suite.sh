# The suite on chapter 9: what it measured, and the summary.
# inputs: chapters/09-multicore shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 9 | grep -e 'ch09-multicore:' -e 'checks:'
