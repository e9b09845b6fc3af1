# Chapter 3's keep-alive: curl's two pages on one connection, and what the trace saw.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml
@ cargo build -p ch03-event-loop
$ cargo run -p ch03-event-loop -- --trace 2>/tmp/ch03-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -sv http://127.0.0.1:8080/hello http://127.0.0.1:8080/hello 2>&1 \
    | grep -E '^\* |Connection|Hello'
@ sleep 0.2
$ grep -v poll /tmp/ch03-trace.txt
$ kill %1
@ wait
