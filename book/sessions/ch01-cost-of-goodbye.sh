# Exercise 3 of chapter 1, answered by running it: a client that keeps its connection open
# after its answer holds the next client up to the lingering close's one second. The hidden
# step waits until the first client has its answer (it says so by a file) before curl runs.
# inputs: chapters/01-blocking shared/src shared/Cargo.toml
@ cargo build -p ch01-blocking
& cargo run -p ch01-blocking -- --trace
@ book/tools/wait-for-port.sh 8080
@ rm -f /tmp/goodbye-answered
$ python3 -c 'import socket, time; s = socket.create_connection(("127.0.0.1", 8080)); \
    s.sendall(b"GET /hello HTTP/1.0\r\n\r\n"); s.recv(4096); open("/tmp/goodbye-answered", "w"); \
    time.sleep(3)' &
@ until [ -e /tmp/goodbye-answered ]; do sleep 0.01; done
# range: 0.5..1.2 (waited {} s)
$ curl -s -w ' (waited %{time_total} s)\n' http://127.0.0.1:8080/hello
@ wait %2
