# Every chapter, flooded with more connections than it has descriptors: its CPU meanwhile.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only descriptor 2>/dev/null | grep CPU | sort
