//! The servers under test: the chapters, built in release mode, and nginx as the peer.
//!
//! Every round starts a fresh server and kills it afterwards, so one scenario's leftovers
//! (a grown buffer, ten thousand closed sockets) never weigh on the next, and the peak
//! memory we read from `/proc` belongs to that scenario alone.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{run_bounded, Guard};

/// How long a server may take to start listening.
const START_LIMIT: Duration = Duration::from_secs(5);

/// Idle connections and keep-alive connections must outlive the longest scenario: chapters
/// 4 and later close them after a few seconds by default, which would skew the idle sweep.
const PATIENT_TIMEOUT_SECS: u32 = 120;

pub enum Kind {
    /// `flags` are the chapter flags beyond the basic ones that this chapter accepts.
    Chapter { flags: Vec<String> },
    /// `status_page`: built with the stub_status module (it says how many connections).
    Nginx { status_page: bool },
}

pub struct Target {
    /// `ch02-poll`, or `nginx`.
    pub name: String,
    pub kind: Kind,
    pub program: PathBuf,
}

/// What every server serves: a root folder with the 8 MiB file, and a scratch folder for
/// nginx's configuration and the servers' logs.
pub struct Site {
    pub root: PathBuf,
    pub scratch: PathBuf,
}

pub const BIG_FILE: &str = "big.bin";
pub const BIG_FILE_SIZE: usize = 8 * 1024 * 1024;

impl Site {
    /// Writes the 8 MiB file: bytes from a tiny pseudo-random generator, so that nothing
    /// along the way could make an unfairly small job of a file of zeros.
    pub fn create(folder: &Path) -> std::io::Result<Site> {
        let root = folder.join("root");
        let scratch = folder.join("scratch");
        fs::create_dir_all(&root)?;
        fs::create_dir_all(&scratch)?;
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut bytes = Vec::with_capacity(BIG_FILE_SIZE);
        while bytes.len() < BIG_FILE_SIZE {
            // xorshift64: good enough to look random, and the same file every run.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.extend_from_slice(&state.to_le_bytes());
        }
        fs::write(root.join(BIG_FILE), &bytes)?;
        Ok(Site { root, scratch })
    }
}

/// A running server. Dropping it kills it.
pub struct Server {
    pub name: String,
    pub address: SocketAddr,
    pub guard: Guard,
}

impl Server {
    pub fn pid(&self) -> u32 {
        self.guard.pid()
    }

    /// The server's peak resident memory so far, in KiB (`VmHWM`: the "high water mark",
    /// read by the suite's [`suite::resources::memory`]).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        suite::resources::memory(self.pid()).map(|memory| memory.peak / 1024)
    }
}

/// The chapters present under `chapters/`, as (number, package name), in order: a folder
/// `03-event-loop` is package and binary `ch03-event-loop`.
pub fn discover_chapters(workspace: &Path) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(workspace.join("chapters")) else {
        return found;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let number = name
            .split('-')
            .next()
            .and_then(|digits| digits.parse().ok());
        if let Some(number) = number {
            if entry.path().join("Cargo.toml").is_file() {
                found.push((number, format!("ch{name}")));
            }
        }
    }
    found.sort();
    found
}

/// `cargo build --release -p PACKAGE --bin BIN`, and where cargo put the program. Cargo's
/// own JSON messages say where, so this works whatever `CARGO_TARGET_DIR` is.
pub fn build(workspace: &Path, package: &str, bin: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace)
        .args([
            "build",
            "--release",
            "--message-format=json-render-diagnostics",
        ])
        .args(["-p", package, "--bin", bin])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit()) // the reader sees cargo's progress and any error
        .output()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if !output.status.success() {
        return Err(format!("cargo build -p {package} failed"));
    }
    let json = String::from_utf8_lossy(&output.stdout);
    json.lines()
        .filter(|line| line.contains("\"reason\":\"compiler-artifact\""))
        .filter_map(|line| json_string(line, "executable"))
        .map(PathBuf::from)
        .find(|path| path.file_name().is_some_and(|name| name == bin))
        .ok_or_else(|| format!("cargo built {package} but did not say where {bin} is"))
}

