# HTTP/1.0 gets keep-alive only if it asks.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml
@ cargo build -p ch03-event-loop
$ cargo run -p ch03-event-loop -- --trace 2>/tmp/ch03-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ exec 3<>/dev/tcp/127.0.0.1/8080
$ printf 'GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'\
'GET /hello HTTP/1.0\r\n\r\nGET /hello HTTP/1.0\r\n\r\n' >&3; cat <&3
@ sleep 0.2
$ grep -E ': read|sent' /tmp/ch03-trace.txt
$ kill %1
@ wait
