# Chapter 5 as its own upstream, relaying a sleep longer than the upstream timeout.
# inputs: chapters/05-promises shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch05-promises
$ cargo run -p ch05-promises -- --upstream 127.0.0.1:8080 &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w '  <- %{http_code} after %{time_total}s\n' \
    'http://127.0.0.1:8080/upstream/sleep?ms=7000'
$ kill %1
@ wait
