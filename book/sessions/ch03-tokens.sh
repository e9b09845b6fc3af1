# Three clients one after another: the same descriptor, a new token each.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml
@ cargo build -p ch03-event-loop
$ cargo run -p ch03-event-loop -- --trace 2>/tmp/ch03-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ for i in 1 2 3; do curl -s http://127.0.0.1:8080/hello; done
@ sleep 0.2
$ grep -E 'accept: client|: read|closed' /tmp/ch03-trace.txt
$ kill %1
@ wait
