# Chapter 9 under the same load, with two loops.
# inputs: chapters/09-multicore shared/src shared/Cargo.toml
# inputs: book/tools/src/bin/load book/tools/Cargo.toml tests/src/response.rs
# timeout: 600
@ cargo build --release -p ch09-multicore
@ cargo build --release -p book-tools --bin load
$ cargo run --release -p ch09-multicore -- --threads 2 &
@ book/tools/wait-for-port.sh 8080
$ cargo run --release -p book-tools --bin load -- --connections 50 --duration 5 \
    http://127.0.0.1:8080/hello | grep requests_per_s
$ ps -L -o tid,time,comm -p $!
$ curl -s http://127.0.0.1:8080/stats | grep thread
$ kill %1
@ wait
