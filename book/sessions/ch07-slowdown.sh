# The suite's probe ten_thousand_idle_slowdown on chapter 7: both backends.
# inputs: chapters/07-epoll shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 900
@ cargo build -p suite
$ ulimit -n 20000
$ cargo run -p suite -- --chapter 7 --only ten_thousand_idle_slowdown
