# SIGTERM while an idle keep-alive client waits and a slow reader downloads 20 MiB.
# inputs: chapters/03-event-loop shared/src shared/Cargo.toml
@ cargo build -p ch03-event-loop
$ mkdir -p /tmp/site && head -c 20M /dev/zero > /tmp/site/big.bin
$ cargo run -p ch03-event-loop -- --root /tmp/site --trace 2>/tmp/ch03-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ exec 3<>/dev/tcp/127.0.0.1/8080; printf 'GET /hello HTTP/1.1\r\nHost: x\r\n\r\n' >&3
$ curl -sS http://127.0.0.1:8080/files/big.bin | (sleep 3; wc -c) &
$ sleep 0.5; kill -TERM %1; curl -sS http://127.0.0.1:8080/hello
$ wait %1; echo "exit status $?"
$ wait; grep -v -e poll -e writable /tmp/ch03-trace.txt
