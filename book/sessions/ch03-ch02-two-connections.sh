# Chapter 2 closes every connection after one answer: two pages, two connections.
# inputs: chapters/02-poll shared/src shared/Cargo.toml
@ cargo build -p ch02-poll
& cargo run -p ch02-poll
@ book/tools/wait-for-port.sh 8080
$ curl -sv http://127.0.0.1:8080/hello http://127.0.0.1:8080/hello 2>&1 \
    | grep -E '^\* |Connection|Hello'
