# Chapter 5 as its own upstream: the fetch as a chain, one link a turn.
# inputs: chapters/05-promises shared/src shared/Cargo.toml
@ cargo build -p ch05-promises
$ cargo run -p ch05-promises -- --upstream 127.0.0.1:8080 --trace 2>/tmp/ch05-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w '  <- %{http_code} after %{time_total}s\n' \
    'http://127.0.0.1:8080/upstream/sleep?ms=1000'
@ sleep 0.2
# expect: token 3 writable
# expect: waiting on 5 fds, timeout Some(0ns)
# expect: fd 8: read
$ sed -n '/connecting/,/fd 8: read/p' /tmp/ch05-trace.txt
# expect: token 3 readable
# expect: fd 6: sent
$ sed -n '/fd 8: sent/,/fd 6: sent/p' /tmp/ch05-trace.txt
$ kill %1
@ wait
