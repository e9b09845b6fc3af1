# Chapter 10 with one loop, under load: the system calls it makes, counted by strace, and
# how many calls to io_uring_enter that is per 100 requests; with 50 connections, then 5.
# strace lets go once every client has closed, so that their closes are always counted.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml
# inputs: book/tools/src/bin/load book/tools/Cargo.toml tests/src/response.rs
# timeout: 300
@ cargo build --release -p ch10-io-uring
@ cargo build --release -p book-tools --bin load
$ cargo run --release -p ch10-io-uring -- --threads 1 &
@ book/tools/wait-for-port.sh 8080
$ strace -f -c -o /tmp/calls.txt -p $(jobs -p %1) &
@ sleep 1
$ cargo run --release -p book-tools --bin load -- --connections 50 --duration 3 \
    http://127.0.0.1:8080/hello | grep '^requests ' | tee /tmp/requests.txt
$ sleep 1; kill %2; wait %2; cat /tmp/calls.txt
# range: 1..20 {} io_uring_enter calls per 100 requests
$ awk '$1 == "requests" { requests = $2 } $NF == "io_uring_enter" \
    { printf "%.1f io_uring_enter calls per 100 requests\n", 100 * $4 / requests }' \
    /tmp/requests.txt /tmp/calls.txt
$ strace -f -c -o /tmp/calls.txt -p $(jobs -p %1) &
@ sleep 1
$ cargo run --release -p book-tools --bin load -- --connections 5 --duration 3 \
    http://127.0.0.1:8080/hello | grep '^requests ' | tee /tmp/requests.txt
$ sleep 1; kill %2; wait %2; cat /tmp/calls.txt
# range: 20..200 {} io_uring_enter calls per 100 requests
$ awk '$1 == "requests" { requests = $2 } $NF == "io_uring_enter" \
    { printf "%.1f io_uring_enter calls per 100 requests\n", 100 * $4 / requests }' \
    /tmp/requests.txt /tmp/calls.txt
$ kill %1
@ wait
