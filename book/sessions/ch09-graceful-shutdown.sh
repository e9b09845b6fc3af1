# SIGTERM to two loops while a sleep is in flight on one of them.
# inputs: chapters/09-multicore shared/src shared/Cargo.toml
@ cargo build -p ch09-multicore
$ cargo run -p ch09-multicore -- --threads 2 &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w " (after %{time_total}s)\n" "http://127.0.0.1:8080/sleep?ms=2000" &
$ sleep 0.5; kill -TERM %1
@ wait
