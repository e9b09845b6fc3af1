# The suite's probe ten_thousand_idle_slowdown on chapter 6.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 900
@ cargo build -p suite
$ ulimit -n 20000
$ cargo run -p suite -- --chapter 6 --only ten_thousand_idle_slowdown
