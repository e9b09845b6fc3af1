# Chapter 4 with short timeouts: an idle keep-alive client, and half a head (slowloris).
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch04-scheduler
$ mkdir -p /tmp/site && head -c 20M /dev/zero > /tmp/site/big.bin
$ cargo run -p ch04-scheduler -- --keep-alive-timeout 2 --header-timeout 3 \
    --send-timeout 2 --root /tmp/site --trace 2>/tmp/ch04-trace.txt &
@ book/tools/wait-for-port.sh 8080
$ exec 3<>/dev/tcp/127.0.0.1/8080; printf 'GET /hello HTTP/1.1\r\nHost: x\r\n\r\n' >&3; cat <&3
$ exec 3<>/dev/tcp/127.0.0.1/8080; printf 'GET /hello HTTP/1.1\r\nHo' >&3; cat <&3
$ grep -e 'fd 6' /tmp/ch04-trace.txt
$ kill %1
@ wait
