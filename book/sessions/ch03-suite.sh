# The suite on chapter 3: its rows of the capability table, and the summary.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 900
@ cargo build -p suite
$ cargo run -p suite -- --chapter 3 | sed -n '/^by row/,$p'
