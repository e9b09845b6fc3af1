"""A student's chapter 1 server in plain Python 3: blocking, one client at a time, one
request per connection. It calls itself `Server: my-server` and has a student's bugs:
    cargo run -p suite -- --command 'python3 tests/student/server.py' --chapter 1
"""
import http.client, mimetypes, os, socket, sys, time, urllib.parse

USAGE = ("usage: server.py [--host H] [--port N] [--root DIR] [--upstream HOST:PORT]\n"
         "                 [--fs-delay-ms N] [--trace] [--help]")
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           411: "Length Required", 413: "Content Too Large", 431: "Header Too Large",
           501: "Not Implemented", 502: "Bad Gateway", 504: "Gateway Timeout"}
ROUTES = {"/": "GET", "/hello": "GET", "/sleep": "GET", "/stats": "GET", "/echo": "POST"}
served = 0


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    opts = {"--host": "127.0.0.1", "--port": "8080", "--upstream": "", "--fs-delay-ms": "0",
            "--root": os.path.join(here, "..", "..", "shared", "site")}
    while argv:
        flag = argv.pop(0)
        if flag == "--help":
            print(USAGE)
            sys.exit(0)
        if flag == "--trace":
            continue  # nothing to trace: it blocks in one place at a time
        if flag not in opts or not argv:
            refuse(f"unknown flag {flag}, or no value after it")
        opts[flag] = argv.pop(0)
    if not (opts["--port"].isdigit() and opts["--fs-delay-ms"].isdigit()):
        refuse("--port and --fs-delay-ms take a number")
    return opts


def refuse(why):
    print(f"server.py: {why}\n{USAGE}", file=sys.stderr)
    sys.exit(2)  # what the contract says a bad command line ends with


def answer(status, body=b"", kind="text/plain", extra=""):
    head = f"HTTP/1.1 {status} {REASONS[status]}\r\nServer: my-server\r\nConnection: close\r\n"
    head += f"Content-Length: {len(body)}\r\n" + (f"Content-Type: {kind}\r\n" if body else "")
    return (head + extra + "\r\n").encode(), body


def files(name, opts):
    if ".." in name.split("/") or "\0" in name or name.startswith("/"):
        return answer(404, b"not found\n")
    if name == "" or name.endswith("/"):
        name += "index.html"
    path = os.path.join(opts["--root"], name)
    if not os.path.isfile(path):
        return answer(404, b"not found\n")
    time.sleep(int(opts["--fs-delay-ms"]) / 1000)
    with open(path, "rb") as f:
        return answer(200, f.read(), mimetypes.guess_type(path)[0] or "application/octet-stream")


def upstream(path, opts):
    if not opts["--upstream"]:
        return answer(404, b"no --upstream\n")
    host, _, port = opts["--upstream"].rpartition(":")
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("GET", path)
        reply = conn.getresponse()
        if reply.status not in REASONS:
            return answer(502, b"bad upstream\n")
        return answer(reply.status, reply.read(), reply.getheader("Content-Type", "text/plain"))
    except socket.timeout:
        return answer(504, b"upstream too slow\n")
    except (OSError, http.client.HTTPException):
        return answer(502, b"bad upstream\n")


def route(method, target, body, opts):
    parts = urllib.parse.urlsplit(target)  # also takes the absolute form, http://host/path
    path, query = parts.path, parts.query
    for prefix, handler in [("/files/", files), ("/upstream/", upstream)]:
        if path.startswith(prefix):
            if method != "GET":
                return answer(405, extra="Allow: GET, HEAD\r\n")
            rest = urllib.parse.unquote(path[len(prefix):]) if prefix == "/files/" else path[9:]
            return handler(rest, opts)
    if path not in ROUTES:
        return answer(404, b"not found\n")
    if method != ROUTES[path]:
        return answer(405, extra=f"Allow: {'POST' if path == '/echo' else 'GET, HEAD'}\r\n")
    if path == "/":
        links = " ".join(f'<a href="{r}">{r}</a>' for r in
                         ["/hello", "/sleep?ms=100", "/files/", "/echo", "/upstream/", "/stats"])
        return answer(200, f"<h1>my server</h1>{links}\n".encode(), "text/html")
    if path == "/hello":
        return answer(200, b"Hello, world!\n")
    if path == "/sleep":
        ms = dict(urllib.parse.parse_qsl(query)).get("ms", "")
        if not ms.isdigit() or int(ms) > 10000:
            return answer(400, b"ms must be 0..=10000\n")
        time.sleep(int(ms) / 1000)
        return answer(200, f"slept {int(ms)} ms\n".encode())
    if path == "/stats":
        return answer(200, f"connections_open 1\nrequests_served {served}\nloop_turns 0\n"
                           "timers_pending 0\njobs_queued 0\n".encode())
    return answer(200, body, "application/octet-stream")  # POST /echo


def serve(conn, opts):
    global served
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > 8192:
            return conn.sendall(b"".join(answer(431, b"head too large\n")))
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split(" ")
    headers = dict(line.lower().split(":", 1) for line in lines[1:] if ":" in line)
    if len(words) != 3 or not words[2].startswith("HTTP/1.") or \
            (words[2] == "HTTP/1.1" and "host" not in headers):
        return conn.sendall(b"".join(answer(400, b"bad request\n")))
    method, target = words[0], words[1]
    if method not in ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        return conn.sendall(b"".join(answer(501, b"unknown method\n")))
    if method == "POST" and target.partition("?")[0] == "/echo":
        length = headers.get("content-length", "").strip()
        if not length.isdigit():
            return conn.sendall(b"".join(answer(411, b"Content-Length required\n")))
        if int(length) > 1024 * 1024:
            return conn.sendall(b"".join(answer(413, b"too large\n")))
        while len(body) < int(length):
            chunk = conn.recv(65536)
            if not chunk:
                return
            body += chunk
    served += 1
    head, payload = route("GET" if method == "HEAD" else method, target, body, opts)
    conn.sendall(head + (b"" if method == "HEAD" else payload))


def main():
    opts = parse_args(sys.argv[1:])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((opts["--host"], int(opts["--port"])))
    except OSError as error:
        sys.exit(f"server.py: cannot listen: {error}")
    listener.listen()
    host, port = listener.getsockname()[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                serve(conn, opts)
            except OSError:
                pass  # the client left: on to the next one


if __name__ == "__main__":
    main()
