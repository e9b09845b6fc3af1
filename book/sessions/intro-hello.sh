# The cheapest page, from chapter 1 running in another terminal.
# inputs: chapters/01-blocking shared/src shared/Cargo.toml
@ cargo build -p ch01-blocking
@ cargo run -p ch01-blocking &
@ book/tools/wait-for-port.sh 8080
$ curl -s http://127.0.0.1:8080/hello
@ kill %1; wait
