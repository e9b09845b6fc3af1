# The sketch of chapter 2: a /hello answered at once while an idle client holds a connection.
# inputs: chapters/02-poll/examples/ch02-sketch.rs chapters/02-poll/Cargo.toml shared/src shared/Cargo.toml
@ cargo build -p ch02-poll --example ch02-sketch
$ cargo run -p ch02-poll --example ch02-sketch &
@ book/tools/wait-for-port.sh 8080
# quiet
$ exec 3<>/dev/tcp/127.0.0.1/8080
@ sleep 0.2
# range: 0..0.5 ({} s)
$ curl -s -w " (%{time_total} s)\n" http://127.0.0.1:8080/hello
# quiet
$ exec 3<&-
$ kill %1
@ wait
