//! One TCP connection looked up in Linux's kernel by its four addresses (`man 7
//! sock_diag`), for [`crate::kernel`]: its state and its receive queue, the figures `ss`
//! prints, without walking every socket the machine holds. `ss` asks for them all and
//! filters, and after a flood that is tens of thousands of closed connections still in
//! TIME-WAIT: tens of milliseconds of CPU a question, asked hundreds of times a run. A
//! lookup by the addresses is one probe of the kernel's hash table of connections.
//!
//! The question is a netlink message of fixed layout (`struct nlmsghdr` and `struct
//! inet_diag_req_v2` of `<linux/inet_diag.h>`), written here byte by byte, so no `unsafe`
//! is needed: numbers in the machine's order, ports and addresses in the network's.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::socket::{
    self, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType,
};

/// What the kernel holds for one end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its TCP state, as Linux numbers them ([`crate::kernel::tcp_state`]).
    pub state: u8,
    /// Bytes received that the program has not read (for a listener: connections not
    /// yet accepted), as `ss` shows them under Recv-Q.
    pub receive_queue: u32,
}

/// Linux's `AF_INET` and `AF_INET6`, as the one byte the question has for them.
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
/// `SOCK_DIAG_BY_FAMILY`: the message type of a question and of its answer.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLMSG_ERROR`: the answer's type when there is no such socket (or another failure).
const NLMSG_ERROR: u16 = 2;
/// `NLM_F_REQUEST` alone: one socket, not the dump of all that `NLM_F_DUMP` asks for.
const NLM_F_REQUEST: u16 = 1;
/// The header and the question: `struct nlmsghdr` (16 bytes), `struct inet_diag_req_v2` (56).
const REQUEST_LENGTH: u32 = 16 + 56;
/// Where the state and the receive queue sit in an answer: after the 16-byte header,
/// `struct inet_diag_msg` begins with family and state, and after the 48-byte socket id
/// and `expires` comes `rqueue`.
const STATE_AT: usize = 16 + 1;
const RECEIVE_QUEUE_AT: usize = 16 + 4 + 48 + 4;

/// The socket whose own address is `local` and whose peer is `remote`. The kernel's
/// lookup falls back to a listener on `local` when there is no such connection: that
/// answer says `LISTEN`. `Ok(None)`: neither exists. `Err`: the kernel would not be
/// asked this way here (no netlink, or forbidden); ask `ss`.
pub fn lookup(local: SocketAddr, remote: SocketAddr) -> io::Result<Option<Found>> {
    let family = match (local.ip(), remote.ip()) {
        (IpAddr::V4(_), IpAddr::V4(_)) => AF_INET,
        (IpAddr::V6(_), IpAddr::V6(_)) => AF_INET6,
        _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "mixed address families")),
    };
    let mut request = Vec::with_capacity(REQUEST_LENGTH as usize);
    // struct nlmsghdr: length, type, flags, sequence number, port id (0: the kernel).
    request.extend(REQUEST_LENGTH.to_ne_bytes());
    request.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    request.extend(NLM_F_REQUEST.to_ne_bytes());
    request.extend(1u32.to_ne_bytes());
    request.extend(0u32.to_ne_bytes());
    // struct inet_diag_req_v2: family, protocol (IPPROTO_TCP), no extensions, padding,
    // every state; then struct inet_diag_sockid: the ports, the addresses, no interface,
    // and INET_DIAG_NOCOOKIE (all ones: find it by its addresses alone).
    request.extend([family, 6, 0, 0]);
    request.extend(u32::MAX.to_ne_bytes());
    request.extend(local.port().to_be_bytes());
    request.extend(remote.port().to_be_bytes());
    request.extend(address_bytes(local.ip()));
    request.extend(address_bytes(remote.ip()));
    request.extend(0u32.to_ne_bytes());
    request.extend([0xff; 8]);

    let netlink = socket::socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )?;
    socket::sendto(netlink.as_raw_fd(), &request, &NetlinkAddr::new(0, 0), MsgFlags::empty())?;
    // The kernel answers while it takes the question, so the answer is already there.
    let mut answer = [0u8; 512];
    let length = socket::recv(netlink.as_raw_fd(), &mut answer, MsgFlags::MSG_DONTWAIT)?;
    parse(&answer[..length])
}

/// An address as `struct inet_diag_sockid` holds it: 16 bytes, an IPv4 one in the first 4.
fn address_bytes(address: IpAddr) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    match address {
        IpAddr::V4(v4) => bytes[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => bytes.copy_from_slice(&v6.octets()),
    }
    bytes
}

/// Reads the kernel's answer: the socket, or an error message (`ENOENT`: no such socket).
pub(crate) fn parse(answer: &[u8]) -> io::Result<Option<Found>> {
    match u16::from_ne_bytes(field(answer, 4)?) {
        NLMSG_ERROR => match -i32::from_ne_bytes(field(answer, 16)?) {
            errno if errno == Errno::ENOENT as i32 => Ok(None),
            errno => Err(io::Error::from_raw_os_error(errno)),
        },
        SOCK_DIAG_BY_FAMILY => Ok(Some(Found {
            state: u8::from_ne_bytes(field(answer, STATE_AT)?),
            receive_queue: u32::from_ne_bytes(field(answer, RECEIVE_QUEUE_AT)?),
        })),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a sock_diag answer of type {other}"),
        )),
    }
}

/// The `N` bytes of `answer` from `at` on.
fn field<const N: usize>(answer: &[u8], at: usize) -> io::Result<[u8; N]> {
    answer
        .get(at..at + N)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a short sock_diag answer"))
}

#[cfg(test)]
#[path = "sock_diag_tests.rs"]
mod tests;
