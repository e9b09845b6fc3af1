//! A look at the kernel's socket queues, so a probe can wait for "the server has read my
//! request" instead of sleeping and hoping.
//!
//! Many probes need an order of events: client A must be *in* the server (its request
//! read, the server now sleeping or blocked on it) before client B asks for `/hello`.
//! Otherwise a blocking chapter might serve B first and look better than it is. The
//! server cannot tell us when it has read A's bytes, but the kernel can: it keeps, for
//! every TCP socket, a receive queue of the bytes that arrived and that the program has
//! not read yet. When the server's end of A's connection shows an empty receive queue,
//! the server has read everything A sent.
//!
//! The same list shows the state of the server's end: once the server has closed it, it
//! is in FIN-WAIT-1 even while the data it wrote before the close still waits for a client
//! that reads nothing. That is how a probe sees a send timeout fire.
//!
//! On Linux, a question about one connection is asked of the kernel by the connection's
//! addresses ([`crate::sock_diag`]), and a question about a port's listeners with `ss -l`
//! (iproute2), which filters inside the kernel; where netlink or `ss` cannot be used, we
//! list the port's sockets with `ss` or read `/proc/net/tcp` ourselves. (A listing is slow
//! on a machine that has just run a benchmark or a flood: it walks every one of up to
//! 100 000 closed connections still in TIME_WAIT, tens of milliseconds a question, so a
//! probe asks a handful of times, never once per byte.)
//! macOS and the BSDs have neither: there `netstat` lists the connections with their
//! queues, and `netstat -L` the listening sockets' queues of connections not yet accepted.
//! Where nothing lists the socket (a server on another machine) the waits return `None` at
//! once, and the probes rely on timing alone; where the system lists no sockets at all,
//! a probe that needs this order of events skips, saying so ([`NO_SOCKET_QUEUES`]).

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// One line of `/proc/net/tcp`, the parts we need.
struct Socket {
    local_port: u16,
    remote_port: u16,
    listening: bool,
    /// For a connection: bytes received but not yet read by the program. For a listening
    /// socket: connections that finished their handshake but were not yet `accept`ed.
    receive_queue: u64,
    /// The program has closed (or shut the sending side of) this end of the connection:
    /// its FIN is sent or queued (FIN-WAIT-1 while unsent data still waits ahead of it).
    closed_here: bool,
    /// A handshake not finished on our side (SYN-RECV): when a listening socket's queue is
    /// full, the kernel drops the client's last ACK and retries later, seconds later.
    half_open: bool,
}

/// The states of a connection whose local end has been closed: FIN-WAIT-1 and 2,
/// CLOSING, LAST-ACK (and CLOSE, on its way out), as `ss` names them.
const CLOSED_HERE: [&str; 5] = ["FIN-WAIT-1", "FIN-WAIT-2", "CLOSING", "LAST-ACK", "UNCONN"];

/// Linux's numbers for the TCP states we tell apart (`include/net/tcp_states.h`): what
/// `/proc/net/tcp` prints, in hex, and what [`crate::sock_diag`] answers.
pub(crate) mod tcp_state {
    pub const SYN_RECV: u8 = 3;
    pub const FIN_WAIT1: u8 = 4;
    pub const FIN_WAIT2: u8 = 5;
    pub const TIME_WAIT: u8 = 6;
    pub const CLOSE: u8 = 7;
    pub const LAST_ACK: u8 = 9;
    pub const LISTEN: u8 = 10;
    pub const CLOSING: u8 = 11;
    /// The same states as [`super::CLOSED_HERE`].
    pub const CLOSED_HERE: [u8; 5] = [FIN_WAIT1, FIN_WAIT2, CLOSE, LAST_ACK, CLOSING];
}

