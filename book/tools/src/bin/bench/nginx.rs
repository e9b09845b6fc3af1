//! nginx, the yardstick: configured to serve what the chapters serve, the same way.
//!
//! Two of them. `nginx` is one process that serves (`master_process off`), as
//! single-threaded as chapters 3-8. `nginx x2` is nginx as it is usually run: a master and
//! two worker processes sharing one listening socket, the peer for chapter 9's two loops.
//! `/echo` needs the echo module (Debian: `libnginx-mod-http-echo`, which `nginx-light`
//! brings along); without it, the echo scenario reports nginx as not measured.

use std::ffi::OsStr;
use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{run_bounded, Guard};
use crate::targets::{log_file, Kind, Server, Site, Target, PATIENT_TIMEOUT_SECS, START_LIMIT};

impl Target {
    /// nginx with `workers` worker processes (1: a single process, no master).
    pub fn nginx(program: PathBuf, workers: usize) -> Target {
        // `nginx -V` lists what it was built with (on stderr).
        let built_with = run_bounded(Command::new(&program).arg("-V"), START_LIMIT)
            .map(|output| output.stderr)
            .unwrap_or_default();
        let status_page = built_with.contains("http_stub_status_module");
        let echo = echo_module(&built_with);
        let name = if workers == 1 { "nginx".to_string() } else { format!("nginx x{workers}") };
        Target { name, kind: Kind::Nginx { status_page, echo, workers }, program, loops: workers }
    }
}

/// How this nginx gets the echo module: `Some("")` when it is built in, `Some(line)` with
/// the `load_module` line when it is a dynamic module in nginx's modules folder, `None`
/// when it has none.
fn echo_module(built_with: &str) -> Option<String> {
    if built_with.contains("echo-nginx-module") {
        return Some(String::new());
    }
    let folder = built_with
        .split_whitespace()
        .find_map(|word| word.strip_prefix("--modules-path="))
        .unwrap_or("/usr/lib/nginx/modules");
    let module = Path::new(folder).join("ngx_http_echo_module.so");
    module.is_file().then(|| format!("load_module {};", module.display()))
}

