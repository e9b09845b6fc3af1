# Chapter 5: a sleep as a chain of promises; the trace's last lines.
# inputs: chapters/05-promises shared/src shared/Cargo.toml
@ cargo build -p ch05-promises
$ cargo run -p ch05-promises -- --upstream 127.0.0.1:8080 --trace 2>/tmp/ch05-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s -o /dev/null -w 'sleep: %{http_code} after %{time_total}s\n' \
    'http://127.0.0.1:8080/sleep?ms=2000' &
$ sleep 0.2; curl -s -w 'hello after %{time_total}s\n' http://127.0.0.1:8080/hello
@ wait %2
# expect: timer fired
# expect: timeout Some(0ns)
# expect: fd 6: sent
$ grep -B4 'fd 6: sent' /tmp/ch05-trace.txt
$ kill %1
@ wait
