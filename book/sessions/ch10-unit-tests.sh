# Chapter 10's own tests: the ring, and operations that own their memory.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml
# timeout: 300
@ cargo build --tests -p ch10-io-uring
$ cargo test -p ch10-io-uring 2>&1 | grep -e '^test ' -e 'test result'
