# The sketch of chapter 4: a /sleep held for its timer, a /hello answered meanwhile, half a
# request head answered 408 when its header timeout runs out; and the loop's waits.
# inputs: chapters/04-scheduler/examples/ch04-sketch.rs chapters/04-scheduler/Cargo.toml shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch04-scheduler --example ch04-sketch
$ cargo run -p ch04-scheduler --example ch04-sketch -- --header-timeout 2 \
    --trace 2>/tmp/ch04-sketch-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ curl -s -o /dev/null -w 'sleep: %{http_code} after %{time_total}s\n' \
    'http://127.0.0.1:8080/sleep?ms=500' &
# range: 0..0.2 hello after {}s
$ sleep 0.1; curl -s -w 'hello after %{time_total}s\n' http://127.0.0.1:8080/hello
@ wait %2
# expect: HTTP/1.1 408 Request Timeout
$ exec 3<>/dev/tcp/127.0.0.1/8080; printf 'GET /hello HTTP/1.1\r\nHo' >&3; head -1 <&3
# expect: timeout None ms
$ cat /tmp/ch04-sketch-trace.txt
$ kill %1
@ wait
