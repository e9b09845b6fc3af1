//! Files through the ring: opening, reading and closing are operations, and the kernel
//! does the blocking part (a slow disk) on workers of its own. Chapters 6 to 9 needed a
//! thread pool of ours for it; here it is gone, and `--fs-delay-ms` is a timer linked
//! before each open and each read, in the ring too.
//!
//! As in chapter 6, a file is read a chunk (256 KiB) at a time, and travels with each one.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use nix::libc;
use nix::sys::stat::{fstat, SFlag};

use shared::files;
use shared::http::Response;

use crate::proactor::{self, submit};
use crate::ring::{io_uring_sqe, IORING_OP_OPENAT2, IORING_OP_READ};

/// A piece of a file, read through the ring: its bytes, and the file, to read the next
/// piece from.
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub file: Rc<RingFile>,
}

/// An open file, shared by the reads in flight: its last owner closes it through the ring.
pub struct RingFile(Option<OwnedFd>);

impl Drop for RingFile {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            proactor::close_later(fd);
        }
    }
}

/// `openat2`'s argument (`<linux/openat2.h>`): with `RESOLVE_BENEATH`, the kernel refuses
/// a path that leads out of the folder it starts from, by `..` or by a symbolic link.
#[repr(C)]
struct open_how {
    flags: u64,
    mode: u64,
    resolve: u64,
}
const RESOLVE_BENEATH: u64 = 0x08;

// ANCHOR: files
pub struct Files {
    /// `--root`, open once: files are opened beneath it.
    root: File,
    delay: Duration,
}

impl Files {
    /// `delay` is `--fs-delay-ms`, the simulated slow disk.
    pub fn new(root: &Path, delay: Duration) -> io::Result<Files> {
        Ok(Files { root: File::open(root)?, delay })
    }

    /// Opens `relative` under the root and reads its first chunk; the file's length comes
    /// with it. `O_NONBLOCK`: were it a FIFO, opening it must not wait for a writer.
    pub async fn open(&self, relative: PathBuf) -> Result<(Chunk, u64), Response> {
        let opened = self.open_beneath(&relative).await;
        let file = RingFile(Some(opened.map_err(|error| files::error_response(&error))?));
        // A look at what was opened, not a wait for the disk: the open brought it in.
        let status = file.0.as_ref().map(fstat);
        let Some(Ok(status)) = status.filter(|status| {
            status.is_ok_and(|s| {
                SFlag::from_bits_truncate(s.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG
            })
        }) else {
            return Err(Response::error(404, "no such file")); // a folder, a FIFO, a device
        };
        Ok((self.read(Rc::new(file)).await?, status.st_size as u64))
    }

    async fn open_beneath(&self, relative: &Path) -> io::Result<OwnedFd> {
        let flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
        let how = open_how { flags, mode: 0, resolve: RESOLVE_BENEATH };
        let path = CString::new(relative.as_os_str().as_bytes())?;
        let root = self.root.as_raw_fd(); // lives as long as `self`, and so as the operation
                                          // SAFETY: the entry points into the path and the `open_how` the operation owns.
        let open = unsafe {
            submit((path, how), self.delay, |(path, how)| {
                let size = size_of::<open_how>() as u32;
                let entry = io_uring_sqe::new(IORING_OP_OPENAT2, root, path.as_ptr().cast(), size);
                entry.with(0, &raw const *how as u64)
            })
        };
        match open.await.0 {
            // EXDEV: the path leads out of the root; ELOOP: through a loop of links.
            Err(error) if matches!(error.raw_os_error(), Some(libc::EXDEV | libc::ELOOP)) => {
                Err(io::ErrorKind::NotFound.into())
            }
            // SAFETY: a descriptor the kernel has just made, for us alone.
            opened => Ok(unsafe { OwnedFd::from_raw_fd(opened? as RawFd) }),
        }
    }

    /// Reads the next chunk of a file that `open` opened, from where the last read ended
    /// (offset -1: the file's own position).
    pub async fn read(&self, file: Rc<RingFile>) -> Result<Chunk, Response> {
        let bytes = Vec::with_capacity(files::CHUNK);
        // SAFETY: the entry points into the chunk's heap block, which the operation owns.
        let read = unsafe {
            submit((file, bytes), self.delay, |(file, bytes)| {
                let fd = file.0.as_ref().map_or(-1, |fd| fd.as_raw_fd());
                let room = bytes.spare_capacity_mut();
                let entry = io_uring_sqe::new(
                    IORING_OP_READ,
                    fd,
                    room.as_mut_ptr().cast(),
                    room.len() as u32,
                );
                entry.with(0, u64::MAX)
            })
        };
        let (result, (file, mut bytes)) = read.await;
        let count = result.map_err(|error| files::error_response(&error))?;
        // SAFETY: the kernel wrote `count` bytes at the start of the chunk's room.
        unsafe { bytes.set_len(count as usize) };
        Ok(Chunk { bytes, file })
    }
}
// ANCHOR_END: files
