//! What differs between the systems the workbook runs on, said once: the system's name
//! for messages, and the one line with which chapters 10 and 11, which need Linux's
//! io_uring, refuse to start anywhere else.
//!
//! Chapters 1 to 6 wait with `poll(2)`, which every Unix has. Chapters 7 to 9 wait with
//! the system's own mechanism (epoll on Linux, kqueue on macOS and the BSDs; see
//! `args::Backend`). Chapters 10 and 11 are built everywhere, so that `cargo test
//! --workspace` works on every laptop, but run only on Linux.

/// The system we were built for, as its users write it: `Linux`, `macOS`, `FreeBSD`.
pub fn name() -> &'static str {
    match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "macOS",
        "freebsd" => "FreeBSD",
        "openbsd" => "OpenBSD",
        "netbsd" => "NetBSD",
        "dragonfly" => "DragonFly BSD",
        other => other,
    }
}

/// The line a chapter that needs `what` of Linux prints elsewhere:
/// `chapter 10 needs Linux's io_uring; this is macOS`.
pub fn refusal(chapter: u8, what: &str) -> String {
    format!("chapter {chapter} needs Linux's {what}; this is {}", name())
}

/// Off Linux, prints [`refusal`] on stderr and exits with status 2, as for a command line
/// that cannot work; on Linux, returns. The first thing chapters 10 and 11 do.
pub fn needs_linux(chapter: u8, what: &str) {
    if !cfg!(target_os = "linux") {
        crate::log!("{}", refusal(chapter, what));
        std::process::exit(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_is_one_line_that_names_this_system() {
        let line = refusal(10, "io_uring");
        assert_eq!(line, format!("chapter 10 needs Linux's io_uring; this is {}", name()));
        assert!(!line.contains('\n'));
        if cfg!(target_os = "macos") {
            assert_eq!(line, "chapter 10 needs Linux's io_uring; this is macOS");
        }
    }
}
