# The suite on chapter 6: what it measured of a big download, the slow disk, the summary.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 900
@ cargo build -p suite
$ cargo run -p suite -- --chapter 6 2>/dev/null | grep -E 'downloads|slow_disk|checks:'
