//! Splices: a file's bytes through a pipe to a socket, and what happens when the client
//! has gone.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::*;
use crate::proactor::{start, turn};

/// Runs `future` to its end, turning the ring (at most 3 s).
fn finish<T>(future: impl std::future::Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    let started = Instant::now();
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        assert!(started.elapsed() < Duration::from_secs(3), "not done in 3 s");
        turn(Some(Duration::from_millis(100))).expect("turn");
    }
}

#[test]
fn a_file_goes_through_a_pipe_to_a_socket_unread_by_us() {
    start(64).expect("io_uring");
    let mut file = tempfile();
    file.write_all(b"hello, pipe").expect("write");
    let (file, pipe) = (Rc::new(OwnedFd::from(file)), Pipe::new().expect("pipe"));
    let (ours, mut peer) = UnixStream::pair().expect("socketpair");
    let moved = finish(splice(file, Some(7), pipe.writer.clone(), 100)).expect("file to pipe");
    assert_eq!(moved, 4, "from offset 7 to the end: 'pipe'");
    let sent = finish(splice(pipe.reader.clone(), None, Rc::new(ours), moved)).expect("to socket");
    assert_eq!(sent, 4);
    let mut got = [0u8; 4];
    peer.read_exact(&mut got).expect("read");
    assert_eq!(&got, b"pipe");
}

#[test]
fn a_splice_to_a_client_that_left_fails_and_lets_go_of_both_ends() {
    start(64).expect("io_uring");
    let pipe = Pipe::new().expect("pipe");
    nix::unistd::write(&*pipe.writer, b"bytes for nobody").expect("fill the pipe");
    let (ours, peer) = UnixStream::pair().expect("socketpair");
    drop(peer); // the client left mid-download
    let ours = Rc::new(ours);
    let error = finish(splice(pipe.reader.clone(), None, ours.clone(), 16)).expect_err("gone");
    assert_eq!(error.raw_os_error(), Some(libc::EPIPE));
    assert_eq!(Rc::strong_count(&ours), 1, "the operation let go of the socket");
    assert_eq!(Rc::strong_count(&pipe.reader), 1, "and of the pipe");
}

/// A file of our own, already unlinked: it goes when closed.
fn tempfile() -> File {
    let path = std::env::temp_dir().join(format!("ch11-splice-{}", std::process::id()));
    let file = File::options().create(true).truncate(true).read(true).write(true).open(&path);
    let file = file.expect("a temporary file");
    std::fs::remove_file(&path).expect("unlinked");
    file
}
