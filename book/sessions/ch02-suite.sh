# The suite on chapter 2: its rows of the capability table, and the summary.
# inputs: chapters/02-poll shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 2 | sed -n '/^by row/,$p'
