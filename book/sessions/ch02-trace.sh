# Chapter 2's --trace: an idle client, a curl served meanwhile, and the idle client leaving.
# inputs: chapters/02-poll shared/src shared/Cargo.toml
@ cargo build -p ch02-poll
& cargo run -p ch02-poll -- --trace
@ book/tools/wait-for-port.sh 8080
$ exec 3<>/dev/tcp/127.0.0.1/8080
@ sleep 0.2
$ curl -s http://127.0.0.1:8080/hello
@ sleep 0.2
$ exec 3<&-
@ sleep 0.2
