//! The listening socket.
//!
//! `std::net::TcpListener::bind` is fine for a toy, but it hides two choices real servers
//! make on purpose, so we make them here with `socket2`, visibly:
//!
//! - `SO_REUSEADDR`: restart the server at once, even while old connections to the port
//!   still sit in `TIME_WAIT`. Without it a quick restart fails with "address in use".
//! - an explicit backlog: how many finished handshakes the kernel queues for us while we
//!   are busy. std picks 128; a server that is meant to take thousands of clients asks for
//!   more (nginx uses 511, Redis 511; Linux caps it at `net.core.somaxconn`).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::process::exit;

use socket2::{Domain, Protocol, Socket, Type};

use crate::args::Config;

/// How many connections the kernel may queue before we `accept` them.
pub const BACKLOG: i32 = 1024;

/// Binds `host:port`. A non-blocking listener is what `poll`-based chapters want: `accept`
/// then answers `WouldBlock` instead of waiting when nobody is there.
pub fn bind(host: &str, port: u16, nonblocking: bool) -> io::Result<TcpListener> {
    bind_with(host, port, |socket| socket.set_nonblocking(nonblocking))
}

/// [`bind`], with a chance to set options on the socket first: some must be set before
/// `bind` (chapter 9's `SO_REUSEPORT`, which lets several listeners share one port).
pub fn bind_with(
    host: &str, port: u16, options: impl FnOnce(&Socket) -> io::Result<()>,
) -> io::Result<TcpListener> {
    let address: SocketAddr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "host has no address"))?;
    let socket = Socket::new(Domain::for_address(address), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    options(&socket)?;
    socket.bind(&address.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Binds as the config says and prints the contract's first line (see [`announce`]).
/// A port in use is a one-line error and exit status 1, not a panic.
pub fn listen(config: &Config, nonblocking: bool) -> TcpListener {
    match bind(&config.host, config.port, nonblocking) {
        Ok(listener) => {
            announce(config, listener.local_addr().map_or(config.port, |address| address.port()));
            listener
        }
        Err(error) => {
            crate::log!(
                "{}: cannot listen on {}:{}: {error}",
                config.chapter,
                config.host,
                config.port
            );
            exit(1);
        }
    }
}

/// Stops `listener` taking clients, from any thread, before its loop gets to close it: a
/// graceful shutdown's first step where several loops each have a listener (chapter 9 on)
/// and one thread hears the signal. `shutdown(2)` of a listening socket makes Linux refuse
/// new connections at once (its queue of finished handshakes is reset: they were never
/// accepted). Elsewhere it may do nothing; then each loop stops when it closes its own.
pub fn stop_accepting(listener: &TcpListener) {
    let _ = socket2::SockRef::from(listener).shutdown(std::net::Shutdown::Read);
}

/// Prints `listening on http://HOST:PORT` with the real port (`--port 0` picks a free one).
/// The server serves from now on, so from now on memory a burst leaves behind is given
/// back to the system once the server is idle again ([`crate::memory`]).
pub fn announce(config: &Config, port: u16) {
    crate::memory::give_back_when_idle();
    let mut stdout = io::stdout();
    // Tests and scripts wait for this line, so it must not sit in a buffer.
    let _ = writeln!(stdout, "listening on {}", url(&config.host, port));
    let _ = stdout.flush();
}

/// `http://HOST:PORT`, an IPv6 address in brackets (`http://[::1]:8080`), as URLs write it
/// (RFC 3986): `http://::1:8080` is no URL, since its port cannot be told from its address.
pub fn url(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    }
}

/// Is this `accept` error "out of file descriptors"? `EMFILE`: this process has used up
/// its limit (`ulimit -n`); `ENFILE`: the whole system has. Neither is the client's fault
/// nor fatal: the server must stop accepting for a moment, and every chapter from 2 on
/// does (see [`accept_all`]).
pub fn is_out_of_descriptors(error: &io::Error) -> bool {
    use nix::libc::{EMFILE, ENFILE};
    matches!(error.raw_os_error(), Some(EMFILE | ENFILE))
}

// ANCHOR: accept_all
/// Accepts every client waiting on a non-blocking `listener`, until `accept` says
/// `WouldBlock` (chapter 2's loop, the same in every chapter that polls), and hands each to
/// `serve`, non-blocking too. Returns `false` when out of descriptors: the listener stays
/// "ready" while clients wait, so polling it again at once would spin at 100% CPU. Stop
/// watching it for a while.
pub fn accept_all(listener: &TcpListener, mut serve: impl FnMut(TcpStream, SocketAddr)) -> bool {
    loop {
        match listener.accept() {
            Ok((stream, peer)) => match stream.set_nonblocking(true) {
                Ok(()) => serve(stream, peer),
                Err(error) => crate::trace!("accept: {peer}: {error}"),
            },
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return true,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) if is_out_of_descriptors(&error) => {
                crate::log!("accept: {error}; pausing accepts");
                return false;
            }
            Err(error) => {
                // A client that connected and reset before we accepted it, and the like.
                crate::trace!("accept: {error}");
                return true;
            }
        }
    }
}
// ANCHOR_END: accept_all

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_brackets_ipv6_only() {
        assert_eq!(url("127.0.0.1", 8080), "http://127.0.0.1:8080");
        assert_eq!(url("localhost", 80), "http://localhost:80");
        assert_eq!(url("::1", 8080), "http://[::1]:8080");
    }

    #[test]
    fn accept_all_takes_every_waiting_client_then_stops() {
        let listener = bind("127.0.0.1", 0, true).expect("a listener");
        let address = listener.local_addr().expect("its address");
        let clients: Vec<_> = (0..3).map(|_| std::net::TcpStream::connect(address)).collect();
        let mut accepted = Vec::new();
        // The handshakes finish in the kernel: wait until all three are there to accept.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while accepted.len() < 3 && std::time::Instant::now() < deadline {
            assert!(accept_all(&listener, |stream, _| accepted.push(stream)));
        }
        assert_eq!(accepted.len(), 3, "{clients:?}");
        assert!(
            accepted.iter().all(|stream| {
                let mut byte = [0u8];
                let read = io::Read::read(&mut &*stream, &mut byte);
                matches!(read, Err(error) if error.kind() == io::ErrorKind::WouldBlock)
            }),
            "handed over non-blocking"
        );
    }

    #[test]
    fn binds_ipv6_loopback_given_either_form() {
        for form in ["::1", "[::1]"] {
            let args = ["--host", form, "--port", "0"].map(String::from);
            let config = Config::parse("ch00-test", &[], &args).unwrap().unwrap();
            match bind(&config.host, config.port, false) {
                Ok(listener) => assert!(listener.local_addr().unwrap().is_ipv6(), "{form}"),
                // A machine without IPv6 (some containers) has no `::1` to bind: nothing to see.
                Err(error) if error.kind() == io::ErrorKind::AddrNotAvailable => {}
                Err(error) if error.raw_os_error() == Some(nix::libc::EAFNOSUPPORT) => {}
                Err(error) => panic!("--host {form}: {error}"),
            }
        }
    }
}
