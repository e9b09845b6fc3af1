# Exercise 3 of chapter 9, answered by running it: four loops, first as the chapter has
# them (a listener each), then on one listener without EPOLLEXCLUSIVE and with it,
# counted by the kernel (each thread's context switches, by perf) and by the trace. The hidden steps make the answer's changes to chapter 9 (a
# reader makes them by hand) and put the files back however the session ends.
# inputs: chapters/09-multicore shared/src shared/Cargo.toml
# timeout: 900
@ cp chapters/09-multicore/src/main.rs /tmp/herd-main.rs
@ cp chapters/09-multicore/src/net.rs /tmp/herd-net.rs
@ cp chapters/09-multicore/src/reactor.rs /tmp/herd-reactor.rs
@ trap 'cp /tmp/herd-main.rs chapters/09-multicore/src/main.rs; cp /tmp/herd-net.rs chapters/09-multicore/src/net.rs; cp /tmp/herd-reactor.rs chapters/09-multicore/src/reactor.rs' EXIT INT TERM
$ cat > /tmp/conns.py <<'EOF'
# Makes N connections, one after another, each asking GET /hello and reading the answer.
import socket, sys

port, count = int(sys.argv[1]), int(sys.argv[2])
for _ in range(count):
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while connection.recv(4096):
            pass
