# Chapter 7 beside ten thousand idle connections, with poll and then with epoll.
# inputs: chapters/07-epoll shared/src shared/Cargo.toml book/sessions/ch07-idle-script.sh
# timeout: 300
@ cargo build --release -p ch07-epoll
# /tmp/idle.py, as the page writes it (ch07-idle-script).
@ sed -n '/^\$ cat/,/^EOF$/{s/^\$ //;p}' book/sessions/ch07-idle-script.sh | bash
$ ulimit -n 20000
$ cargo run --release -p ch07-epoll -- --port 8090 --backend poll &
@ book/tools/wait-for-port.sh 8090
$ python3 /tmp/idle.py 8090 10000
$ curl -s http://127.0.0.1:8090/stats | tail -1
$ kill %1
@ wait
$ cargo run --release -p ch07-epoll -- --port 8090 &
@ book/tools/wait-for-port.sh 8090
$ python3 /tmp/idle.py 8090 10000
$ kill %1
@ wait