impl Socket {
    /// A socket as Linux numbers its state. `None` in TIME-WAIT: a closed connection that
    /// only happened to use the same ports.
    fn from_linux(
        local_port: u16, remote_port: u16, state: u8, receive_queue: u64,
    ) -> Option<Socket> {
        (state != tcp_state::TIME_WAIT).then_some(Socket {
            local_port,
            remote_port,
            listening: state == tcp_state::LISTEN,
            receive_queue,
            closed_here: tcp_state::CLOSED_HERE.contains(&state),
            half_open: state == tcp_state::SYN_RECV,
        })
    }
}

/// The line a probe skips with where this system lists no sockets (see [`can_list_sockets`]).
pub const NO_SOCKET_QUEUES: &str = "missing measurement on this system: the kernel's socket \
    queues (`ss`, Linux's /proc/net/tcp, or `netstat`), which show what the server has read";

/// Which of a port's sockets a question is about.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    /// Only the listening ones: the kernel then walks its small table of listeners alone.
    Listening,
    /// Its connections too: the kernel walks every connection it has, and after a flood
    /// that is tens of thousands closed ones in TIME-WAIT; a question of `ss` then costs
    /// tens of milliseconds of CPU.
    All,
}

/// The TCP sockets whose local port is `port` (only the listening ones if `which` says
/// so), from `ss`, else `/proc/net/tcp`, else `netstat` (macOS, the BSDs).
fn sockets_on(port: u16, which: Which) -> Option<Vec<Socket>> {
    static HAVE_SS: OnceLock<bool> = OnceLock::new();
    let mut sockets = None;
    if *HAVE_SS.get_or_init(|| Command::new("ss").arg("-V").output().is_ok()) {
        sockets = from_ss(port, which);
    }
    let mut sockets = sockets.or_else(|| from_proc(port)).or_else(|| from_netstat(port))?;
    if which == Which::Listening {
        sockets.retain(|socket| socket.listening);
    }
    Some(sockets)
}

/// Does this system list its sockets' queues at all? Asked once: a listener of our own,
/// with a client waiting in its queue, must be seen.
pub fn can_list_sockets() -> bool {
    static CAN: OnceLock<bool> = OnceLock::new();
    *CAN.get_or_init(|| {
        let Ok(listener) = std::net::TcpListener::bind("127.0.0.1:0") else { return false };
        let Ok(address) = listener.local_addr() else { return false };
        let _client = TcpStream::connect(address);
        wait_until_accepted(address, Duration::ZERO).is_some()
    })
}

/// `ss -tanH 'sport = :PORT'` prints one socket per line:
/// `ESTAB  0  0  127.0.0.1:41539  127.0.0.1:47180` (state, receive queue, send queue,
/// local address, peer address).
fn from_ss(port: u16, which: Which) -> Option<Vec<Socket>> {
    let states = if which == Which::Listening { "-tlnH" } else { "-tanH" };
    let output = Command::new("ss")
        .args([states, &format!("sport = :{port}")])
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    let port_of = |address: &str| address.rsplit_once(':')?.1.parse::<u16>().ok();
    let sockets = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let state = fields.next()?;
            let receive_queue = fields.next()?.parse().ok()?;
            let _send_queue = fields.next()?;
            let local_port = port_of(fields.next()?)?;
            let remote_port = port_of(fields.next()?).unwrap_or(0); // "*" when listening
            Some(Socket {
                local_port,
                remote_port,
                listening: state == "LISTEN",
                receive_queue,
                closed_here: CLOSED_HERE.contains(&state),
                half_open: state == "SYN-RECV",
            })
            .filter(|_| state != "TIME-WAIT")
        })
        .collect();
    Some(sockets)
}

