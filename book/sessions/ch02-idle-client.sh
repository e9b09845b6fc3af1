# Chapter 1 and an idle client, as the suite sees it.
# inputs: chapters/01-blocking shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 600
@ cargo build -p suite
$ cargo run -p suite -- --chapter 1 --only idle_client
