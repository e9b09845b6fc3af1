//! The command line, identical in every chapter.
//!
//! Parsed by hand with the standard library: twenty lines of `match` are easier to read
//! than a derive macro, and a reader can see exactly what each flag does. Later chapters
//! switch on extra flags with [`Extra`]; none of them changes the meaning of the basic ones.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::exit;
use std::time::Duration;

/// Flags that only some chapters understand. A chapter lists the ones it supports, and
/// the others are rejected as unknown, so `--help` never promises what a chapter can't do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Extra {
    /// `--keep-alive-timeout`, `--header-timeout` and `--send-timeout` (chapter 4 on: timers).
    Timeouts,
    /// `--workers` (chapter 6: the thread pool).
    Workers,
    /// `--backend epoll|poll` on Linux, `--backend kqueue|poll` on macOS and the BSDs
    /// (chapter 7: a second way to wait).
    Backend,
    /// `--upstream-limit` (chapter 8: a semaphore).
    UpstreamLimit,
    /// `--threads` (chapter 9: one loop per core).
    Threads,
}

/// Everything a chapter needs to know from its command line.
#[derive(Clone, Debug)]
pub struct Config {
    /// The program's name, such as `ch02-poll`. Also sent as the `Server` header.
    pub chapter: &'static str,
    /// A name or an address, an IPv6 one without brackets (`::1`; see [`crate::listener::url`]).
    pub host: String,
    pub port: u16,
    /// The folder `/files/` serves.
    pub root: PathBuf,
    /// Where `/upstream/` fetches from; `None` makes `/upstream/` a 404.
    pub upstream: Option<SocketAddr>,
    /// A simulated slow disk: every file open and read takes this much longer.
    pub fs_delay: Duration,
    /// Print one line per step of the loop on stderr.
    pub trace: bool,
    /// Close a keep-alive connection that has been idle this long (chapter 4 on).
    pub keep_alive_timeout: Duration,
    // ANCHOR: header_timeout
    /// Answer 408 to a client whose request has not come whole this long after it connected
    /// or, kept alive, after the first byte of that request: the body counts too (chapter
    /// 4 on). Between requests, the keep-alive timeout runs instead.
    pub header_timeout: Duration,
    // ANCHOR_END: header_timeout
    /// Close a client that takes none of a pending response for this long (chapter 4 on):
    /// nginx's `send_timeout`, the time allowed between two successful writes.
    pub send_timeout: Duration,
    /// Threads in the file-system pool (chapter 6).
    pub workers: usize,
    /// How the loop waits: the system's own (`Backend::NATIVE`, the default) or
    /// `Backend::Poll` (chapter 7).
    pub backend: Backend,
    /// At most this many fetches from the upstream at once; the others wait (chapter 8).
    pub upstream_limit: usize,
    /// How many event loops, each on a thread of its own (chapter 9).
    pub threads: usize,
}

/// The kernel mechanism a chapter's loop waits with (`--backend`, chapter 7 on). Each
/// system has one of its own, which keeps the list of sockets in the kernel: epoll on
/// Linux, kqueue on macOS and the BSDs (as Redis picks `ae_epoll.c` or `ae_kqueue.c`). Only
/// that one exists where we build, so a chapter cannot name the other's by mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    #[cfg(target_os = "linux")]
    Epoll,
    #[cfg(not(target_os = "linux"))]
    Kqueue,
    Poll,
}

impl Backend {
    /// This system's own mechanism, the default.
    #[cfg(target_os = "linux")]
    pub const NATIVE: Backend = Backend::Epoll;
    #[cfg(not(target_os = "linux"))]
    pub const NATIVE: Backend = Backend::Kqueue;

    /// `epoll`, `kqueue` or `poll`, as the flag and `/stats` spell it.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(target_os = "linux")]
            Backend::Epoll => "epoll",
            #[cfg(not(target_os = "linux"))]
            Backend::Kqueue => "kqueue",
            Backend::Poll => "poll",
        }
    }

    /// What `--backend` takes here: `epoll|poll` on Linux, `kqueue|poll` elsewhere.
    pub fn choices() -> String {
        format!("{}|{}", Backend::NATIVE.name(), Backend::Poll.name())
    }
}

/// The sample site shipped in the repository, served when no `--root` is given.
pub fn default_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/site"))
}

