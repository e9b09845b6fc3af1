# Chapter 4's timers do not help with files: the suite's probe slow_disk.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 4 --only slow_disk
