//! Linux's own numbers and calls that chapters 10 and 11 use, named so that those chapters
//! build on every system: on Linux they are libc's and nix's; elsewhere they stand in, and
//! are never used, because both chapters refuse to start off Linux before they touch
//! io_uring ([`crate::system::needs_linux`]).
//!
//! The flags (`SOCK_CLOEXEC`, `RESOLVE_BENEATH`, ...) go into io_uring's entries, which
//! only a Linux kernel reads, so their stand-ins are Linux's values. The system call
//! numbers stand in as -1, a number no kernel has: were one called by mistake, the kernel
//! would refuse it (`ENOSYS`, or `SIGSYS` on macOS and the BSDs), never run another call.

use std::io;
use std::os::fd::OwnedFd;

#[cfg(target_os = "linux")]
pub use nix::libc::{
    SYS_io_uring_enter, SYS_io_uring_register, SYS_io_uring_setup, ETIME, RESOLVE_BENEATH,
    SOCK_CLOEXEC, SOCK_NONBLOCK,
};

#[cfg(not(target_os = "linux"))]
pub use stand_ins::*;

/// Linux's values, for a build on another system (see the module's documentation). Built
/// on Linux too, where the test below holds them to libc's.
#[allow(non_upper_case_globals)] // libc's names
#[cfg_attr(target_os = "linux", allow(dead_code))]
mod stand_ins {
    use nix::libc::c_int;

    pub const SYS_io_uring_setup: c_int = -1;
    pub const SYS_io_uring_enter: c_int = -1;
    pub const SYS_io_uring_register: c_int = -1;
    pub const ETIME: c_int = 62;
    pub const RESOLVE_BENEATH: u64 = 0x08;
    pub const SOCK_CLOEXEC: c_int = 0o2_000_000;
    pub const SOCK_NONBLOCK: c_int = 0o4_000;
}

/// A pipe (reading end, writing end, and the bytes it holds), close-on-exec, of `size`
/// bytes where the system allows it (`F_SETPIPE_SZ`), else of the size it has
/// (`F_GETPIPE_SZ`): chapter 11 splices files through it.
#[cfg(target_os = "linux")]
pub fn pipe(size: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let (reader, writer) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let size = fcntl(&writer, FcntlArg::F_SETPIPE_SZ(size))
        .or_else(|_| fcntl(&writer, FcntlArg::F_GETPIPE_SZ))?;
    Ok((reader, writer, size as usize))
}

/// Off Linux a pipe cannot be resized, and chapter 11 does not run: unsupported.
#[cfg(not(target_os = "linux"))]
pub fn pipe(_size: i32) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "pipe sizes are Linux's"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_of_a_mebibyte_or_of_what_the_system_allows() {
        let (_reader, _writer, size) = pipe(1 << 20).expect("pipe");
        assert!(size >= 4096, "{size}");
    }

    /// The flags' stand-ins are Linux's values, as libc has them here.
    #[test]
    fn the_stand_ins_are_linuxs_values() {
        assert_eq!((stand_ins::ETIME, stand_ins::RESOLVE_BENEATH), (ETIME, RESOLVE_BENEATH));
        assert_eq!(stand_ins::SOCK_CLOEXEC, SOCK_CLOEXEC);
        assert_eq!(stand_ins::SOCK_NONBLOCK, SOCK_NONBLOCK);
    }
}
