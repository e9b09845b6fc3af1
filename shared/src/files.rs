//! Serving files from `--root`, and never anything outside it.
//!
//! Two steps, so that a chapter can run the slow one wherever it likes (blocking in
//! chapters 1-5, on a thread pool in chapters 6-9; chapters 10 and 11 open and read through
//! the ring, and use only [`resolve`] and [`error_response`]):
//!
//! 1. [`resolve`] is pure and instant: it turns the URL path into a path *relative* to the
//!    root, refusing anything that could climb out: `..`, its percent-encoded `%2e%2e`,
//!    encoded slashes, backslashes, NUL bytes. It builds the relative path only from plain
//!    segments, so an absolute path can never sneak into `root.join(...)`.
//! 2. [`open`] and [`read`] touch the disk. `open` also checks, after resolving symbolic
//!    links, that the file really is under the root and is a regular file.
//!
//! Both disk steps honour `--fs-delay-ms`, a simulated slow disk: each sleeps that long
//! first, the way a cold spinning disk or a network file system would make us wait.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use crate::http::{Body, Response};

/// Files larger than this are refused (500) rather than read into memory.
pub const MAX_FILE: u64 = 64 * 1024 * 1024;

/// Turns the part of the URL after `/files/` into a path relative to the root.
/// A path ending in `/` (or empty) means the `index.html` in that folder.
pub fn resolve(url_path: &str) -> Result<PathBuf, Response> {
    // An encoded slash or backslash is a classic way past a check that splits on '/'
    // before decoding. No real file name needs one, so refuse it outright.
    let lower = url_path.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") {
        return Err(not_found());
    }
    let decoded = percent_decode(url_path)
        .ok_or_else(|| Response::error(400, "bad percent-encoding in the path"))?;
    let decoded = String::from_utf8(decoded).map_err(|_| not_found())?;
    if decoded.contains('\0') || decoded.contains('\\') {
        return Err(not_found());
    }
    let mut relative = PathBuf::new();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => continue,
            ".." => return Err(not_found()),
            plain => relative.push(plain),
        }
    }
    if decoded.is_empty() || decoded.ends_with('/') {
        relative.push("index.html");
    }
    Ok(relative)
}

/// `%41` becomes `A`. `None` for a `%` not followed by two hex digits.
fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes.get(index + 1..index + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    Some(out)
}

/// Opens `relative` under `root` and returns the file with its length. Blocking; sleeps
/// `delay` first (the simulated slow disk). A file that resolves (through symbolic links)
/// to somewhere outside the root, or that is not a regular file, is reported as missing.
pub fn open(root: &Path, relative: &Path, delay: Duration) -> io::Result<(File, u64)> {
    sleep(delay);
    let not_a_file = || io::Error::new(io::ErrorKind::NotFound, "not a file under the root");
    let root = root.canonicalize()?;
    let full = root.join(relative).canonicalize()?;
    // Check before opening: opening a FIFO waits for a writer, and a device may do worse.
    if !full.starts_with(&root) || !std::fs::metadata(&full)?.is_file() {
        return Err(not_a_file());
    }
    // O_NONBLOCK, in case a FIFO took the file's place since the check: opening it must not
    // wait either. (It changes nothing for a regular file: the disk is never "not ready".)
    let file = OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(&full)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(not_a_file());
    }
    Ok((file, metadata.len()))
}

/// The most a [`read_chunk`] reads: what one download holds in memory at a time.
pub const CHUNK: usize = 256 * 1024;

/// Reads the next piece of `file`, at most [`CHUNK`] bytes; empty at the end. Blocking;
/// sleeps `delay` first.
pub fn read_chunk(file: &mut File, delay: Duration) -> io::Result<Vec<u8>> {
    sleep(delay);
    let mut chunk = Vec::with_capacity(CHUNK);
    file.take(CHUNK as u64).read_to_end(&mut chunk)?;
    Ok(chunk)
}

/// Reads the whole of a file opened by [`open`]. Blocking; sleeps `delay` first.
pub fn read(file: File, length: u64, delay: Duration) -> io::Result<Vec<u8>> {
    sleep(delay);
    if length > MAX_FILE {
        return Err(io::Error::other("file too large to serve"));
    }
    let mut contents = Vec::with_capacity(length as usize);
    // `take` guards against a file that grows while we read it.
    file.take(MAX_FILE).read_to_end(&mut contents)?;
    Ok(contents)
}

/// [`open`] then [`read`]: what the blocking chapters call.
pub fn load(root: &Path, relative: &Path, delay: Duration) -> io::Result<Vec<u8>> {
    let (file, length) = open(root, relative, delay)?;
    read(file, length, delay)
}