EOF
@ cargo build --release -p ch09-multicore
$ cargo run --release -p ch09-multicore -- --port 8097 --threads 4 --trace 2>/tmp/herd.txt &
@ book/tools/wait-for-port.sh 8097
$ perf stat --per-thread -x, -e context-switches -o /tmp/switches.txt -p $! &
@ sleep 1
# quiet
$ python3 /tmp/conns.py 8097 1000
$ curl -s http://127.0.0.1:8097/stats | grep thread
$ kill -INT %2; wait %2; awk -F, '/loop-|multicore/ { print $1 ": " $2 }' /tmp/switches.txt
$ kill %1
@ wait
@ git apply <<'EOF'
diff --git a/chapters/09-multicore/src/main.rs b/chapters/09-multicore/src/main.rs
index 1f1d423..d2d12dc 100644
--- a/chapters/09-multicore/src/main.rs
+++ b/chapters/09-multicore/src/main.rs
@@ -105,10 +105,11 @@ fn main() {
-    // One listener per loop, all on the same port. The first picks it (`--port 0`).
+    // Exercise 3: one listener, a copy of its descriptor for every loop's epoll.
     let first = bind(&config.host, config.port).unwrap_or_else(|error| fail("listen", error));
     let port = first.local_addr().map_or(config.port, |address| address.port());
-    let mut listeners = vec![first];
+    let mut listeners = Vec::new();
     for _ in 1..config.threads {
-        listeners.push(bind(&config.host, port).unwrap_or_else(|error| fail("listen", error)));
+        listeners.push(first.try_clone().unwrap_or_else(|error| fail("listen", error)));
     }
+    listeners.insert(0, first);
     // ANCHOR_END: listeners
     let doorbells = (0..config.threads).map(|_| SelfPipe::new().map(Arc::new));
     let doorbells =
@@ -238,7 +239,4 @@ impl Server {
 /// kernel hands each new connection to one of them (by a hash of its addresses).
 fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
-    listener::bind_with(host, port, |socket| {
-        socket.set_reuse_port(true)?;
-        socket.set_nonblocking(true)
-    })
+    listener::bind_with(host, port, |socket| socket.set_nonblocking(true))
 }
@@ -248,7 +248,13 @@ fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
 /// The listener's task: accepts clients, a task for each, until the server shuts down.
 async fn accept(listener: Async<TcpListener>, server: Rc<Server>) {
     loop {
-        let accept = listener.read_with(TcpListener::accept);
+        let accept = listener.read_with(|listener| {
+            let accepted = listener.accept();
+            if accepted.as_ref().is_err_and(|error| error.kind() == io::ErrorKind::WouldBlock) {
+                trace!("accept: would block");
+            }
+            accepted
+        });
         let accepted = match race(accept, server.shutdown.wait()).await {
             Winner::First(accepted) => accepted,
             Winner::Second(()) => break, // shutting down
EOF
$ git diff chapters/09-multicore
@ cargo build --release -p ch09-multicore
$ cargo run --release -p ch09-multicore -- --port 8097 --threads 4 --trace 2>/tmp/herd.txt &
@ book/tools/wait-for-port.sh 8097
$ perf stat --per-thread -x, -e context-switches -o /tmp/switches.txt -p $! &
@ sleep 1
# quiet
$ python3 /tmp/conns.py 8097 1000
$ curl -s http://127.0.0.1:8097/stats | grep thread
# range: 1000..100000 loop-*: {}
$ kill -INT %2; wait %2; awk -F, '/loop-|multicore/ { print $1 ": " $2 }' /tmp/switches.txt
# range: 1000..4000 {}
$ grep -c 'accept: would block' /tmp/herd.txt
$ kill %1
@ wait
@ git apply <<'EOF'
--- a/chapters/09-multicore/src/reactor.rs
+++ b/chapters/09-multicore/src/reactor.rs
@@ -112,6 +112,16 @@
         })
     }
 
+    /// Exercise 3: watches `fd` for `flags` only, and with `EPOLLEXCLUSIVE`, which epoll
+    /// takes only when a descriptor is added: so out first, and in again.
+    pub fn exclusive(self, fd: BorrowedFd, flags: EpollFlags) -> io::Result<()> {
+        with(|reactor| {
+            reactor.epoll.delete(fd)?;
+            let flags = flags | EpollFlags::EPOLLEXCLUSIVE;
+            Ok(reactor.epoll.add(fd, EpollEvent::new(flags, self.0))?)
+        })
+    }
+
     /// Stops watching `fd`: call it before the socket closes (`Drop` of its owner).
     pub fn deregister(self, fd: BorrowedFd) {
         let _ = with(|reactor| {
--- a/chapters/09-multicore/src/net.rs
+++ b/chapters/09-multicore/src/net.rs
@@ -38,6 +38,11 @@
         &self.inner
     }
 
+    /// Exercise 3: see `Source::exclusive`.
+    pub fn exclusive(&self, flags: nix::sys::epoll::EpollFlags) -> io::Result<()> {
+        self.source.exclusive(self.inner.as_fd(), flags)
+    }
+
     /// Runs `call` on the descriptor until it does not say `EAGAIN`, waiting until the
     /// descriptor is readable before each try: `accept`, `read`, draining a pipe.
     pub async fn read_with<R>(&self, mut call: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
--- a/chapters/09-multicore/src/main.rs
+++ b/chapters/09-multicore/src/main.rs
@@ -31,6 +31,7 @@
 use std::thread;
 use std::time::{Duration, Instant};
 
+use nix::sys::epoll::EpollFlags;
 use shared::app::{Context, Stats};
 use shared::args::{Config, Extra};
 use shared::http::{date, Response};
@@ -156,7 +157,11 @@
         loops,
         index,
     });
-    spawn(accept(watch(listener), server.clone()));
+    // Exercise 3: wake one of the loops that wait for the listener, not every one.
+    let listener = watch(listener);
+    let flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLET;
+    listener.exclusive(flags).unwrap_or_else(|error| fail("add the listener exclusively", error));
+    spawn(accept(listener, server.clone()));
     if let Some(signals) = signals {
         spawn(broadcast_signal(watch(signals), server.clone()));
     }
EOF
@ cargo build --release -p ch09-multicore
$ grep -A3 'Exercise 3: wake' chapters/09-multicore/src/main.rs
$ cargo run --release -p ch09-multicore -- --port 8097 --threads 4
$ sed -i 's/EPOLLIN | EpollFlags::EPOLLRDHUP/EPOLLIN/' chapters/09-multicore/src/main.rs
@ cargo build --release -p ch09-multicore
$ cargo run --release -p ch09-multicore -- --port 8097 --threads 4 --trace 2>/tmp/herd.txt &
@ book/tools/wait-for-port.sh 8097
$ perf stat --per-thread -x, -e context-switches -o /tmp/switches.txt -p $! &
@ sleep 1
# quiet
$ python3 /tmp/conns.py 8097 1000
$ curl -s http://127.0.0.1:8097/stats | grep thread
$ kill -INT %2; wait %2; awk -F, '/loop-|multicore/ { print $1 ": " $2 }' /tmp/switches.txt
$ grep -c 'accept: would block' /tmp/herd.txt
$ kill %1
@ wait
