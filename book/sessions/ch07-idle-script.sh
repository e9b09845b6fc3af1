# The client of chapter 7's experiments: N idle connections, then 200 timed requests.
$ cat > /tmp/idle.py <<'EOF'
# Opens N idle connections that never send a byte, then times 200 keep-alive
# GET /hello requests, one after another, on one more connection.
import socket, sys, time

port, idle = int(sys.argv[1]), int(sys.argv[2])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(idle)]
busy = socket.create_connection(("127.0.0.1", port))
start = time.perf_counter()
for _ in range(200):
    busy.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
    answer = b""
    while not answer.endswith(b"Hello, world!\n"):
        answer += busy.recv(4096)
each = (time.perf_counter() - start) / 200
print(f"{idle} idle connections: {each * 1000:.3f} ms per /hello")
EOF
