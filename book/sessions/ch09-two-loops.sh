# Two loops: who accepted whom (from the trace), /stats, and the threads.
# inputs: chapters/09-multicore shared/src shared/Cargo.toml
@ cargo build -p ch09-multicore
$ cargo run -p ch09-multicore -- --threads 2 --trace 2>/tmp/trace.txt &
@ book/tools/wait-for-port.sh 8080
# quiet
$ for i in 1 2 3 4 5 6; do curl -s -o /dev/null http://127.0.0.1:8080/hello; done
$ curl -s http://127.0.0.1:8080/stats
$ grep 'accept: client' /tmp/trace.txt
$ ps -T -p $!
$ kill %1
@ wait