/// The string value of `"key":"..."` in one line of cargo's JSON (paths rarely need
/// escapes; a path that has them is unescaped for `\\` and `\"`, the only ones cargo uses).
fn json_string(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut value = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => value.push(chars.next()?),
            c => value.push(c),
        }
    }
    None
}

impl Target {
    /// A chapter, built. Asks its `--help` which optional flags it knows, to lengthen its
    /// timeouts where it has them.
    pub fn chapter(workspace: &Path, package: &str) -> Result<Target, String> {
        let program = build(workspace, package, package)?;
        let help = run_bounded(Command::new(&program).arg("--help"), START_LIMIT)
            .map_err(|error| format!("cannot run {package}: {error}"))?;
        let mut flags = Vec::new();
        for flag in ["--keep-alive-timeout", "--header-timeout"] {
            if help.stdout.contains(flag) || help.stderr.contains(flag) {
                flags.push(flag.to_string());
                flags.push(PATIENT_TIMEOUT_SECS.to_string());
            }
        }
        Ok(Target {
            name: package.to_string(),
            kind: Kind::Chapter { flags },
            program,
        })
    }

    pub fn nginx(program: PathBuf) -> Target {
        // `nginx -V` lists the modules it was built with (on stderr).
        let status_page = run_bounded(Command::new(&program).arg("-V"), START_LIMIT)
            .map(|output| output.stderr.contains("http_stub_status_module"))
            .unwrap_or(false);
        Target {
            name: "nginx".to_string(),
            kind: Kind::Nginx { status_page },
            program,
        }
    }

    pub fn is_nginx(&self) -> bool {
        matches!(self.kind, Kind::Nginx { .. })
    }

    /// Starts the server on a free port of 127.0.0.1, and waits until it listens.
    pub fn start(&self, site: &Site) -> Result<Server, String> {
        match &self.kind {
            Kind::Chapter { flags } => self.start_chapter(site, flags, &[], START_LIMIT),
            Kind::Nginx { status_page } => self.start_nginx(site, *status_page),
        }
    }

    /// Starts a chapter inside another program, such as `valgrind --tool=dhat`, which
    /// runs the chapter in the same process (so the PID is still the server's).
    pub fn start_under(&self, site: &Site, wrapper: &[String]) -> Result<Server, String> {
        match &self.kind {
            Kind::Chapter { flags } => {
                self.start_chapter(site, flags, wrapper, Duration::from_secs(30))
            }
            Kind::Nginx { .. } => Err("only chapters run under a wrapper".into()),
        }
    }

