# Chapter 10 with one loop, under load: the system calls it makes, counted by strace.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml tests/src/bin/load.rs tests/Cargo.toml
# timeout: 300
@ cargo build --release -p ch10-io-uring
@ cargo build --release -p suite --bin load
$ cargo run --release -p ch10-io-uring -- --threads 1 &
@ book/tools/wait-for-port.sh 8080
$ strace -f -c -o /tmp/calls.txt -p $! &
@ sleep 1
$ cargo run --release -p suite --bin load -- --connections 50 --duration 3 \
    http://127.0.0.1:8080/hello | grep '^requests '
$ kill %2; sleep 1; head -8 /tmp/calls.txt
$ kill %1
@ wait