impl Config {
    /// The defaults, before any flag is read.
    pub fn new(chapter: &'static str) -> Config {
        Config {
            chapter,
            host: "127.0.0.1".to_string(),
            port: 8080,
            root: default_root(),
            upstream: None,
            fs_delay: Duration::ZERO,
            trace: false,
            keep_alive_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            workers: 4,
            backend: Backend::NATIVE,
            upstream_limit: 64,
            // One loop per core, as nginx's `worker_processes auto`.
            threads: std::thread::available_parallelism().map_or(1, |cores| cores.get()),
        }
    }

    /// Reads `std::env::args()`. Prints usage and exits 0 on `--help`; prints a one-line
    /// error and the usage and exits 2 on anything it does not understand.
    pub fn from_args(chapter: &'static str, extras: &[Extra]) -> Config {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match Config::parse(chapter, extras, &args) {
            Ok(Some(config)) => config,
            Ok(None) => {
                println!("{}", usage(chapter, extras));
                exit(0);
            }
            Err(message) => {
                crate::log!("{chapter}: {message}\n{}", usage(chapter, extras));
                exit(2);
            }
        }
    }

    /// The testable part of [`Config::from_args`]: `Ok(None)` means `--help` was asked for.
    pub fn parse(
        chapter: &'static str, extras: &[Extra], args: &[String],
    ) -> Result<Option<Config>, String> {
        let mut config = Config::new(chapter);
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            // Every flag but these two takes a value.
            match flag.as_str() {
                "--help" | "-h" => return Ok(None),
                "--trace" => {
                    config.trace = true;
                    continue;
                }
                _ => {}
            }
            let needs = |extra: Extra| -> Result<(), String> {
                if extras.contains(&extra) {
                    Ok(())
                } else {
                    Err(format!("unknown flag {flag} (not in this chapter)"))
                }
            };
            match flag.as_str() {
                "--host" | "--port" | "--root" | "--upstream" | "--fs-delay-ms" => {}
                "--keep-alive-timeout" | "--header-timeout" | "--send-timeout" => {
                    needs(Extra::Timeouts)?
                }
                "--workers" => needs(Extra::Workers)?,
                "--backend" => needs(Extra::Backend)?,
                "--upstream-limit" => needs(Extra::UpstreamLimit)?,
                "--threads" => needs(Extra::Threads)?,
                _ => return Err(format!("unknown flag {flag}")),
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |what: &str| format!("{flag} {value}: expected {what}");
            match flag.as_str() {
                // `[::1]`, as URLs write an IPv6 address, is `::1` to the resolver.
                "--host" => {
                    let bare = value.strip_prefix('[').and_then(|v| v.strip_suffix(']'));
                    config.host = bare.unwrap_or(value).to_string();
                }
                "--port" => config.port = value.parse().map_err(|_| bad("a port, 0-65535"))?,
                "--root" => config.root = PathBuf::from(value),
                "--upstream" => {
                    config.upstream = Some(value.parse().map_err(|_| bad("HOST:PORT"))?)
                }
                "--fs-delay-ms" => {
                    let ms: u64 = value.parse().map_err(|_| bad("milliseconds"))?;
                    config.fs_delay = Duration::from_millis(ms);
                }
                "--keep-alive-timeout" => {
                    config.keep_alive_timeout =
                        parse_seconds(value).ok_or_else(|| bad("seconds"))?
                }
                "--header-timeout" => {
                    config.header_timeout = parse_seconds(value).ok_or_else(|| bad("seconds"))?
                }
                "--send-timeout" => {
                    config.send_timeout = parse_seconds(value).ok_or_else(|| bad("seconds"))?
                }
                "--workers" => {
                    config.workers = value.parse().map_err(|_| bad("a number of threads"))?;
                    if config.workers == 0 {
                        return Err(bad("at least 1"));
                    }
                }
                "--threads" => {
                    config.threads = value.parse().map_err(|_| bad("a number of threads"))?;
                    if config.threads == 0 {
                        return Err(bad("at least 1"));
                    }
                }
                "--upstream-limit" => {
                    config.upstream_limit =
                        value.parse().map_err(|_| bad("a number of fetches"))?;
                    if config.upstream_limit == 0 {
                        return Err(bad("at least 1"));
                    }
                }
                "--backend" => {
                    config.backend = [Backend::NATIVE, Backend::Poll]
                        .into_iter()
                        .find(|backend| backend.name() == value)
                        .ok_or_else(|| bad(&Backend::choices().replace('|', " or ")))?
                }
                _ => unreachable!("every flag was matched above"),
            }
        }
        Ok(Some(config))
    }
}

/// `"5"`, `"0.25"`: seconds as a decimal, so tests can ask for short timeouts.
fn parse_seconds(text: &str) -> Option<Duration> {
    let seconds: f64 = text.parse().ok()?;
    if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 {
        Some(Duration::from_secs_f64(seconds))
    } else {
        None
    }
}