    // ANCHOR: start_chapter
    fn start_chapter(
        &self, site: &Site, flags: &[String], wrapper: &[String], limit: Duration,
    ) -> Result<Server, String> {
        let log = log_file(site, &self.name)?;
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(&self.program);
                command
            }
            None => Command::new(&self.program),
        };
        command
            .args(["--host", "127.0.0.1", "--port", "0", "--root"])
            .arg(&site.root)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        let mut guard = Guard::spawn(&mut command)
            .map_err(|error| format!("cannot start {}: {error}", self.name))?;

        // The contract: the first line on stdout is `listening on http://HOST:PORT`. Read
        // it on a thread so that a server that never says it cannot hang us; the thread
        // then drains stdout until the server exits, so the pipe can never fill up.
        let stdout = guard.child().stdout.take();
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = sender.send(first);
            }
            for _ in lines {}
        });
        let line = match receiver.recv_timeout(limit) {
            Ok(line) => line,
            Err(_) => {
                return Err(match guard.exited() {
                    Some(status) => format!("{} exited ({status}) before listening", self.name),
                    None => format!(
                        "{} did not start listening within {} s",
                        self.name,
                        limit.as_secs()
                    ),
                })
            }
        };
        let address = line
            .strip_prefix("listening on http://")
            .and_then(|address| address.trim().parse().ok())
            .ok_or_else(|| format!("{}: unexpected first line {line:?}", self.name))?;
        Ok(Server {
            name: self.name.clone(),
            address,
            guard,
        })
    }
    // ANCHOR_END: start_chapter

    fn start_nginx(&self, site: &Site, status_page: bool) -> Result<Server, String> {
        // nginx cannot tell us which port it got for port 0, so we pick a free port
        // ourselves. Another program could take it in between: then we try another.
        let mut last_error = String::new();
        for _attempt in 0..3 {
            let port = free_port()?;
            let folder = site.scratch.join(format!("nginx-{port}"));
            fs::create_dir_all(&folder).map_err(|error| error.to_string())?;
            let config = folder.join("nginx.conf");
            fs::write(
                &config,
                nginx_config(&folder, &site.root, port, status_page),
            )
            .map_err(|error| format!("cannot write {}: {error}", config.display()))?;
            let log = log_file(site, "nginx")?;
            let mut command = Command::new(&self.program);
            command
                .arg("-p")
                .arg(&folder)
                .arg("-e")
                .arg(folder.join("error.log"))
                .arg("-c")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log);
            let mut guard = Guard::spawn(&mut command)
                .map_err(|error| format!("cannot start nginx: {error}"))?;
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + START_LIMIT;
            loop {
                if TcpStream::connect_timeout(&address, Duration::from_millis(100)).is_ok() {
                    return Ok(Server {
                        name: self.name.clone(),
                        address,
                        guard,
                    });
                }
                if let Some(status) = guard.exited() {
                    let log = fs::read_to_string(folder.join("error.log")).unwrap_or_default();
                    last_error = format!("nginx exited ({status}): {}", log.trim());
                    break;
                }
                if Instant::now() >= deadline {
                    return Err("nginx did not start listening within 5 s".into());
                }
                thread::sleep(Duration::from_millis(10));
            }
        }
        Err(last_error)
    }
}

/// Appends a server's stderr to a log in the scratch folder, for a post-mortem.
fn log_file(site: &Site, name: &str) -> Result<File, String> {
    File::options()
        .create(true)
        .append(true)
        .open(site.scratch.join(format!("{name}.stderr")))
        .map_err(|error| format!("cannot open a log file: {error}"))
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|error| error.to_string())?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|error| error.to_string())
}

// ANCHOR: nginx_config
/// nginx made comparable to a chapter: one process that serves (its PID is the one we
/// measure), the same routes and file, no access log to write, and keep-alive and header
/// timeouts long enough for every scenario.
fn nginx_config(folder: &Path, root: &Path, port: u16, status_page: bool) -> String {
    // nginx raises its own soft limit up to our hard one (`worker_rlimit_nofile`); each
    // idle connection costs it one descriptor.
    let connections = suite::resources::own_descriptor_limits()
        .map_or(1024, |limits| limits.hard)
        .min(65_536);
    // `/stats` like the chapters': "Active connections: N" tells us idle clients are in.
    let stats = if status_page {
        "location = /stats { stub_status; }"
    } else {
        ""
    };
    let folder = folder.display();
    format!(
        "# Written by the workbook's benchmark harness (tests/src/bin/bench).
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile {connections};
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections {connections}; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    keepalive_requests 100000000;
    keepalive_timeout {PATIENT_TIMEOUT_SECS}s;
    client_header_timeout {PATIENT_TIMEOUT_SECS}s;
    sendfile on;
    types {{ application/octet-stream bin; }}
    server {{
        listen 127.0.0.1:{port} backlog=1024;
        location = /hello {{ default_type text/plain; return 200 \"Hello, world!\\n\"; }}
        {stats}
        location /files/ {{ alias {root}/; }}
    }}
}}
",
        root = root.display(),
    )
}
// ANCHOR_END: nginx_config
