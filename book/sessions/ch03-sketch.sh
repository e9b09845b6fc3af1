# The sketch of chapter 3: two pages on one connection, then SIGTERM during a slow
# download, which still arrives whole, and the sketch exits with status 0.
# inputs: chapters/03-event-loop/examples/ch03-sketch.rs chapters/03-event-loop/Cargo.toml shared/src shared/Cargo.toml
@ cargo build -p ch03-event-loop --example ch03-sketch
$ mkdir -p /tmp/site && head -c 20M /dev/zero > /tmp/site/big.bin
$ cargo run -p ch03-event-loop --example ch03-sketch -- --root /tmp/site &
@ book/tools/wait-for-port.sh 8080
# expect: * Re-using existing connection*
$ curl -sv http://127.0.0.1:8080/hello http://127.0.0.1:8080/hello 2>&1 \
    | grep -E '^\* Re-using|Hello'
$ curl -sS http://127.0.0.1:8080/files/big.bin | (sleep 3; wc -c) &
# expect: exit status 0
# expect: 20971520
$ sleep 0.5; kill -TERM %1; wait %1; echo "exit status $?"; wait
