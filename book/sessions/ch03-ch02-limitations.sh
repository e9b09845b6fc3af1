# Chapter 2's two limitations that chapter 3 lifts, as the suite explains them.
# inputs: chapters/02-poll shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 2 --only pipelining
$ cargo run -p suite -- --chapter 2 --only graceful_shutdown
