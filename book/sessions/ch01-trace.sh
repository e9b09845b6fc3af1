# Chapter 1's --trace while it serves one request.
# inputs: chapters/01-blocking shared/src shared/Cargo.toml
@ cargo build -p ch01-blocking
& cargo run -p ch01-blocking -- --trace
@ book/tools/wait-for-port.sh 8080
$ curl -s http://127.0.0.1:8080/hello
# The server's last line (back to accept) comes after the answer.
@ sleep 0.2