/// The same from `/proc/net/tcp`. A busy machine can list a hundred thousand sockets
/// there, so lines are first checked for the port with a cheap text search, and only
/// those are parsed.
fn from_proc(port: u16) -> Option<Vec<Socket>> {
    let table = fs::read_to_string("/proc/net/tcp").ok()?;
    // "  0: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 ..." (all numbers in hex).
    let needle = format!(":{port:04X} ");
    let port_of = |address: &str| {
        let (_, port) = address.split_once(':')?;
        u16::from_str_radix(port, 16).ok()
    };
    let sockets = table
        .lines()
        .skip(1)
        .filter(|line| line.contains(&needle))
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let local_port = port_of(fields.next()?)?;
            let remote_port = port_of(fields.next()?)?;
            let state = u8::from_str_radix(fields.next()?, 16).ok()?;
            let (_, receive_queue) = fields.next()?.split_once(':')?;
            let receive_queue = u64::from_str_radix(receive_queue, 16).ok()?;
            Socket::from_linux(local_port, remote_port, state, receive_queue)
                .filter(|socket| socket.local_port == port)
        })
        .collect();
    Some(sockets)
}

/// `netstat -an -p tcp` (macOS and the BSDs) prints one connection per line, the port after
/// the address's last dot: `tcp4  0  0  127.0.0.1.8080  127.0.0.1.52345  ESTABLISHED`.
/// Its listening sockets show no queue there: `netstat -Lan -p tcp` gives it, as
/// `0/0/128  127.0.0.1.8080` (macOS; FreeBSD puts `tcp4` first): waiting to be accepted,
/// handshakes half done, and the most it may hold.
fn from_netstat(port: u16) -> Option<Vec<Socket>> {
    let netstat = |args: &[&str]| -> Option<String> {
        let output = Command::new("netstat").args(args).output().ok()?;
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let connections = netstat(&["-an", "-p", "tcp"])?;
    let listening = netstat(&["-Lan", "-p", "tcp"])?;
    Some(parse_netstat(&connections, &listening, port))
}

/// The sockets on `port` in [`from_netstat`]'s two lists.
fn parse_netstat(connections: &str, listening: &str, port: u16) -> Vec<Socket> {
    // "127.0.0.1.8080", "::1.8080", "*.8080": the port is after the last dot.
    let port_of = |address: &str| address.rsplit_once('.')?.1.parse::<u16>().ok();
    let mut sockets: Vec<Socket> = connections
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [proto, receive_queue, _, local, remote, state] = fields[..] else { return None };
            let socket = Socket {
                local_port: port_of(local)?,
                remote_port: port_of(remote).unwrap_or(0), // "*.*" when listening
                listening: false,
                receive_queue: receive_queue.parse().ok()?,
                closed_here: ["FIN_WAIT_1", "FIN_WAIT_2", "CLOSING", "LAST_ACK", "CLOSED"]
                    .contains(&state),
                half_open: state == "SYN_RCVD",
            };
            let wanted = proto.starts_with("tcp") && socket.local_port == port;
            (wanted && !["LISTEN", "TIME_WAIT"].contains(&state)).then_some(socket)
        })
        .collect();
    sockets.extend(listening.lines().filter_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let queues = fields.iter().find(|field| field.matches('/').count() == 2)?;
        let local_port = port_of(fields.last()?)?;
        let waiting = queues.split('/').next()?.parse().ok()?;
        (local_port == port).then_some(Socket {
            local_port,
            remote_port: 0,
            listening: true,
            receive_queue: waiting,
            closed_here: false,
            half_open: false,
        })
    }));
    sockets
}

