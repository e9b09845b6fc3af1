# The suite on chapter 11: what it measured, and the summary.
# inputs: chapters/11-multishot shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 11 | grep -e 'ch11-multishot:' -e 'checks:'
