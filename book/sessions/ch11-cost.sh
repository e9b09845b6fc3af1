# Chapter 11 beside chapters 9 and 10, by the benchmark harness: the CPU time each spends
# per request with fifty clients; then the heap allocations of one request.
# inputs: chapters/09-multicore chapters/10-io-uring chapters/11-multishot shared/src
# inputs: shared/Cargo.toml tests/src tests/Cargo.toml
# inputs: book/tools/src/bin/bench book/tools/Cargo.toml
# timeout: 900
@ cargo build --release -p book-tools --bin bench
$ cargo run --release -p book-tools --bin bench -- --chapters 9,10,11 --no-nginx --no-write \
    --scenarios keep-alive-50 --seconds 2 --no-syscalls --no-allocations \
    2>/dev/null | grep -e '^####' -e '^| server' -e '^| ch'
$ cargo run --release -p book-tools --bin bench -- --chapters 10,11 --no-nginx --no-write \
    --no-scenarios --no-syscalls 2>&1 | grep '^bench: .*allocations'
