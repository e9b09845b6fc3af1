use super::*;

use std::path::PathBuf;

use suite::chapters;

/// A temporary folder, removed however the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("lab-test-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("the scratch folder");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Makes a lab as the command line would.
fn make_lab(words: &[&str]) {
    let words = words.iter().map(|word| word.to_string());
    let request = crate::parse_args(words).expect("accepted").expect("a request");
    if let Err(
        crate::Failure::Broke(message) | crate::Failure::Refused(crate::Refused { message, .. }),
    ) = crate::make(&request)
    {
        panic!("the lab was not made: {message}");
    }
}

/// Every manifest and lock file in the lab (its `target/` aside).
fn manifests(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(folder).expect("a folder").flatten() {
        let path = entry.path();
        if path.is_dir() && entry.file_name() != "target" {
            manifests(&path, found);
        } else if matches!(entry.file_name().to_str(), Some("Cargo.toml" | "Cargo.lock")) {
            found.push(path);
        }
    }
}

/// What in the lab's manifests and lock points outside it: the workbook's own path, an
/// absolute path, or a relative one that climbs out.
fn outside(lab: &Path, workbook: &Path) -> Vec<String> {
    let mut files = Vec::new();
    manifests(lab, &mut files);
    assert!(files.len() >= 2, "a Cargo.toml and a Cargo.lock at least: {files:?}");
    let mut found = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("a manifest");
        if text.contains(&workbook.display().to_string()) {
            found.push(format!("{} names the workbook", file.display()));
        }
        for (at, _) in text.match_indices("path = \"") {
            let rest = &text[at + "path = \"".len()..];
            let path = &rest[..rest.find('"').unwrap_or(rest.len())];
            let from = file.parent().expect("a file is in a folder");
            let mut depth = from.strip_prefix(lab).expect("inside").components().count() as i64;
            for part in Path::new(path).components() {
                match part {
                    std::path::Component::ParentDir => depth -= 1,
                    std::path::Component::Normal(_) => depth += 1,
                    std::path::Component::CurDir => {}
                    _ => depth = i64::MIN / 2, // absolute
                }
                if depth < 0 {
                    found.push(format!("{}: path = {path:?}", file.display()));
                    break;
                }
            }
        }
    }
    found
}

/// `cargo` with `CARGO_HOME` and the target folder in the scratch, so that a test leaves
/// nothing in the user's: the registry is the user's own (linked, not copied), which holds
/// every crate the workbook's Cargo.lock names, so that nothing is downloaded.
fn cargo(scratch: &Path, lab: &Path, arguments: &[&str]) -> std::process::Output {
    let home = scratch.join("cargo-home");
    if !home.exists() {
        let user = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
            .expect("CARGO_HOME or HOME");
        fs::create_dir_all(&home).expect("a CARGO_HOME");
        std::os::unix::fs::symlink(user.join("registry"), home.join("registry"))
            .expect("the registry linked");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .args(arguments)
        .current_dir(lab)
        .env("CARGO_HOME", &home)
        .env("CARGO_TARGET_DIR", scratch.join("target"))
        .output()
        .expect("cargo runs")
}

fn succeeded(what: &str, output: &std::process::Output) {
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The machine's own target, for `cargo fetch` to fetch what it needs and no more.
fn host() -> String {
    let output = Command::new("rustc").arg("-vV").output().expect("rustc runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let host = text.lines().find_map(|line| line.strip_prefix("host: ")).expect("a host line");
    host.trim().to_string()
}

fn git(folder: &Path, arguments: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(folder)
        .args([
            "-c",
            "user.name=lab test",
            "-c",
            "user.email=lab@test",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(arguments)
        .output()
        .expect("git runs");
    succeeded(&format!("git {arguments:?}"), &output);
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Both ways a lab stands alone, built where the workbook cannot be reached from it.
#[test]
fn a_lab_builds_wherever_it_is_moved() {
    let scratch = Scratch::new("standalone");
    let workbook = fs::canonicalize(chapters::workspace_root()).expect("the workbook");

    // Vendored: made in one folder, moved to another, built offline from there.
    let made = scratch.0.join("made/ana-ch03");
    make_lab(&["--vendor", "3", &made.display().to_string()]);
    let moved = scratch.0.join("elsewhere/ana-ch03");
    fs::create_dir_all(moved.parent().expect("a parent")).expect("elsewhere/");
    fs::rename(&made, &moved).expect("the lab moves");
    let manifest = fs::read_to_string(moved.join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains("shared = { path = \"shared\" }"), "{manifest}");
    assert_eq!(outside(&moved, &workbook), Vec::<String>::new());
    succeeded("the moved lab builds", &cargo(&scratch.0, &moved, &["build", "--offline", "-q"]));
    let program = scratch.0.join("target/debug/ana-ch03");
    let help = Command::new(&program).arg("--help").output().expect("the lab's program runs");
    succeeded("its --help", &help);
    assert!(String::from_utf8_lossy(&help.stdout).contains("ana-ch03"));
    assert_eq!(outside(&moved, &workbook), Vec::<String>::new(), "after the build too");

    // From git: a repository of the workbook's shared (and the workspace manifest it
    // inherits from), pinned to its one commit.
    if Command::new("git").arg("--version").output().is_err() {
        suite::harness::print_uncaptured("lab: SKIPPED the --shared git part: no git here");
        return;
    }
    let repository = scratch.0.join("workbook-repository");
    fs::create_dir_all(repository.join("shared")).expect("the repository's folder");
    fs::copy(workbook.join("Cargo.toml"), repository.join("Cargo.toml")).expect("Cargo.toml");
    fs::copy(workbook.join("shared/Cargo.toml"), repository.join("shared/Cargo.toml"))
        .expect("shared/Cargo.toml");
    for folder in ["src", "site"] {
        copy_folder(&workbook.join("shared").join(folder), &repository.join("shared").join(folder))
            .expect("shared's files");
    }
    git(&repository, &["init", "-q"]);
    git(&repository, &["add", "-A"]);
    git(&repository, &["commit", "-q", "-m", "shared, for a lab"]);
    let rev = git(&repository, &["rev-parse", "HEAD"]);
    let url = format!("file://{}", repository.display());
    let lab = scratch.0.join("elsewhere/ana-git");
    make_lab(&["--shared", &format!("git={url}@{rev}"), "3", &lab.display().to_string()]);
    let manifest = fs::read_to_string(lab.join("Cargo.toml")).expect("Cargo.toml");
    let pinned = format!("shared = {{ git = \"{url}\", rev = \"{rev}\" }}");
    assert!(manifest.contains(&pinned), "{manifest}");
    assert!(!lab.join("shared").exists(), "nothing vendored");
    assert_eq!(outside(&lab, &workbook), Vec::<String>::new());
    // Cargo will not clone in --offline mode, so the fetch (of that repository alone:
    // the registry's crates are all in the cache) comes first.
    let fetch = cargo(&scratch.0, &lab, &["fetch", "-q", "--target", &host()]);
    succeeded("the pinned commit is fetched", &fetch);
    succeeded("the git lab builds", &cargo(&scratch.0, &lab, &["build", "--offline", "-q"]));
    let lock = fs::read_to_string(lab.join("Cargo.lock")).expect("Cargo.lock");
    assert!(lock.contains(&format!("source = \"git+{url}?rev={rev}#{rev}\"")), "{lock}");
}
