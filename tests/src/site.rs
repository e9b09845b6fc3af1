//! A temporary `--root` with files the probes know, and a secret next to it.
//!
//! ```text
//! suite-site-…/
//!   secret.txt          outside the root: no request may ever return its contents
//!   root/               what the server is started with as --root
//!     index.html  hello.txt  style.css  data.json  notes.unknown  "a b.txt"  empty.txt
//!     sub/index.html
//!     big.bin           (when asked for) a large file with a pattern that shows any
//!                       lost, repeated or reordered byte
//!     link-in  -> hello.txt        a symbolic link that stays inside the root
//!     link-out -> ../secret.txt    one that points outside
//!     link-up  -> ..               and one to the folder above
//! ```
//!
//! The folder is removed when the [`Site`] is dropped.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::client::show;

pub const HELLO_TXT: &str = "hello from a file\n";
pub const INDEX_HTML: &str = "<!doctype html>\n<title>suite</title>\n<p>the suite's root</p>\n";
pub const SUB_INDEX_HTML: &str = "<!doctype html>\n<p>sub</p>\n";
pub const SPACED_TXT: &str = "a file with a space in its name\n";

pub struct Site {
    /// The folder holding `root/` and `secret.txt`.
    pub base: PathBuf,
    /// The folder to pass as `--root`.
    pub root: PathBuf,
    /// The contents of `secret.txt`: a marker no response may contain.
    pub secret: String,
    /// The contents of `root/big.bin`, if one was made.
    pub big: Vec<u8>,
}

impl Site {
    /// Creates the site; with `big_size` > 0, also `big.bin` of that many bytes.
    pub fn create(big_size: usize) -> io::Result<Site> {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let nanos =
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |time| time.subsec_nanos());
        let unique =
            format!("{}-{}-{nanos}", std::process::id(), COUNT.fetch_add(1, Ordering::Relaxed));
        let base = std::env::temp_dir().join(format!("suite-site-{unique}"));
        let root = base.join("root");
        let site =
            Site { secret: format!("SUITE-SECRET-{unique}"), big: pattern(big_size), base, root };
        // From here on, dropping `site` removes whatever was made, even on an error.
        fs::create_dir_all(site.root.join("sub"))?;
        fs::write(site.base.join("secret.txt"), &site.secret)?;
        let file = |name: &str, contents: &[u8]| fs::write(site.root.join(name), contents);
        file("index.html", INDEX_HTML.as_bytes())?;
        file("hello.txt", HELLO_TXT.as_bytes())?;
        file("style.css", b"p { color: teal; }\n")?;
        file("data.json", b"{\"suite\": true}\n")?;
        file("notes.unknown", b"no known extension\n")?;
        file("a b.txt", SPACED_TXT.as_bytes())?;
        file("empty.txt", b"")?;
        file("sub/index.html", SUB_INDEX_HTML.as_bytes())?;
        if big_size > 0 {
            file("big.bin", &site.big)?;
        }
        symlink("hello.txt", &site.root.join("link-in"))?;
        symlink("../secret.txt", &site.root.join("link-out"))?;
        symlink("..", &site.root.join("link-up"))?;
        Ok(site)
    }

    /// The absolute path of the secret, for the "absolute path" attacks.
    pub fn secret_path(&self) -> PathBuf {
        self.base.join("secret.txt")
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &str, _link: &Path) -> io::Result<()> {
    Ok(()) // the workbook's servers are Unix programs; nothing to attack elsewhere
}

/// `size` bytes in which every 8-byte block encodes its own position, scrambled: a lost,
/// repeated or reordered block cannot look right.
pub fn pattern(size: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(size + 8);
    let mut block: u64 = 0;
    while bytes.len() < size {
        bytes.extend_from_slice(&block.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
        block += 1;
    }
    bytes.truncate(size);
    bytes
}

/// Where two byte strings first differ (`None` if they are equal).
pub fn first_difference(expected: &[u8], got: &[u8]) -> Option<usize> {
    // Compared whole first: one `memcmp`, where the walk below is slow in a debug build
    // and the bodies compared are megabytes.
    if expected == got {
        return None;
    }
    expected
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .or_else(|| (expected.len() != got.len()).then(|| expected.len().min(got.len())))
}

/// Where a body that came (`got`) first differs from the one `expected`, with a few bytes
/// of each from just before there, for a message:
///
/// ```text
/// the body differs from byte 5 on (from byte 0, expected `Hello, world!\n`, came
/// `Hello world!\n`; 13 of 14 bytes came)
/// ```
pub fn difference(expected: &[u8], got: &[u8]) -> Option<String> {
    let at = first_difference(expected, got)?;
    // A little before the difference, to show where it is, and a little after.
    let from = at.saturating_sub(8);
    let excerpt = |bytes: &[u8]| match bytes.get(from..(at + 16).min(bytes.len())) {
        Some(bytes) if !bytes.is_empty() => format!("`{}`", show(bytes)),
        _ => "nothing".to_string(),
    };
    Some(format!(
        "the body differs from byte {at} on (from byte {from}, expected {}, came {}; {} of {} \
         bytes came)",
        excerpt(expected),
        excerpt(got),
        got.len(),
        expected.len()
    ))
}

/// A file size sure to fill the kernel's socket buffers, so a server writing it to a
/// client that does not read must block (or, if it is non-blocking, wait for writability).
/// Linux lets a socket's send buffer grow to `tcp_wmem`'s maximum; the reader's receive
/// buffer stays near its starting size while the reader reads nothing.
pub fn stuck_response_size() -> usize {
    let third = |path: &str| -> Option<usize> {
        fs::read_to_string(path).ok()?.split_whitespace().nth(2)?.parse().ok()
    };
    let buffers = third("/proc/sys/net/ipv4/tcp_wmem").unwrap_or(4 << 20)
        + third("/proc/sys/net/ipv4/tcp_rmem").map_or(6 << 20, |max| max.min(6 << 20));
    // Twice what could possibly be buffered, within the servers' 64 MiB file limit.
    (2 * buffers).clamp(16 << 20, 60 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_shows_differences() {
        let a = pattern(1000);
        assert_eq!(a.len(), 1000);
        assert_eq!(first_difference(&a, &a), None);
        assert_eq!(first_difference(&a, &a[..999]), Some(999));
        let mut b = a.clone();
        b[500] ^= 1;
        assert_eq!(first_difference(&a, &b), Some(500));
    }

    #[test]
    fn a_difference_shows_both_sides() {
        let shown = difference(b"Hello, world!\n", b"Hello world!\n").expect("they differ");
        assert_eq!(
            shown,
            "the body differs from byte 5 on (from byte 0, expected `Hello, world!\\n`, came \
             `Hello world!\\n`; 13 of 14 bytes came)"
        );
        let short = difference(b"0123456789abcdefghij", b"0123456789").expect("they differ");
        assert!(short.contains("expected `23456789abcdefghij`, came `23456789`"), "{short}");
        let none = difference(b"Hello", b"").expect("they differ");
        assert!(none.contains("expected `Hello`, came nothing; 0 of 5"), "{none}");
        assert_eq!(difference(b"same", b"same"), None);
    }

    #[test]
    fn site_is_made_and_removed() {
        let site = Site::create(100).unwrap();
        let base = site.base.clone();
        assert_eq!(fs::read(site.root.join("big.bin")).unwrap(), site.big);
        assert_eq!(fs::read_to_string(site.root.join("link-out")).unwrap(), site.secret);
        drop(site);
        assert!(!base.exists());
    }
}
