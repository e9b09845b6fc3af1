# SIGTERM to chapter 10's two loops while a sleep is in flight on one: a newcomer is refused.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml
# timeout: 300
@ cargo build -p ch10-io-uring
$ cargo run -p ch10-io-uring -- --threads 2 &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w " (after %{time_total}s)\n" "http://127.0.0.1:8080/sleep?ms=2000" &
$ sleep 0.5; kill -TERM %1
$ sleep 0.5; curl -sS http://127.0.0.1:8080/hello
@ wait
