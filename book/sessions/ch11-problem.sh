# Chapter 9 against chapter 10, by the benchmark harness: the CPU time each spends per
# request, with one client and with fifty, and the heap allocations of one request.
# inputs: chapters/09-multicore chapters/10-io-uring shared/src shared/Cargo.toml
# inputs: tests/src tests/Cargo.toml
# inputs: book/tools/src/bin/bench book/tools/Cargo.toml
# timeout: 600
@ cargo build --release -p book-tools --bin bench
$ cargo run --release -p book-tools --bin bench -- --chapters 9,10 --no-nginx --no-write \
    --scenarios keep-alive-1,keep-alive-50 --seconds 2 --no-syscalls --no-allocations \
    2>/dev/null | grep -e '^####' -e '^| server' -e '^| ch'
$ cargo run --release -p book-tools --bin bench -- --chapters 9,10 --no-nginx --no-write \
    --no-scenarios --no-syscalls 2>&1 | grep '^bench: .*allocations'
