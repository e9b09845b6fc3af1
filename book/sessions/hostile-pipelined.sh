# Every chapter, pipelined 20 MiB of requests by a client that reads nothing: its memory.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
# range: 0.5..3 ch03-event-loop: * peak memory {} MiB
# range: 0..0.5 ch08-async: * peak memory {} MiB
# range: 0..0.5 ch09-multicore: * peak memory {} MiB
# range: 0..0.5 ch10-io-uring: * peak memory {} MiB
# range: 0..0.5 ch11-multishot: * peak memory {} MiB
$ cargo run -p suite -- --only pipelined 2>/dev/null | grep MiB | sort | cut -c1-100
