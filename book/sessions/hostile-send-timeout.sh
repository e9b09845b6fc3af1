# One attack on every chapter: a client that asks for a big file and reads nothing.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only send_timeout 2>/dev/null | cut -c1-100
