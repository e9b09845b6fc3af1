# Chapter 10's trace: a line per turn of the ring.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml
@ cargo build -p ch10-io-uring
$ cargo run -p ch10-io-uring -- --threads 1 --trace 2>/tmp/trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s http://127.0.0.1:8080/hello
$ curl -s http://127.0.0.1:8080/hello http://127.0.0.1:8080/hello
$ kill %1
@ wait
$ grep -v 'date\|timer' /tmp/trace.txt | cut -c1-100 | tail -n 14
