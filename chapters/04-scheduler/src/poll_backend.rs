//! The part of the loop that talks to the kernel: here, `poll(2)`.
//!
//! Redis keeps one file per way of waiting (`ae_select.c`, `ae_epoll.c`, `ae_kqueue.c`),
//! each behind the same four functions: add a descriptor, change it, delete it, wait. The
//! event loop (`event_loop.rs`) only ever calls those four, so `poll` could be swapped
//! for `epoll` (an exercise) by writing a new file with the same methods, and nothing else.
//!
//! `poll` itself keeps no memory between calls: each call we hand it the whole list of
//! descriptors and what we want from each. So this backend keeps that list, an array of
//! `struct pollfd` exactly as the C manual page describes it, and edits it in place when
//! registrations come and go, instead of rebuilding it every turn as chapter 2 did.
//! (`epoll` is the opposite: the kernel keeps the list, and add, modify and delete are
//! system calls. That is why the loop avoids calling `modify` when nothing changed.)

use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use nix::libc;

use shared::trace;

use crate::event_loop::{Event, Interest, Token};

// ANCHOR: poller
// ANCHOR: poller_fields
pub struct Poller {
    /// What `poll` reads and writes: one entry per registered descriptor.
    fds: Vec<libc::pollfd>,
    /// `registered[i]` is the descriptor and token behind `fds[i]`. `poll` answers in
    /// positions of `fds`; the loop wants tokens.
    registered: Vec<(RawFd, Token)>,
    /// Where each descriptor's entry is, so `modify` and `delete` need not search.
    position: HashMap<RawFd, usize>,
}
// ANCHOR_END: poller_fields

impl Poller {
    pub fn new() -> Poller {
        Poller { fds: Vec::new(), registered: Vec::new(), position: HashMap::new() }
    }

    // ANCHOR: poller_edit
    /// Starts watching `fd` (Redis: `aeApiAddEvent`).
    pub fn add(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        if self.position.contains_key(&fd) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("fd {fd} is already registered"),
            ));
        }
        self.position.insert(fd, self.fds.len());
        self.fds.push(pollfd(fd, interest));
        self.registered.push((fd, token));
        Ok(())
    }

    /// Changes what to wait for on `fd` (Redis does this inside `aeApiAddEvent` too).
    pub fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let Some(&position) = self.position.get(&fd) else {
            return Err(not_registered(fd));
        };
        self.fds[position] = pollfd(fd, interest);
        self.registered[position] = (fd, token);
        Ok(())
    }

    /// Stops watching `fd` (Redis: `aeApiDelEvent`).
    pub fn delete(&mut self, fd: RawFd) -> io::Result<()> {
        let Some(position) = self.position.remove(&fd) else {
            return Err(not_registered(fd));
        };
        // Move the last entry into the hole: O(1), and order does not matter to `poll`.
        self.fds.swap_remove(position);
        self.registered.swap_remove(position);
        if let Some(&(moved, _)) = self.registered.get(position) {
            self.position.insert(moved, position);
        }
        Ok(())
    }
    // ANCHOR_END: poller_edit

    // ANCHOR: wait
    /// Waits until a descriptor is ready or `timeout` passes (`None`: no limit), and puts
    /// what is ready into `events` (Redis: `aeApiPoll`).
    pub fn wait(&mut self, events: &mut Vec<Event>, timeout: Option<Duration>) -> io::Result<()> {
        let timeout_ms = match timeout {
            None => -1,
            // Rounded *up*: rounding down would wake us a little before a deadline, find
            // nothing to do, and poll again with a zero timeout: a short busy loop.
            Some(timeout) => {
                let ms = timeout.as_nanos().div_ceil(1_000_000);
                i32::try_from(ms).unwrap_or(i32::MAX)
            }
        };
        trace!("poll: waiting on {} fds, timeout {}", self.fds.len(), describe(timeout_ms));
        // SAFETY: `poll` reads `fds.len()` entries from the pointer and writes only their
        // `revents` fields; the pointer and length come from a live Vec that nothing else
        // touches during the call. A descriptor closed behind our back is not unsafe
        // either: `poll` just reports it as POLLNVAL.
        let ready = unsafe {
            libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, timeout_ms)
        };
        if ready < 0 {
            return Err(io::Error::last_os_error()); // EINTR included: the loop handles it
        }
        trace!("poll: {ready} ready");
        for (fd, &(_, token)) in self.fds.iter().zip(&self.registered) {
            if fd.revents == 0 {
                continue;
            }
            // An error or hang-up is reported as both readable and writable, as Redis's
            // backends do. The handler's next `read` or `write` then meets the problem
            // itself (end-of-file, ECONNRESET, EPIPE) and deals with it on the path it
            // already has, instead of every handler needing a third callback.
            let failed = fd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0;
            events.push(Event {
                token,
                readable: failed || fd.revents & libc::POLLIN != 0,
                writable: failed || fd.revents & libc::POLLOUT != 0,
            });
        }
        Ok(())
    }
    // ANCHOR_END: wait
}
// ANCHOR_END: poller

// ANCHOR: pollfd
/// The `struct pollfd` for `fd` and `interest`.
fn pollfd(fd: RawFd, interest: Interest) -> libc::pollfd {
    let mut events = 0;
    if interest.readable {
        events |= libc::POLLIN;
    }
    if interest.writable {
        events |= libc::POLLOUT;
    }
    libc::pollfd {
        // `poll` skips entries whose descriptor is negative. Asking for no events is not
        // enough: errors and hang-ups are reported even then, and a descriptor that has
        // hung up would wake us on every turn. The real number stays in `registered`.
        fd: if events == 0 { -1 } else { fd },
        events,
        revents: 0,
    }
}
// ANCHOR_END: pollfd

fn not_registered(fd: RawFd) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("fd {fd} is not registered"))
}

/// `-1` means "no timeout": say so in the trace rather than print a puzzling number.
fn describe(timeout_ms: i32) -> String {
    match timeout_ms {
        -1 => "none".to_string(),
        ms => format!("{ms} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// Tokens are the loop's to make; the backend only stores and returns them.
    fn token(index: u32) -> Token {
        Token::for_tests(index)
    }

    #[test]
    fn delete_keeps_the_other_entries_findable() {
        let mut poller = Poller::new();
        let pairs: Vec<_> = (0..3).map(|_| UnixStream::pair().expect("socketpair")).collect();
        for (index, (ours, peer)) in pairs.iter().enumerate() {
            (&*peer).write_all(b"x").expect("write");
            poller.add(ours.as_raw_fd(), token(index as u32), Interest::READABLE).expect("add");
        }
        // Deleting the first moves the last into its place; both others must still be
        // reachable by descriptor, and report under their own tokens.
        poller.delete(pairs[0].0.as_raw_fd()).expect("delete");
        assert!(poller.delete(pairs[0].0.as_raw_fd()).is_err(), "already gone");
        poller
            .modify(pairs[2].0.as_raw_fd(), token(2), Interest::READABLE)
            .expect("modify the moved entry");
        let mut events = Vec::new();
        poller.wait(&mut events, Some(Duration::ZERO)).expect("wait");
        let mut tokens: Vec<Token> = events.iter().map(|event| event.token).collect();
        tokens.sort_by_key(|token| token.to_string());
        assert_eq!(tokens, [token(1), token(2)]);
    }
}
