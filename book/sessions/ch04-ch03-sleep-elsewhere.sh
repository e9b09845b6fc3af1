# Chapter 3 sleeps inside its loop: the suite's probe sleep_elsewhere.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 3 --only sleep_elsewhere
