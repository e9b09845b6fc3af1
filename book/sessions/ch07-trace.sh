# Chapter 7's trace with epoll: one curl.
# inputs: chapters/07-epoll shared/src shared/Cargo.toml
@ cargo build -p ch07-epoll
$ cargo run -p ch07-epoll -- --trace &
@ book/tools/wait-for-port.sh 8080
$ curl -s http://127.0.0.1:8080/hello
@ sleep 0.2
$ kill %1
@ wait
