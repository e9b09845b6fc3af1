# One of chapter 2's expected limitations, as the suite explains it.
# inputs: chapters/02-poll shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 2 --only sleep_elsewhere