/// Starts nginx on a free port, with `environment` added to its own, and waits until it
/// answers.
pub fn start(
    target: &Target, site: &Site, environment: &[(&str, &OsStr)],
) -> Result<Server, String> {
    let Kind::Nginx { status_page, echo, workers } = &target.kind else {
        return Err(format!("{} is not nginx", target.name));
    };
    // nginx cannot tell us which port it got for port 0, so we pick a free port ourselves.
    // Another program could take it in between: then we try another.
    let mut last_error = String::new();
    for _attempt in 0..3 {
        let port = free_port()?;
        let folder = site.scratch.join(format!("nginx-{port}"));
        fs::create_dir_all(&folder).map_err(|error| error.to_string())?;
        let config = folder.join("nginx.conf");
        let text = config_text(&folder, &site.root, port, *status_page, echo.as_deref(), *workers);
        fs::write(&config, text)
            .map_err(|error| format!("cannot write {}: {error}", config.display()))?;
        let log = log_file(site, &target.name.replace(' ', "-"))?;
        let mut command = Command::new(&target.program);
        command
            .envs(environment.iter().copied())
            .arg("-p")
            .arg(&folder)
            .arg("-e")
            .arg(folder.join("error.log"))
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SIGTERM is nginx's fast shutdown: the master stops its workers, then itself.
        let mut guard = Guard::spawn(&mut command)
            .map_err(|error| format!("cannot start nginx: {error}"))?
            .stop_with("TERM");
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + START_LIMIT;
        loop {
            // The master listens before its workers exist: a connection proves only
            // that. The probe before every measurement waits for an answer.
            if TcpStream::connect_timeout(&address, Duration::from_millis(100)).is_ok() {
                return Ok(Server { name: target.name.clone(), address, guard });
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

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|error| error.to_string())?;
    listener.local_addr().map(|address| address.port()).map_err(|error| error.to_string())
}

// ANCHOR: nginx_config
/// nginx made comparable to a chapter: the same routes and file, no access log to write,
/// keep-alive and header timeouts long enough for every scenario, and request bodies kept
/// in memory (by default nginx writes a body over 16 KiB to a temporary file, which no
/// chapter does).
fn config_text(
    folder: &Path, root: &Path, port: u16, status_page: bool, echo: Option<&str>, workers: usize,
) -> String {
    // nginx raises its own soft limit up to our hard one (`worker_rlimit_nofile`); each
    // idle connection costs it one descriptor.
    let connections =
        suite::resources::own_descriptor_limits().map_or(1024, |limits| limits.hard).min(65_536);
    // One worker: that process serves, no master. More: a master and its workers.
    let master = if workers == 1 { "off" } else { "on" };
    // `/stats` like the chapters': "Active connections: N" tells us idle clients are in.
    let stats = if status_page { "location = /stats { stub_status; }" } else { "" };
    let (load_echo, echo_location) = match echo {
        Some(load) => (
            load,
            "location = /echo { default_type application/octet-stream; \
             echo_read_request_body; echo_request_body; }",
        ),
        None => ("", ""),
    };
    let folder = folder.display();
    format!(
        "# Written by the workbook's benchmark harness (book/tools/src/bin/bench).
{load_echo}
daemon off;
master_process {master};
worker_processes {workers};
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
    client_max_body_size 1m;
    client_body_buffer_size 1m;
    keepalive_requests 100000000;
    keepalive_timeout {PATIENT_TIMEOUT_SECS}s;
    client_header_timeout {PATIENT_TIMEOUT_SECS}s;
    sendfile on;
    types {{ application/octet-stream bin; }}
    server {{
        listen 127.0.0.1:{port} backlog=1024;
        location = /hello {{ default_type text/plain; return 200 \"Hello, world!\\n\"; }}
        {stats}
        {echo_location}
        location /files/ {{ alias {root}/; }}
    }}
}}
",
        root = root.display(),
    )
}
// ANCHOR_END: nginx_config

/// What the report says about how nginx ran.
pub fn describe(version: &str, targets: &[&Target]) -> String {
    let mut ways = Vec::new();
    let mut echo = false;
    for target in targets {
        let Kind::Nginx { workers, echo: module, .. } = &target.kind else { continue };
        echo |= module.is_some();
        ways.push(if *workers == 1 {
            "`nginx`: one process that serves (`master_process off`, `worker_processes 1`)"
                .to_string()
        } else {
            format!(
                "`{}`: a master and {workers} worker processes sharing one listening socket \
                 (`worker_processes {workers}`, nginx's defaults otherwise)",
                target.name
            )
        });
    }
    let echo = if echo {
        "; `/echo` by the echo module (`echo_read_request_body`, `echo_request_body`; its \
         answer is chunked), bodies kept in memory"
    } else {
        "; no echo module, so no `/echo`"
    };
    format!("{version}; {}; access log off, `sendfile on`{echo}", ways.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_echo_module_built_in_or_beside_nginx() {
        assert_eq!(echo_module("--add-module=../echo-nginx-module"), Some(String::new()));
        assert_eq!(echo_module("--modules-path=/nowhere/at/all"), None);
    }

    #[test]
    fn one_worker_has_no_master() {
        let text = config_text(Path::new("/t"), Path::new("/r"), 8080, true, None, 1);
        assert!(text.contains("master_process off;") && text.contains("worker_processes 1;"));
        let text = config_text(Path::new("/t"), Path::new("/r"), 8080, true, Some("x;"), 2);
        assert!(text.contains("master_process on;") && text.contains("worker_processes 2;"));
        assert!(text.contains("echo_request_body") && text.starts_with("# Written"));
    }
}
