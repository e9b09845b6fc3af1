# A client that half-closes before the answer to its /sleep: the answer comes anyway.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml
@ cargo build -p ch04-scheduler
$ cargo run -p ch04-scheduler &
@ book/tools/wait-for-port.sh 8080
$ python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", 8080)); \
    s.sendall(b"GET /sleep?ms=1000 HTTP/1.1\r\nHost: x\r\n\r\n"); s.shutdown(socket.SHUT_WR); \
    print(s.makefile(newline="").read(), end="")'
$ kill %1
@ wait
