# The suite on chapter 4: its rows of the capability table, and the summary.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 900
@ cargo build -p suite
$ cargo run -p suite -- --chapter 4 | sed -n '/^by row/,$p'
