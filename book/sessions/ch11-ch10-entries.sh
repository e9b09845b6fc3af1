# Chapter 10 in the kernel's own words: io_uring's tracepoints, recorded by perf, while one
# connection asks for /hello three times and closes. Each entry submitted, and each
# completion, by its user_data.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml
@ cargo build -p ch10-io-uring
$ perf record -q -e io_uring:io_uring_submit_req,io_uring:io_uring_complete \
    -o /tmp/ring.data -- cargo run -p ch10-io-uring -- --threads 1 &
@ book/tools/wait-for-port.sh 8080
$ curl -s http://127.0.0.1:8080/hello http://127.0.0.1:8080/hello http://127.0.0.1:8080/hello
@ sleep 0.5
$ kill %1; wait %1
$ perf script -i /tmp/ring.data -F trace 2>/dev/null | sed -E \
    -e 's/.*user_data (\w+), opcode (\w+).*/submit    \1  \2/' \
    -e 's/.*user_data (\w+), result (\S+), cflags (\w+).*/completed \1  res \2  flags \3/'
