# Every chapter that has a header timeout, under a slowloris attack: a normal client's wait.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only slowloris 2>/dev/null | grep during | sort | cut -c1-100
