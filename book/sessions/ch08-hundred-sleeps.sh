# A hundred clients waiting on one thread, and /stats meanwhile.
# inputs: chapters/08-async shared/src shared/Cargo.toml
@ cargo build -p ch08-async
$ cargo run -p ch08-async &
@ book/tools/wait-for-port.sh 8080
$ for i in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:8080/sleep?ms=1000" & done; \
    sleep 0.5; curl -s http://127.0.0.1:8080/stats
$ kill %1
@ wait
