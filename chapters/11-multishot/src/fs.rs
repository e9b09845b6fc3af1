//! Files through the ring: opening and reading are operations, and the kernel does the
//! blocking part (a slow disk) on workers of its own, where chapters 6 to 9 had a thread
//! pool of ours. `--fs-delay-ms` sleeps before each open and each read. New in chapter 11:
//! `splice` moves a file's bytes into a pipe and from the pipe to the socket, as nginx's
//! `sendfile` does, passing on the page cache's pages: not one byte comes to us.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use nix::libc;
use nix::sys::stat::{fstat, SFlag};

use shared::files;
use shared::http::Response;
use shared::linux;

use crate::proactor::submit;
use crate::ring::io_uring_sqe;
use crate::time::sleep;

// ANCHOR: files
pub struct Files {
    /// `--root`, open once: files are opened beneath it.
    root: File,
    delay: Duration,
}

impl Files {
    pub fn new(root: &Path, delay: Duration) -> io::Result<Files> {
        Ok(Files { root: File::open(root)?, delay })
    }

    /// Opens `relative` under the root, with a pipe to send it through; the file's length comes
    /// with it. `O_NONBLOCK`: were it a FIFO, opening it must not wait for a writer.
    pub async fn open(&self, relative: PathBuf) -> Result<(Download, u64), Response> {
        let flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
        // `openat2`'s `struct open_how { flags, mode, resolve }`, 24 bytes (`<linux/openat2.h>`).
        // With `RESOLVE_BENEATH`, the kernel refuses a path that leads out of the root.
        let how = Box::new([flags, 0, linux::RESOLVE_BENEATH]);
        let path = CString::new(relative.as_os_str().as_bytes()).map_err(|_| files::not_found())?;
        let root = self.root.as_raw_fd(); // lives as long as `self`, and so as the operation
        self.slow_disk().await;
        let open = io_uring_sqe::openat2(root, &path, &how);
        // SAFETY: the entry points into the path and the `open_how` that the operation owns.
        let open = unsafe { submit((path, how), None, open) };
        // A path that leads out of the root (`EXDEV`) is a 404, as in every chapter.
        let file = match open.await.0 {
            // SAFETY: a descriptor the kernel has just made, for us alone.
            Ok(fd) => unsafe { OwnedFd::from_raw_fd(fd as i32) },
            Err(error) => return Err(files::error_response(&error)),
        };
        // A look at what was opened (the open brought it in): a folder, a FIFO, a device?
        let status = fstat(&file).map_err(|_| files::not_found())?;
        if SFlag::from_bits_truncate(status.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
            return Err(files::not_found());
        }
        let pipe = Pipe::new().map_err(|error| files::error_response(&error))?;
        Ok((Download { file: Rc::new(file), pipe }, status.st_size as u64))
    }

    /// Moves the next `len` bytes of a download's file, from `offset`, into its pipe.
    pub async fn read(&self, download: &Download, offset: u64, len: usize) -> io::Result<usize> {
        self.slow_disk().await;
        splice(download.file.clone(), Some(offset), download.pipe.writer.clone(), len).await
    }

    /// `--fs-delay-ms`: a sleep on the loop's timers (or a linked timer: see the exercises).
    async fn slow_disk(&self) {
        if !self.delay.is_zero() {
            sleep(self.delay).await;
        }
    }
}
// ANCHOR_END: files

// ANCHOR: splice
/// A file on its way, and the pipe it goes through.
pub struct Download {
    file: Rc<OwnedFd>,
    pub pipe: Pipe,
}

/// A pipe: the kernel's buffer between a file and a socket.
pub struct Pipe {
    pub reader: Rc<OwnedFd>,
    writer: Rc<OwnedFd>,
    pub size: usize, // 1 MiB where allowed (`F_SETPIPE_SZ`), else what it has (`F_GETPIPE_SZ`)
}

impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        let (reader, writer, size) = linux::pipe(1 << 20)?;
        Ok(Pipe { reader: Rc::new(reader), writer: Rc::new(writer), size })
    }
}

/// Moves up to `len` bytes from `from` (a file, at `offset`; or a pipe: `None`) to `to`,
/// one of the two a pipe: `IORING_OP_SPLICE`, carried out by the kernel's own workers.
pub async fn splice<F: AsRawFd + 'static, T: AsRawFd + 'static>(
    from: Rc<F>, offset: Option<u64>, to: Rc<T>, len: usize,
) -> io::Result<usize> {
    let splice = io_uring_sqe::splice(from.as_raw_fd(), offset, to.as_raw_fd(), len);
    // SAFETY: a splice points at no memory; the operation keeps both descriptors open.
    unsafe { submit((from, to), None, splice) }.await.0.map(|count| count as usize)
}
// ANCHOR_END: splice

#[cfg(test)]
#[cfg(target_os = "linux")] // they need io_uring
#[path = "fs_tests.rs"]
mod tests;
