# Three downloads of a 200 MiB file at once, and the most memory chapter 6 ever held.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml
# timeout: 300
@ cargo build -p ch06-thread-pool
$ mkdir -p /tmp/site && head -c 200M /dev/zero > /tmp/site/big.bin
$ cargo run -p ch06-thread-pool -- --root /tmp/site &
@ book/tools/wait-for-port.sh 8080
$ (for i in 1 2 3; do curl -s -o /dev/null \
    -w "download $i: %{http_code}, %{size_download} bytes\n" \
    http://127.0.0.1:8080/files/big.bin & done; wait)
$ grep VmHWM /proc/$!/status
$ kill %1
@ wait
