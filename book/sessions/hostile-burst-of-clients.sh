# Every chapter, 200 clients that connect at once: how many turns of its loop let them in.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only burst_of 2>/dev/null | grep turns | sort
