# The suite on chapter 1: its rows of the capability table, and the summary.
# inputs: chapters/01-blocking shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 1 | sed -n '/^by row/,$p'
