# Chapter 6 on a slow disk: the file takes its time on a worker, /hello none.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch06-thread-pool
$ cargo run -p ch06-thread-pool -- --fs-delay-ms 2000 &
@ book/tools/wait-for-port.sh 8080
$ curl -s -o /dev/null -w 'file: %{http_code} after %{time_total}s\n' \
    http://127.0.0.1:8080/files/index.html &
$ sleep 0.2; curl -s -w 'hello after %{time_total}s\n' http://127.0.0.1:8080/hello
@ wait %2
$ kill %1
@ wait