/// The `--help` text.
pub fn usage(chapter: &str, extras: &[Extra]) -> String {
    let pad = " ".repeat(chapter.len() + 7);
    let mut text = format!(
        "usage: {chapter} [--host 127.0.0.1] [--port 8080] [--root DIR] [--upstream HOST:PORT]\n\
         {pad}[--fs-delay-ms N] [--trace] [--help]"
    );
    if extras.contains(&Extra::Timeouts) {
        text.push_str(&format!(
            "\n{pad}[--keep-alive-timeout SECS] [--header-timeout SECS] [--send-timeout SECS]"
        ));
    }
    if extras.contains(&Extra::Threads) {
        text.push_str(&format!("\n{pad}[--threads N]"));
        // Only Linux's SO_REUSEPORT and FreeBSD's SO_REUSEPORT_LB balance new connections
        // over several listeners on one port; elsewhere the last one bound takes them all.
        if !cfg!(any(target_os = "linux", target_os = "freebsd")) {
            text.push_str(" (they share one listener: no SO_REUSEPORT balancing here)");
        }
    }
    if extras.contains(&Extra::UpstreamLimit) {
        text.push_str(&format!("\n{pad}[--upstream-limit N]"));
    }
    if extras.contains(&Extra::Backend) {
        text.push_str(&format!("\n{pad}[--backend {}]", Backend::choices()));
    }
    if extras.contains(&Extra::Workers) {
        text.push_str(&format!("\n{pad}[--workers N]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extras: &[Extra], args: &[&str]) -> Result<Option<Config>, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Config::parse("ch00-test", extras, &args)
    }

    #[test]
    fn defaults_and_flags() {
        let config =
            parse(&[], &["--port", "0", "--trace", "--fs-delay-ms", "20"]).unwrap().unwrap();
        assert_eq!(config.port, 0);
        assert!(config.trace);
        assert_eq!(config.fs_delay, Duration::from_millis(20));
        assert_eq!(config.host, "127.0.0.1");
    }

    #[test]
    fn ipv6_host_with_or_without_brackets() {
        for host in ["::1", "[::1]"] {
            let config = parse(&[], &["--host", host]).unwrap().unwrap();
            assert_eq!(config.host, "::1", "--host {host}");
        }
        let config = parse(&[], &["--host", "localhost"]).unwrap().unwrap();
        assert_eq!(config.host, "localhost");
    }

    #[test]
    fn help_and_errors() {
        assert!(parse(&[], &["--help"]).unwrap().is_none());
        assert!(parse(&[], &["--port", "70000"]).is_err());
        assert!(parse(&[], &["--port"]).is_err());
        assert!(parse(&[], &["--bogus"]).is_err());
        assert!(parse(&[], &["--upstream", "nonsense"]).is_err());
    }

    #[test]
    fn extras_only_where_enabled() {
        assert!(parse(&[], &["--workers", "2"]).is_err());
        let config = parse(&[Extra::Workers], &["--workers", "2"]).unwrap().unwrap();
        assert_eq!(config.workers, 2);
        let config = parse(&[Extra::Timeouts], &["--header-timeout", "0.5"]).unwrap().unwrap();
        assert_eq!(config.header_timeout, Duration::from_millis(500));
        assert!(parse(&[Extra::Timeouts], &["--header-timeout", "-1"]).is_err());
    }

    #[test]
    fn the_backends_are_this_systems() {
        let default = parse(&[Extra::Backend], &[]).unwrap().unwrap();
        assert_eq!(default.backend, Backend::NATIVE);
        let poll = parse(&[Extra::Backend], &["--backend", "poll"]).unwrap().unwrap();
        assert_eq!(poll.backend, Backend::Poll);
        let native = Backend::NATIVE.name();
        assert_eq!(native, if cfg!(target_os = "linux") { "epoll" } else { "kqueue" });
        assert!(parse(&[Extra::Backend], &["--backend", native]).is_ok());
        // The other system's mechanism is no choice here, and the error says what is.
        let other = if native == "epoll" { "kqueue" } else { "epoll" };
        let error = parse(&[Extra::Backend], &["--backend", other]).unwrap_err();
        assert_eq!(error, format!("--backend {other}: expected {native} or poll"));
        let usage = usage("ch07-epoll", &[Extra::Backend]);
        assert!(usage.ends_with(&format!("[--backend {native}|poll]")), "{usage}");
    }
}
