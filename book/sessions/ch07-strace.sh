# The system calls of 200 requests on one connection, counted by strace.
# inputs: chapters/07-epoll shared/src shared/Cargo.toml book/sessions/ch07-idle-script.sh
# timeout: 120
@ cargo build --release -p ch07-epoll
# /tmp/idle.py, as the page writes it (ch07-idle-script).
@ sed -n '/^\$ cat/,/^EOF$/{s/^\$ //;p}' book/sessions/ch07-idle-script.sh | bash
$ cargo run --release -p ch07-epoll -- --port 8090 &
@ book/tools/wait-for-port.sh 8090
$ strace -f -c -e trace=epoll_ctl,epoll_wait,recvfrom,sendto -o /tmp/calls.txt -p $! &
@ sleep 1
$ python3 /tmp/idle.py 8090 0
$ kill %2; sleep 1; cat /tmp/calls.txt
$ kill %1
@ wait
