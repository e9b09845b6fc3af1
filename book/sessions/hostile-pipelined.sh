# Every chapter, pipelined 20 MiB of requests by a client that reads nothing: its memory.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only pipelined 2>/dev/null | grep MiB | sort | cut -c1-100
