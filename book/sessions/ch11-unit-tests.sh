# Chapter 11's own tests: the ring, the provided buffers, multishot operations in reused
# slots, and splices.
# inputs: chapters/11-multishot shared/src shared/Cargo.toml
# timeout: 300
@ cargo build --tests -p ch11-multishot
$ cargo test -p ch11-multishot 2>&1 | grep -e '^test ' -e 'test result'
