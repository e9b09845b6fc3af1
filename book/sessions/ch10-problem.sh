# Chapter 9 with one loop, under load: the system calls it makes, counted by strace, and
# how many that is per 100 requests. strace lets go once every client has closed, so that
# their closes are always counted.
# inputs: chapters/09-multicore shared/src shared/Cargo.toml
# inputs: book/tools/src/bin/load book/tools/Cargo.toml tests/src/response.rs
# timeout: 300
@ cargo build --release -p ch09-multicore
@ cargo build --release -p book-tools --bin load
$ cargo run --release -p ch09-multicore -- --threads 1 &
@ book/tools/wait-for-port.sh 8080
$ strace -f -c -o /tmp/calls.txt -p $(jobs -p %1) &
@ sleep 1
$ cargo run --release -p book-tools --bin load -- --connections 50 --duration 3 \
    http://127.0.0.1:8080/hello | grep '^requests ' | tee /tmp/requests.txt
$ sleep 1; kill %2; wait %2; cat /tmp/calls.txt
# range: 150..250 {} system calls per 100 requests
$ awk '$1 == "requests" { requests = $2 } $NF == "total" \
    { printf "%.1f system calls per 100 requests\n", 100 * $4 / requests }' \
    /tmp/requests.txt /tmp/calls.txt
$ kill %1
@ wait
