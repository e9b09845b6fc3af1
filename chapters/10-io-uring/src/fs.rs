//! Files through the ring: opening and reading are operations, and the kernel does the
//! blocking part (a slow disk) on workers of its own, where chapters 6 to 9 had a thread
//! pool of ours. `--fs-delay-ms` sleeps before each open and each read. As in chapter 6, a
//! file is read a chunk (256 KiB) at a time, and travels with each one.

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

use crate::proactor::submit;
use crate::ring::io_uring_sqe;
use crate::time::sleep;

/// A piece of a file, read through the ring: its bytes, and the file, to read the next
/// piece from (shared by the reads in the ring; its last owner closes it).
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub file: Rc<OwnedFd>,
}

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

    /// Opens `relative` under the root and reads its first chunk; the file's length comes
    /// with it. `O_NONBLOCK`: were it a FIFO, opening it must not wait for a writer.
    pub async fn open(&self, relative: PathBuf) -> Result<(Chunk, u64), Response> {
        let flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
        // `openat2`'s `struct open_how { flags, mode, resolve }`, 24 bytes (`<linux/openat2.h>`).
        // With `RESOLVE_BENEATH`, the kernel refuses a path that leads out of the root.
        let how = [flags, 0, shared::linux::RESOLVE_BENEATH];
        let path = CString::new(relative.as_os_str().as_bytes()).map_err(|_| files::not_found())?;
        let root = self.root.as_raw_fd(); // lives as long as `self`, and so as the operation
        self.slow_disk().await;
        // SAFETY: the entry points into the path and the `open_how` that the operation owns.
        let open = unsafe {
            submit((path, how), None, |(path, how)| io_uring_sqe::openat2(root, path, how))
        };
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
        let first = Chunk { bytes: Vec::with_capacity(files::CHUNK), file: Rc::new(file) };
        Ok((self.read(first).await?, status.st_size as u64))
    }

    /// Reads the next chunk of a file that `open` opened into `chunk`'s memory, from where
    /// the last read ended (offset -1: the file's own position).
    pub async fn read(&self, mut chunk: Chunk) -> Result<Chunk, Response> {
        self.slow_disk().await;
        chunk.bytes.clear();
        // SAFETY: the entry points into the chunk's heap block, which the operation owns.
        let read = unsafe {
            submit((chunk.file, chunk.bytes), None, |(file, bytes)| {
                io_uring_sqe::read(file.as_raw_fd(), bytes.spare_capacity_mut(), u64::MAX)
            })
        };
        let (count, (file, mut bytes)) = read.await;
        let count = count.map_err(|error| files::error_response(&error))?;
        // SAFETY: the kernel wrote `count` bytes at the start of the chunk's room.
        unsafe { bytes.set_len(count as usize) };
        Ok(Chunk { bytes, file })
    }

    /// `--fs-delay-ms`: a sleep on the loop's timers (or a linked timer: see the exercises).
    async fn slow_disk(&self) {
        if !self.delay.is_zero() {
            sleep(self.delay).await;
        }
    }
}
// ANCHOR_END: files
