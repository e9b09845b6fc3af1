# Chapter 3 as its own upstream: the blocking fetch waits for itself until it gives up.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch03-event-loop
$ cargo run -p ch03-event-loop -- --upstream 127.0.0.1:8080 &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w '  <- %{http_code} after %{time_total}s\n' http://127.0.0.1:8080/upstream/hello
$ kill %1
@ wait
