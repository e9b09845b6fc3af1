# The parser's property test, given 30 seconds.
# inputs: shared/src shared/Cargo.toml shared/tests/parser_fuzz.rs
# timeout: 600
@ cargo build --tests -p shared
$ PARSER_FUZZ_SECONDS=30 cargo test -p shared --test parser_fuzz -- --nocapture
