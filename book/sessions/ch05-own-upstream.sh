# Chapter 5 as its own upstream: the fetch as a chain, one link a turn.
# inputs: chapters/05-promises shared/src shared/Cargo.toml
@ cargo build -p ch05-promises
$ cargo run -p ch05-promises -- --upstream 127.0.0.1:8080 --trace 2>/tmp/ch05-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w '  <- %{http_code} after %{time_total}s\n' \
    'http://127.0.0.1:8080/upstream/sleep?ms=1000'
@ sleep 0.2
$ sed -n '/connecting/,/waiting on 5/p' /tmp/ch05-trace.txt
$ sed -n '/fd 8: response sent/,/fd 6: response sent/p' /tmp/ch05-trace.txt
$ kill %1
@ wait
