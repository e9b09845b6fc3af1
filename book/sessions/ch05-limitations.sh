# Chapter 5's expected limitations: chapter 4's.
# inputs: chapters/05-promises shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 900
@ cargo build -p suite
$ cargo run -p suite -- --chapter 5 2>/dev/null | grep -o '^ch05.*expected limitation'
