# Chapter 4: a two-second sleep on a timer, a greeting meanwhile, and the trace's waits.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml
@ cargo build -p ch04-scheduler
$ cargo run -p ch04-scheduler -- --upstream 127.0.0.1:8080 --trace 2>/tmp/ch04-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s -o /dev/null -w 'sleep: %{http_code} after %{time_total}s\n' \
    'http://127.0.0.1:8080/sleep?ms=2000' &
$ sleep 0.2; curl -s -w 'hello after %{time_total}s\n' http://127.0.0.1:8080/hello
@ wait %2
$ cat /tmp/ch04-trace.txt
$ kill %1
@ wait
