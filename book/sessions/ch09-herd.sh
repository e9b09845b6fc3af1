# Exercise 3 of chapter 9, answered by running it: four loops, first as the chapter has
# them (a listener each), then on one listener without EPOLLEXCLUSIVE and with it,
# counted by the kernel (each thread's context switches, by perf) and by the trace. The hidden steps make the answer's changes to chapter 9 (a
# reader makes them by hand) and put the files back however the session ends.
# inputs: chapters/09-multicore shared/src shared/Cargo.toml
# timeout: 900
@ cp chapters/09-multicore/src/main.rs /tmp/herd-main.rs
@ cp chapters/09-multicore/src/net.rs /tmp/herd-net.rs
@ cp chapters/09-multicore/src/reactor.rs /tmp/herd-reactor.rs
@ cp chapters/09-multicore/src/reactor/epoll.rs /tmp/herd-epoll.rs
@ trap 'cp /tmp/herd-main.rs chapters/09-multicore/src/main.rs; cp /tmp/herd-net.rs chapters/09-multicore/src/net.rs; cp /tmp/herd-reactor.rs chapters/09-multicore/src/reactor.rs; cp /tmp/herd-epoll.rs chapters/09-multicore/src/reactor/epoll.rs' EXIT INT TERM
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
index 28edff4..eb800fe 100644
--- a/chapters/09-multicore/src/main.rs
+++ b/chapters/09-multicore/src/main.rs
@@ -105,7 +105,7 @@ fn main() {
     if config.port != 0 {
         drop(listener::bind(&config.host, config.port, true).unwrap_or_else(|e| fail("listen", e)));
     }
-    // One listener per loop, all on the same port. The first picks it (`--port 0`).
+    // Exercise 3: one listener, a copy of its descriptor for every loop's epoll.
     let first = bind(&config.host, config.port).unwrap_or_else(|error| fail("listen", error));
     let port = first.local_addr().map_or(config.port, |address| address.port());
     let mut listeners = vec![first];
@@ -246,8 +246,6 @@ impl Server {
 /// FreeBSD (12 on) calls it `SO_REUSEPORT_LB`; macOS has no such thing (see [`another`]).
 fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
     listener::bind_with(host, port, |socket| {
-        #[cfg(target_os = "linux")]
-        socket.set_reuse_port(true)?;
         #[cfg(target_os = "freebsd")]
         socket.set_reuse_port_lb(true)?;
         socket.set_nonblocking(true)
@@ -259,8 +257,8 @@ fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
 /// every connection, the loops share the first listener instead (each a descriptor of it):
 /// a new client wakes every loop, and one accepts it. `--threads` still counts loops.
 #[cfg(any(target_os = "linux", target_os = "freebsd"))]
-fn another(_first: &TcpListener, host: &str, port: u16) -> io::Result<TcpListener> {
-    bind(host, port)
+fn another(first: &TcpListener, _host: &str, _port: u16) -> io::Result<TcpListener> {
+    first.try_clone() // Exercise 3: as on macOS, on Linux too
 }
 
 #[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
@@ -273,7 +271,13 @@ fn another(first: &TcpListener, _host: &str, _port: u16) -> io::Result<TcpListen
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
         // The shutdown first, so that once it has begun not one more client is taken in.
         let accepted = match race(server.shutdown.wait(), accept).await {
             Winner::Second(accepted) => accepted,
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
diff --git a/chapters/09-multicore/src/main.rs b/chapters/09-multicore/src/main.rs
index eb800fe..84115e3 100644
--- a/chapters/09-multicore/src/main.rs
+++ b/chapters/09-multicore/src/main.rs
@@ -32,6 +32,7 @@ use std::sync::{Arc, Barrier};
 use std::thread;
 use std::time::{Duration, Instant};
 
+use nix::sys::epoll::EpollFlags;
 use shared::app::{Context, Stats};
 use shared::args::{Config, Extra};
 use shared::http::{date, Response};
@@ -162,7 +163,11 @@ fn run_loop(
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
diff --git a/chapters/09-multicore/src/net.rs b/chapters/09-multicore/src/net.rs
index 2bd785f..59a7fc3 100644
--- a/chapters/09-multicore/src/net.rs
+++ b/chapters/09-multicore/src/net.rs
@@ -39,6 +39,11 @@ impl<T: AsFd> Async<T> {
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
diff --git a/chapters/09-multicore/src/reactor.rs b/chapters/09-multicore/src/reactor.rs
index fa7a514..9ba452e 100644
--- a/chapters/09-multicore/src/reactor.rs
+++ b/chapters/09-multicore/src/reactor.rs
@@ -132,6 +132,12 @@ impl Source {
         })
     }
 
+    /// Exercise 3: watches `fd` for `flags` only, with `EPOLLEXCLUSIVE` (epoll's, so Linux
+    /// only): see `Poller::exclusive`.
+    pub fn exclusive(self, fd: BorrowedFd, flags: nix::sys::epoll::EpollFlags) -> io::Result<()> {
+        with(|reactor| reactor.poller.exclusive(fd, self.0, flags))
+    }
+
     /// Stops watching `fd`: call it before the socket closes (`Drop` of its owner).
     pub fn deregister(self, fd: BorrowedFd) {
         let _ = with(|reactor| {
diff --git a/chapters/09-multicore/src/reactor/epoll.rs b/chapters/09-multicore/src/reactor/epoll.rs
index d3ecd89..f6e561e 100644
--- a/chapters/09-multicore/src/reactor/epoll.rs
+++ b/chapters/09-multicore/src/reactor/epoll.rs
@@ -36,6 +36,14 @@ impl Poller {
         Ok(self.epoll.add(fd, EpollEvent::new(flags, key))?)
     }
 
+    /// Exercise 3: watches `fd` for `flags` only, and with `EPOLLEXCLUSIVE`, which epoll
+    /// takes only when a descriptor is added: so out first, and in again.
+    pub fn exclusive(&self, fd: BorrowedFd, key: u64, flags: EpollFlags) -> io::Result<()> {
+        self.epoll.delete(fd)?;
+        let flags = flags | EpollFlags::EPOLLEXCLUSIVE;
+        Ok(self.epoll.add(fd, EpollEvent::new(flags, key))?)
+    }
+
     pub fn delete(&self, fd: BorrowedFd) -> io::Result<()> {
         Ok(self.epoll.delete(fd)?)
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
