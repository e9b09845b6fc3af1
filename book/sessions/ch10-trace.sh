# Chapter 10's trace: a line per turn of the ring, shown for one request, from the accept
# to the answer sent.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml
@ cargo build -p ch10-io-uring
$ cargo run -p ch10-io-uring -- --threads 1 --trace 2>/tmp/trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s http://127.0.0.1:8080/hello
$ kill %1
@ wait
$ sed -n '/accept: client/,/: sent /p' /tmp/trace.txt
