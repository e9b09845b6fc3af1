# A 200 MiB download from chapter 11: the system calls it makes (strace), and the entries
# it submits, counted by opcode (io_uring's tracepoint, recorded by perf); then chapter
# 10's entries for the same download.
# inputs: chapters/10-io-uring chapters/11-multishot shared/src shared/Cargo.toml
# timeout: 300
@ cargo build --release -p ch10-io-uring -p ch11-multishot
$ mkdir -p /tmp/site && head -c 200M /dev/zero > /tmp/site/big.bin
$ cargo run --release -p ch11-multishot -- --threads 1 --root /tmp/site &
@ book/tools/wait-for-port.sh 8080
$ server=$!
$ strace -f -c -o /tmp/calls.txt -p $server &
$ perf record -q -e io_uring:io_uring_submit_req -o /tmp/ring.data -p $server &
@ sleep 1
$ curl -s -o /dev/null -w "%{http_code}, %{size_download} bytes\n" \
    http://127.0.0.1:8080/files/big.bin
$ kill -INT %3; wait %3; kill %2; wait %2; cat /tmp/calls.txt
# expect: opcode SPLICE
# absent: opcode READ
$ perf script -i /tmp/ring.data -F trace 2>/dev/null | grep -o 'opcode \w*' | sort | uniq -c
$ kill %1; wait %1
$ cargo run --release -p ch10-io-uring -- --threads 1 --root /tmp/site &
@ book/tools/wait-for-port.sh 8080
$ perf record -q -e io_uring:io_uring_submit_req -o /tmp/ring.data -p $! &
@ sleep 1
$ curl -s -o /dev/null -w "%{http_code}, %{size_download} bytes\n" \
    http://127.0.0.1:8080/files/big.bin
$ kill -INT %2; wait %2
$ perf script -i /tmp/ring.data -F trace 2>/dev/null | grep -o 'opcode \w*' | sort | uniq -c
$ kill %1
@ wait
