# Every chapter that holds 10,000 idle connections: their memory.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ ulimit -n 20000
$ cargo run -p suite -- --only ten_thousand_idle 2>/dev/null | grep resident | sort | cut -c1-100
