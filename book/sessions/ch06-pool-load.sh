# Eight files at once on four workers and a slow disk; /stats and /hello meanwhile.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch06-thread-pool
$ cargo run -p ch06-thread-pool -- --fs-delay-ms 1000 &
@ book/tools/wait-for-port.sh 8080
$ for i in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null \
    -w "file $i: %{http_code} after %{time_total}s\n" http://127.0.0.1:8080/files/notes.txt & \
  done; sleep 0.3; curl -s http://127.0.0.1:8080/stats
$ curl -s -w 'hello after %{time_total}s\n' http://127.0.0.1:8080/hello
# Until the eight files are in.
@ wait %2 %3 %4 %5 %6 %7 %8 %9
$ kill %1
@ wait
