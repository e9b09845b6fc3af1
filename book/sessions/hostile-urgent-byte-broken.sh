# The same client against chapter 10 broken on purpose, as the page says: its receive after
# readiness waits in the ring again (no MSG_DONTWAIT). The hidden steps make that change
# (the reader makes it by hand) and put the file back however the session ends.
# inputs: chapters/10-io-uring shared/src shared/Cargo.toml
# timeout: 300
@ cp chapters/10-io-uring/src/net.rs /tmp/hostile-net.rs
@ trap 'cp /tmp/hostile-net.rs chapters/10-io-uring/src/net.rs' EXIT INT TERM
@ sed -i 's/room, libc::MSG_DONTWAIT)/room, 0)/' chapters/10-io-uring/src/net.rs
@ ! grep -q 'room, libc::MSG_DONTWAIT' chapters/10-io-uring/src/net.rs
@ cargo build -p ch10-io-uring
$ cargo run -p ch10-io-uring &
@ book/tools/wait-for-port.sh 8080
$ python3 -c 'import socket, select, time; s = socket.create_connection(("127.0.0.1", 8080)); \
    start = time.time(); s.sendall(b"GET /sleep?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n"); \
    time.sleep(0.1); s.send(b"!", socket.MSG_OOB); answered = select.select([s], [], [], 3)[0]; \
    print(s.recv(100).split(b"\r\n")[0].decode() if answered else "no answer", \
    "after %.1f s" % (time.time() - start))'
$ kill %1
@ wait
