# Chapter 6's trace of one file on a slow disk: the worker waits, the loop polls.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch06-thread-pool
$ cargo run -p ch06-thread-pool -- --fs-delay-ms 1000 --trace 2>/tmp/ch06-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s -o /dev/null -w 'file: %{http_code} after %{time_total}s\n' \
    http://127.0.0.1:8080/files/index.html
@ sleep 0.2
$ cat /tmp/ch06-trace.txt
$ ps -T -p $!
$ kill %1
@ wait
