# Chapter 5 refuses a file over 64 MiB.
# inputs: chapters/05-promises shared/src shared/Cargo.toml
# timeout: 60
@ cargo build -p ch05-promises
$ mkdir -p /tmp/site && head -c 200M /dev/zero > /tmp/site/big.bin
$ cargo run -p ch05-promises -- --root /tmp/site &
@ book/tools/wait-for-port.sh 8080
$ curl -s -w '  <- %{http_code}\n' http://127.0.0.1:8080/files/big.bin
$ kill %1
@ wait