/// Asks the kernel again and again (`look`) until it says yes, or `timeout` passes.
/// `look` answers `None` when the socket it looks for is not listed: then there is
/// nothing to wait for.
///
/// The answer, as the public waits below give it: `Some(true)`, it happened;
/// `Some(false)`, the kernel showed it had still not happened at the deadline; `None`, the
/// kernel cannot show us this socket (no `ss` and no `/proc`, or not listed), so we
/// cannot tell.
fn wait_for(timeout: Duration, look: impl Fn() -> Option<bool>) -> Option<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        match look()? {
            true => return Some(true),
            false if Instant::now() >= deadline => return Some(false),
            // The kernel offers no way to be told, so we look again shortly.
            false => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// What the kernel holds for the server's end of a client's connection.
enum ServerEnd {
    /// The connection, as the kernel lists it.
    Open(Socket),
    /// Gone (closed and let go, or in TIME-WAIT), while the server still listens.
    Gone,
    /// Not listed, nor a listener on its port: we cannot tell.
    Unknown,
}

/// The server's end of `client`'s connection. On Linux, looked up by its addresses
/// ([`crate::sock_diag`]: one probe of the kernel's table); where that cannot be asked,
/// found in the list of the port's sockets.
fn server_end(client: &TcpStream) -> ServerEnd {
    let (Ok(local), Ok(server)) = (client.local_addr(), client.peer_addr()) else {
        return ServerEnd::Unknown;
    };
    #[cfg(target_os = "linux")]
    match crate::sock_diag::lookup(server, local) {
        Ok(None) => return ServerEnd::Unknown,
        // No such connection: the lookup fell back to the listener.
        Ok(Some(found)) if found.state == tcp_state::LISTEN => return ServerEnd::Gone,
        Ok(Some(found)) => {
            let queue = u64::from(found.receive_queue);
            return match Socket::from_linux(server.port(), local.port(), found.state, queue) {
                Some(socket) => ServerEnd::Open(socket),
                None => ServerEnd::Gone, // in TIME-WAIT
            };
        }
        Err(_) => {} // no netlink here: ask as elsewhere
    }
    let Some(mut sockets) = sockets_on(server.port(), Which::All) else {
        return ServerEnd::Unknown;
    };
    let listening = sockets.iter().any(|socket| socket.listening);
    match sockets.iter().position(|socket| !socket.listening && socket.remote_port == local.port())
    {
        Some(at) => ServerEnd::Open(sockets.swap_remove(at)),
        None if listening => ServerEnd::Gone,
        None => ServerEnd::Unknown,
    }
}

/// Waits until the server has read everything `client` sent so far: its end of the
/// connection has an empty receive queue. `Some(true)` if that was seen, `Some(false)` if
/// the bytes were still unread at the deadline, `None` if the kernel cannot tell us.
pub fn wait_until_read(client: &TcpStream, timeout: Duration) -> Option<bool> {
    wait_until_unread_at_most(client, 0, timeout)
}

/// Waits until at most `unread` bytes of what `client` sent wait for the server in its
/// receive queue: with `unread` just under what was sent, until the server has begun to
/// read (a server may rightly stop reading a long pipeline while a request waits). As
/// [`wait_until_read`] otherwise.
pub fn wait_until_unread_at_most(
    client: &TcpStream, unread: u64, timeout: Duration,
) -> Option<bool> {
    wait_for(timeout, || match server_end(client) {
        ServerEnd::Open(socket) => Some(socket.receive_queue <= unread),
        ServerEnd::Gone | ServerEnd::Unknown => None,
    })
}

/// Waits until the server has accepted every connection made to `server` so far: the
/// queues of its listening sockets are empty (all of them: with `SO_REUSEPORT`, as in
/// chapter 9, each loop has its own). `Some(true)` if that was seen, `Some(false)` if
/// connections still waited at the deadline, `None` if the kernel cannot tell us.
pub fn wait_until_accepted(server: SocketAddr, timeout: Duration) -> Option<bool> {
    wait_for(timeout, || {
        let sockets = sockets_on(server.port(), Which::Listening)?;
        let mut listening = sockets.iter().filter(|socket| socket.listening).peekable();
        listening.peek()?;
        Some(listening.all(|socket| socket.receive_queue == 0))
    })
}

/// The connections to `server` that it has not accepted, for a message: how many wait,
/// handshake done, in its listening sockets' queues, and how many handshakes are still
/// half done (the queue was full). `None` if the kernel cannot tell us.
pub fn not_accepted(server: SocketAddr) -> Option<(u64, usize)> {
    let sockets = sockets_on(server.port(), Which::All)?;
    let queued = sockets.iter().filter(|socket| socket.listening).map(|s| s.receive_queue);
    Some((queued.sum(), sockets.iter().filter(|socket| socket.half_open).count()))
}

/// Waits until the server has closed its end of `client`'s connection: that end is in a
/// state that follows a close (FIN-WAIT-1 while the data it could not send still waits
/// ahead of the FIN), or gone (reset, or fully closed) while the server still listens.
/// Unlike a read on `client`, this sees the close *before* the client takes the data queued
/// ahead of it: a probe can watch a server give up on a client that reads nothing.
/// `Some(true)` if that was seen, `Some(false)` if the server's end was still open at the
/// deadline, `None` if the kernel cannot tell us.
pub fn wait_until_closed_by_server(client: &TcpStream, timeout: Duration) -> Option<bool> {
    wait_for(timeout, || match server_end(client) {
        ServerEnd::Open(socket) => Some(socket.closed_here),
        ServerEnd::Gone => Some(true),
        ServerEnd::Unknown => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::print_uncaptured;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn sees_accept_and_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(address).unwrap();
        let listed = |port| sockets_on(port, Which::All).is_some_and(|sockets| !sockets.is_empty());
        if !listed(address.port()) {
            print_uncaptured(
                "SKIPPED: kernel::sees_accept_and_read: neither `ss` nor /proc/net/tcp \
                 lists our sockets here",
            );
            return;
        }
        let short = Duration::from_millis(50);
        assert_eq!(wait_until_accepted(address, short), Some(false));
        assert_eq!(not_accepted(address), Some((1, 0)));
        let (mut server_end, _) = listener.accept().unwrap();
        assert_eq!(wait_until_accepted(address, Duration::from_secs(1)), Some(true));
        assert_eq!(not_accepted(address), Some((0, 0)));

        client.write_all(b"ping").unwrap();
        assert_eq!(wait_until_read(&client, short), Some(false));
        let mut buffer = [0u8; 4];
        std::io::Read::read_exact(&mut server_end, &mut buffer).unwrap();
        assert_eq!(wait_until_read(&client, Duration::from_secs(1)), Some(true));
    }

    #[test]
    fn waits_for_every_listener_of_a_shared_port() {
        // Chapter 9 has a listening socket per loop on one port (SO_REUSEPORT), and the
        // kernel hands each connection to one of them.
        let first = shared::listener::bind_with("127.0.0.1", 0, |s| s.set_reuse_port(true));
        let first = first.unwrap();
        let address = first.local_addr().unwrap();
        let second =
            shared::listener::bind_with("127.0.0.1", address.port(), |s| s.set_reuse_port(true));
        let second = second.unwrap();
        if not_accepted(address).is_none() {
            print_uncaptured(
                "SKIPPED: kernel::waits_for_every_listener_of_a_shared_port: neither `ss` nor \
                 /proc/net/tcp lists our sockets here",
            );
            return;
        }
        let drain = |listener: &TcpListener| {
            listener.set_nonblocking(true).unwrap();
            std::iter::from_fn(|| listener.accept().ok()).count()
        };
        // Each way round, whichever the kernel lists first: one queue empty, one not.
        let mut clients = Vec::new();
        for (drained, other) in [(&first, &second), (&second, &first)] {
            clients.extend((0..16).map(|_| TcpStream::connect(address).unwrap()));
            let left = 16 - drain(drained);
            if left > 0 {
                assert_eq!(wait_until_accepted(address, Duration::from_millis(50)), Some(false));
                assert_eq!(not_accepted(address), Some((left as u64, 0)));
            }
            assert_eq!(drain(other), left);
            assert_eq!(wait_until_accepted(address, Duration::from_secs(1)), Some(true));
        }
    }

    #[test]
    fn sees_a_close_before_the_data_ahead_of_it_is_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server_end, _) = listener.accept().unwrap();
        if wait_until_closed_by_server(&client, Duration::ZERO).is_none() {
            print_uncaptured(
                "SKIPPED: kernel::sees_a_close_before_the_data_ahead_of_it_is_read: neither \
                 `ss` nor /proc/net/tcp lists our sockets here",
            );
            return;
        }
        let short = Duration::from_millis(50);
        assert_eq!(wait_until_closed_by_server(&client, short), Some(false));
        // Data the client never reads, then the close behind it.
        server_end.write_all(&[0u8; 1000]).unwrap();
        drop(server_end);
        assert_eq!(wait_until_closed_by_server(&client, Duration::from_secs(1)), Some(true));
    }

    /// What `netstat` prints on macOS and on FreeBSD, as their manuals and our readers show
    /// it (this machine cannot run theirs); `sees_accept_and_read` runs the real thing there.
    #[test]
    fn reads_netstat_as_macos_and_freebsd_print_it() {
        let connections = "Active Internet connections (including servers)
Proto Recv-Q Send-Q  Local Address          Foreign Address        (state)
tcp4       0      0  127.0.0.1.8080         127.0.0.1.52345        ESTABLISHED
tcp4       4      0  127.0.0.1.8080         127.0.0.1.52346        ESTABLISHED
tcp4       0  65536  127.0.0.1.8080         127.0.0.1.52347        FIN_WAIT_1
tcp4       0      0  127.0.0.1.8080         127.0.0.1.52348        TIME_WAIT
tcp4       0      0  127.0.0.1.52345        127.0.0.1.8080         ESTABLISHED
tcp4       0      0  127.0.0.1.8080         *.*                    LISTEN
tcp6       0      0  ::1.8080               ::1.52349              SYN_RCVD
udp4       0      0  *.8080                 *.*
";
        let macos = "Current listen queue sizes (qlen/incqlen/maxqlen)
Listen         Local Address
3/0/1024       127.0.0.1.8080
0/0/128        *.22
";
        let freebsd = "Current listen queue sizes (qlen/incqlen/maxqlen)
Proto Listen                           Local Address
tcp4  3/0/1024                         127.0.0.1.8080
tcp4  0/0/128                          *.22
";
        for listening in [macos, freebsd] {
            let sockets = parse_netstat(connections, listening, 8080);
            let seen: Vec<_> = sockets
                .iter()
                .map(|s| (s.remote_port, s.listening, s.receive_queue, s.closed_here, s.half_open))
                .collect();
            assert_eq!(
                seen,
                [
                    (52345, false, 0, false, false),
                    (52346, false, 4, false, false),
                    (52347, false, 0, true, false),
                    (52349, false, 0, false, true),
                    (0, true, 3, false, false),
                ]
            );
        }
    }

    /// Linux always can (/proc/net/tcp); elsewhere it is said, once, when it cannot.
    #[test]
    fn this_system_lists_its_sockets() {
        if cfg!(target_os = "linux") {
            assert!(can_list_sockets(), "neither `ss` nor /proc/net/tcp lists our listener");
        } else if !can_list_sockets() {
            let line =
                format!("SKIPPED: kernel::this_system_lists_its_sockets: {NO_SOCKET_QUEUES}");
            print_uncaptured(&line);
        }
    }

    #[test]
    fn ss_and_proc_agree() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let _client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let listening = |sockets: Option<Vec<Socket>>| -> Option<u64> {
            let socket = sockets?.into_iter().find(|socket| socket.listening)?;
            Some(socket.receive_queue)
        };
        let (Some(ss), Some(proc)) =
            (listening(from_ss(port, Which::All)), listening(from_proc(port)))
        else {
            print_uncaptured(
                "SKIPPED: kernel::ss_and_proc_agree: `ss` or /proc/net/tcp is missing \
                 here, so there is nothing to compare",
            );
            return;
        };
        // One connection is waiting to be accepted.
        assert_eq!((ss, proc), (1, 1));
    }
}
