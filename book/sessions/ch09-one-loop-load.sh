# Chapter 8 under load: one thread does all the work.
# inputs: chapters/08-async shared/src shared/Cargo.toml
# inputs: book/tools/src/bin/load book/tools/Cargo.toml tests/src/response.rs
# timeout: 600
@ cargo build --release -p ch08-async
@ cargo build --release -p book-tools --bin load
$ nproc
$ cargo run --release -p ch08-async &
@ book/tools/wait-for-port.sh 8080
$ cargo run --release -p book-tools --bin load -- --connections 50 --duration 5 \
    http://127.0.0.1:8080/hello | grep requests_per_s
$ ps -L -o tid,time,comm -p $!
$ kill %1
@ wait
