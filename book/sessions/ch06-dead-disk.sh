# A worker stuck on a dead disk at shutdown: the server leaves without it.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch06-thread-pool
$ cargo run -p ch06-thread-pool -- --fs-delay-ms 60000 &
@ book/tools/wait-for-port.sh 8080
$ curl -s -o /dev/null -w 'file: %{http_code} after %{time_total}s\n' \
    http://127.0.0.1:8080/files/index.html &
$ sleep 0.5; kill -INT %1
$ wait
