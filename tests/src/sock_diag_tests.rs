use super::*;
use crate::kernel::tcp_state::{FIN_WAIT1, FIN_WAIT2, LAST_ACK, LISTEN};

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// TCP_ESTABLISHED in `tcp_states.h` (the suite itself only tells the other states apart).
const ESTABLISHED: u8 = 1;

/// Looks up the server's end of `client` until `wanted` holds of it, or a second passes.
fn server_end_until(
    server: SocketAddr, client: &TcpStream, wanted: impl Fn(Option<Found>) -> bool,
) -> Option<Found> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let found = lookup(server, client.local_addr().unwrap()).expect("sock_diag answers");
        if wanted(found) || Instant::now() >= deadline {
            return found;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// A connection from its start to its close, as the kernel shows its server end: queued
/// for `accept`, bytes unread, read, closed; and the listener the lookup falls back to.
#[test]
fn follows_a_connection_from_accept_to_close() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(server).unwrap();
    let Ok(first) = lookup(server, client.local_addr().unwrap()) else {
        crate::harness::print_uncaptured(
            "SKIPPED: sock_diag::follows_a_connection_from_accept_to_close: no sock_diag here",
        );
        return;
    };
    // Not accepted yet, the connection is already established in the kernel.
    assert_eq!(first, Some(Found { state: ESTABLISHED, receive_queue: 0 }));

    client.write_all(b"hello").unwrap();
    let unread = server_end_until(server, &client, |found| {
        found.is_some_and(|found| found.receive_queue == 5)
    });
    assert_eq!(unread, Some(Found { state: ESTABLISHED, receive_queue: 5 }));

    let (mut accepted, _) = listener.accept().unwrap();
    let mut five = [0u8; 5];
    accepted.read_exact(&mut five).unwrap();
    let read = server_end_until(server, &client, |found| {
        found.is_some_and(|found| found.receive_queue == 0)
    });
    assert_eq!(read, Some(Found { state: ESTABLISHED, receive_queue: 0 }));

    accepted.shutdown(Shutdown::Write).unwrap();
    let closed = server_end_until(server, &client, |found| {
        found.is_some_and(|found| found.state != ESTABLISHED)
    });
    let state = closed.map(|found| found.state);
    assert!(matches!(state, Some(FIN_WAIT1 | FIN_WAIT2)), "{closed:?}");

    // No connection from this port: the lookup falls back to the listener.
    let stranger = SocketAddr::from(([127, 0, 0, 1], 9));
    let fallback = lookup(server, stranger).unwrap();
    assert_eq!(fallback.map(|found| found.state), Some(LISTEN));
    drop((accepted, client, listener));
    assert_eq!(lookup(server, stranger).unwrap(), None, "nothing left on that port");
}

#[test]
fn reads_the_kernels_answers() {
    // An error message: the header, then a negative errno.
    let mut error = vec![0u8; 36];
    error[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
    error[16..20].copy_from_slice(&(-2i32).to_ne_bytes());
    assert_eq!(parse(&error).unwrap(), None, "ENOENT: no such socket");
    error[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
    assert_eq!(parse(&error).unwrap_err().raw_os_error(), Some(1), "EPERM");

    let mut socket = vec![0u8; 16 + 72];
    socket[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    socket[STATE_AT] = LAST_ACK;
    socket[RECEIVE_QUEUE_AT..RECEIVE_QUEUE_AT + 4].copy_from_slice(&17u32.to_ne_bytes());
    assert_eq!(parse(&socket).unwrap(), Some(Found { state: LAST_ACK, receive_queue: 17 }));
    assert!(parse(&socket[..40]).is_err(), "cut short");
}
