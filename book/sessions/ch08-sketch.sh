# The sketch of chapter 8: three sleeps pipelined on one connection, answered one by one as
# each is over, and another client's /hello answered at once while they wait.
# inputs: chapters/08-async/examples/ch08-sketch.rs chapters/08-async/Cargo.toml shared/src shared/Cargo.toml
@ cargo build -p ch08-async --example ch08-sketch
$ cargo run -p ch08-async --example ch08-sketch &
@ book/tools/wait-for-port.sh 8080
$ cat > /tmp/three-sleeps.py <<'PY'
import socket, time
client = socket.create_connection(("127.0.0.1", 8080))
start = time.time()
client.sendall(b"GET /sleep?ms=500 HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
for number in 1, 2, 3:
    body = client.recv(4096).decode().splitlines()[-1]
    print(f"answer {number}, {body}, after {time.time() - start:.1f} s", flush=True)
PY
$ python3 /tmp/three-sleeps.py &
# range: 0..0.2 ({} s)
$ sleep 0.2; curl -s -w " (%{time_total} s)\n" http://127.0.0.1:8080/hello
@ wait %2
$ kill %1
@ wait
