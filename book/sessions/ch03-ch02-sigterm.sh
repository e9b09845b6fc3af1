# Chapter 2 and SIGTERM in the middle of a slow download: the process ends on the spot.
# inputs: chapters/02-poll shared/src shared/Cargo.toml
@ cargo build -p ch02-poll
$ mkdir -p /tmp/site && head -c 20M /dev/zero > /tmp/site/big.bin
$ cargo run -p ch02-poll -- --root /tmp/site &
@ book/tools/wait-for-port.sh 8080
$ curl -sS http://127.0.0.1:8080/files/big.bin | (sleep 3; wc -c) &
$ sleep 0.5; kill -TERM %1; wait %1; echo "exit status $?"
@ wait
