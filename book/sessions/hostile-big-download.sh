# Every chapter that streams files: four downloads of 96 MiB at once, and their memory.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only big_download 2>/dev/null | grep downloads | sort | cut -c1-100
