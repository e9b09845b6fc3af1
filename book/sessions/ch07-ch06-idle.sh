# Chapter 6 beside ten thousand idle connections: every request pays for all of them.
# inputs: chapters/06-thread-pool shared/src shared/Cargo.toml book/sessions/ch07-idle-script.sh
# timeout: 300
@ cargo build --release -p ch06-thread-pool
# /tmp/idle.py, as the page writes it (ch07-idle-script).
@ sed -n '/^\$ cat/,/^EOF$/{s/^\$ //;p}' book/sessions/ch07-idle-script.sh | bash
$ ulimit -n 20000
$ cargo run --release -p ch06-thread-pool -- --port 8090 &
@ book/tools/wait-for-port.sh 8090
$ python3 /tmp/idle.py 8090 0
$ python3 /tmp/idle.py 8090 10000
$ kill %1
@ wait
