# Chapter 4 with a two-second send timeout: a client that reads nothing is cut off.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch04-scheduler
$ mkdir -p /tmp/site && head -c 20M /dev/zero > /tmp/site/big.bin
$ cargo run -p ch04-scheduler -- --send-timeout 2 --root /tmp/site &
@ book/tools/wait-for-port.sh 8080
$ curl -sS http://127.0.0.1:8080/files/big.bin | (sleep 5; wc -c)
$ kill %1
@ wait
