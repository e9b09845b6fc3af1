# Every chapter, 2,000 idle kept-alive clients that each send 12 KiB at once: their memory after.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only idle_after 2>/dev/null | grep -e resident -e 'ever idle' | sort \
    | cut -d: -f1,3