fn sleep(delay: Duration) {
    if !delay.is_zero() {
        // On the loop's thread (chapters 1-5) every client waits with us; on a worker, one job.
        crate::trace!("fs: slow disk, {} ms", delay.as_millis());
        thread::sleep(delay);
    }
}

/// The response for a file read: 200 with its contents, 404 if it could not be found.
pub fn response(relative: &Path, contents: io::Result<Vec<u8>>) -> Response {
    match contents {
        Ok(bytes) => Response {
            content_type: Cow::Borrowed(content_type(relative)),
            body: Body::Owned(bytes),
            ..Response::text(200, "")
        },
        Err(error) => error_response(&error),
    }
}

/// The head of a file's response whose body, `length` bytes, is sent a piece at a time.
pub fn streamed_response(relative: &Path, length: u64) -> Response {
    Response {
        content_type: Cow::Borrowed(content_type(relative)),
        body: Body::Streamed(length),
        ..Response::text(200, "")
    }
}

/// The 404 for a path that names no regular, readable file under the root.
pub fn not_found() -> Response {
    Response::error(404, "no such file")
}

/// The answer when opening or reading a file failed: 404 if there is no such (regular,
/// readable) file, 500 for anything else. A name too long for the kernel (over 255 bytes
/// a part, 4,096 in all), a loop of symbolic links (`ELOOP`) and a path that leads out of
/// the root (`EXDEV`, from `openat2`'s `RESOLVE_BENEATH`) name no file either: 404.
pub fn error_response(error: &io::Error) -> Response {
    use nix::libc::{EISDIR, ELOOP, ENAMETOOLONG, ENOTDIR, EXDEV};
    match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => not_found(),
        _ if matches!(
            error.raw_os_error(),
            Some(EISDIR | ENOTDIR | ENAMETOOLONG | ELOOP | EXDEV)
        ) =>
        {
            not_found()
        }
        _ => Response::error(500, "could not read the file"),
    }
}

/// The `Content-Type` for a file name's extension.
pub fn content_type(path: &Path) -> &'static str {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
    match extension.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "txt" | "md" | "rs" => "text/plain; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/x-icon",
        "wasm" => "application/wasm",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_keeps_inside() {
        assert_eq!(resolve("a/b.txt").unwrap(), PathBuf::from("a/b.txt"));
        assert_eq!(resolve("").unwrap(), PathBuf::from("index.html"));
        assert_eq!(resolve("docs/").unwrap(), PathBuf::from("docs/index.html"));
        assert_eq!(resolve("a%20b.txt").unwrap(), PathBuf::from("a b.txt"));
        assert_eq!(resolve("/etc/passwd").unwrap(), PathBuf::from("etc/passwd"));
        for evil in [
            "../secret",
            "a/../../secret",
            "%2e%2e/secret",
            "..%2fsecret",
            "a%5c..%5csecret",
            "a%00b",
            "..\\x",
        ] {
            assert!(resolve(evil).is_err(), "{evil} must be refused");
        }
        assert_eq!(resolve("%zz").unwrap_err().status, 400);
    }

    #[test]
    fn types() {
        assert_eq!(content_type(Path::new("a.HTML")), "text/html; charset=utf-8");
        assert_eq!(content_type(Path::new("a")), "application/octet-stream");
    }

    #[test]
    fn open_refuses_directories_and_missing_files() {
        let root = crate::args::default_root();
        assert!(open(&root, Path::new("index.html"), Duration::ZERO).is_ok());
        assert!(open(&root, Path::new("missing.html"), Duration::ZERO).is_err());
        assert!(open(&root, Path::new(""), Duration::ZERO).is_err()); // the root itself
    }

    #[test]
    fn a_loop_of_links_is_not_found() {
        let folder = std::env::temp_dir().join(format!("files-loop-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("a folder");
        let link = folder.join("loop");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&link, &link).expect("a link to itself");
        let error = open(&folder, Path::new("loop"), Duration::ZERO).expect_err("a loop");
        let _ = std::fs::remove_dir_all(&folder);
        assert_eq!(error.raw_os_error(), Some(nix::libc::ELOOP), "{error}");
        assert_eq!(error_response(&error).status, 404);
        assert_eq!(error_response(&io::Error::other("disk on fire")).status, 500);
    }

    #[test]
    fn a_name_too_long_is_not_found() {
        let root = crate::args::default_root();
        let long_part = "a".repeat(300); // over the 255 bytes a name may have
        let long_path = ["a/"; 2100].concat(); // over the 4,096 bytes a path may have
        for relative in [long_part, long_path] {
            let error = open(&root, Path::new(&relative), Duration::ZERO).expect_err("too long");
            assert_eq!(error_response(&error).status, 404, "{error}");
        }
    }
}
