//! Chapter 2: many clients on one thread, with non-blocking sockets and `poll(2)`.
//!
//! Chapter 1 waited inside `accept`, `read` and `write`, so one slow client stopped
//! everyone. Here nothing waits except one call: `poll`. We hand the kernel the list of
//! every socket we care about and what we are waiting for on each (a client to connect,
//! bytes to read, room to write), and it wakes us when *any* of them is ready. Then we
//! do exactly the work that is ready, never more, and go back to `poll`.
//!
//! The sockets are non-blocking: a `read` with nothing to read returns `WouldBlock`
//! (`EAGAIN`) at once instead of waiting. So each client needs a little memory of where it
//! is: a [`Connection`] with what it has received so far and what it still has to send.
//!
//! What is still blocking: the application's effects. `/sleep`, a slow disk and the
//! upstream still stop the whole loop, exactly as in chapter 1. Chapter 4 fixes that.

mod connection;

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, AsRawFd};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use shared::app::Stats;
use shared::args::Config;
use shared::{listener, log, trace};

use connection::Connection;

fn main() {
    // ANCHOR: setup
    let config = Config::from_args("ch02-poll", &[]);
    if config.trace {
        trace::enable();
    }
    // Non-blocking: `accept` answers `WouldBlock` instead of waiting when nobody is there.
    let listener = listener::listen(&config, true);
    let mut connections: Vec<Connection> = Vec::new();
    let mut stats = Stats::default();
    let mut accepting = true;
    // ANCHOR_END: setup

    // ANCHOR: loop
    loop {
        // 1. Say what we wait for: new clients on the listener, and for each connection
        //    whatever its state needs (see `Connection::interest`).
        let mut fds = Vec::with_capacity(connections.len() + 1);
        if accepting {
            fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
        }
        for connection in &connections {
            fds.push(PollFd::new(connection.stream.as_fd(), connection.interest()));
        }
        // Out of file descriptors, we stop asking about the listener for a moment (see
        // `accept_all`), and wake up after 100 ms to try again.
        let timeout = if accepting { PollTimeout::NONE } else { PollTimeout::from(100u8) };

        // 2. Wait until something is ready. This is the only place the server waits.
        trace!("poll: waiting on {} fds, timeout {}", fds.len(), describe(timeout));
        let ready = match poll(&mut fds, timeout) {
            Ok(count) => count,
            Err(Errno::EINTR) => continue, // a signal interrupted the wait: wait again
            Err(error) => {
                log!("poll failed: {error}");
                std::process::exit(1);
            }
        };
        stats.loop_turns += 1;
        // `fds` borrows the sockets; copy out what happened so we can use them again.
        let events: Vec<PollFlags> =
            fds.iter().map(|fd| fd.revents().unwrap_or(PollFlags::empty())).collect();
        drop(fds);
        trace!("poll: {ready} ready");

        // 3. Do the work that is ready, and nothing else.
        let mut events = events.into_iter();
        if accepting {
            let listener_events = events.next().unwrap_or(PollFlags::empty());
            if listener_events.contains(PollFlags::POLLIN) {
                accepting = accept_all(&listener, &mut connections);
            }
        } else {
            accepting = true; // 100 ms have passed: try `accept` again next turn
        }
        // `zip` stops at the shorter list: connections accepted just now were not polled.
        for (connection, events) in connections.iter_mut().zip(events) {
            if !events.is_empty() {
                connection.on_events(events, &config, &mut stats);
            }
        }

        // 4. Forget the connections that are finished. Dropping one closes its socket.
        connections.retain(|connection| !connection.is_done());
        stats.connections_open = connections.len() as u64;
    }
    // ANCHOR_END: loop
}

// ANCHOR: accept
/// Accepts every client that is waiting, until `accept` says `WouldBlock`. Returns whether
/// to keep polling the listener.
fn accept_all(listener: &TcpListener, connections: &mut Vec<Connection>) -> bool {
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                if let Err(error) = stream.set_nonblocking(true) {
                    trace!("accept: {peer}: {error}");
                    continue;
                }
                trace!("accept: client {peer} (fd {})", stream.as_raw_fd());
                connections.push(Connection::new(stream));
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return true,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) if listener::is_out_of_descriptors(&error) => {
                // The listener stays "ready" while clients wait, so polling it again at
                // once would spin at 100% CPU doing nothing. Leave it out of the next
                // `poll` instead; a moment later connections may have closed.
                log!("accept: {error}; pausing accepts");
                return false;
            }
            Err(error) => {
                // A client that connected and reset before we accepted it, and the like.
                trace!("accept: {error}");
                return true;
            }
        }
    }
}
// ANCHOR_END: accept

/// `-1` means "no timeout": say so in the trace rather than print a puzzling number.
fn describe(timeout: PollTimeout) -> String {
    match i32::from(timeout) {
        -1 => "none".to_string(),
        ms => format!("{ms} ms"),
    }
}
