# SIGTERM while a sleep is in flight.
# inputs: chapters/08-async shared/src shared/Cargo.toml
@ cargo build -p ch08-async
$ cargo run -p ch08-async &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w " (after %{time_total}s)\n" "http://127.0.0.1:8080/sleep?ms=2000" &
$ sleep 0.5; kill -TERM %1
@ wait
