# The suite cannot tell chapter 4 from chapter 5: the two summaries.
# inputs: chapters/04-scheduler chapters/05-promises shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1200
@ cargo build -p suite
$ cargo run -p suite -- --chapter 4 2>/dev/null | tail -1
$ cargo run -p suite -- --chapter 5 2>/dev/null | tail -1
