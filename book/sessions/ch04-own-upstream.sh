# Chapter 4 as its own upstream: both sides of the fetch in one loop.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml
@ cargo build -p ch04-scheduler
$ cargo run -p ch04-scheduler -- --upstream 127.0.0.1:8080 --trace 2>/tmp/ch04-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w '  <- %{http_code} after %{time_total}s\n' \
    'http://127.0.0.1:8080/upstream/sleep?ms=1000'
@ sleep 0.2
$ grep -v poll /tmp/ch04-trace.txt
$ kill %1
@ wait
