# Three fetches through an upstream limit of one.
# inputs: chapters/08-async shared/src shared/Cargo.toml
@ cargo build -p ch08-async
$ cargo run -p ch08-async -- --port 8081 &
@ book/tools/wait-for-port.sh 8081
$ cargo run -p ch08-async -- --upstream 127.0.0.1:8081 --upstream-limit 1 &
@ book/tools/wait-for-port.sh 8080
$ (for i in 1 2 3; do curl -s -w " after %{time_total}s\n" \
    "http://127.0.0.1:8080/upstream/sleep?ms=1000" & done; wait)
$ kill %1 %2
@ wait
