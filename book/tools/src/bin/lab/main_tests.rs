use super::*;

fn parse(words: &[&str]) -> Result<Option<Request>, Refused> {
    parse_args(words.iter().map(|word| word.to_string()))
}

#[test]
fn the_chapter_is_one_that_has_a_chapter_before_it() {
    let request = parse(&["4", "/tmp/lab"]).expect("accepted").expect("not --help");
    assert_eq!(request.chapter.number, 4);
    assert_eq!(request.folder, PathBuf::from("/tmp/lab"));
    let last = CHAPTERS.last().expect("chapters").number;
    assert!(parse(&[&last.to_string(), "lab"]).is_ok());
    for number in ["1", "0", &(last + 1).to_string(), "four", "-3"] {
        let refused = parse(&[number, "lab"]).expect_err(number);
        assert!(refused.usage, "{refused:?}");
        assert!(!refused.message.contains('\n'), "one line: {refused:?}");
    }
    assert!(parse(&["4"]).is_err() && parse(&["4", "a", "b"]).is_err());
    assert!(parse(&["--help"]).expect("help").is_none());
}

#[test]
fn a_name_is_one_cargo_takes_and_not_a_chapters() {
    let request = parse(&["--name", "ana_2", "3", "lab"]).expect("accepted").expect("a request");
    assert_eq!(request.name.as_deref(), Some("ana_2"));
    for name in ["2ana", "ana lab", "", "ch03-event-loop"] {
        assert!(parse(&["--name", name, "3", "lab"]).is_err(), "{name}");
    }
    assert_eq!(name_from_folder(Path::new("/tmp/ana-ch04")), "ana-ch04");
    assert_eq!(name_from_folder(Path::new("labs/Ana's lab.v2")), "Ana-s-lab-v2");
    assert_eq!(name_from_folder(Path::new("04")), "lab-04");
    assert_eq!(name_from_folder(Path::new("/")), "lab");
}

#[test]
fn shared_is_vendored_unless_git_is_asked_for() {
    let request = parse(&["3", "lab"]).expect("accepted").expect("a request");
    assert_eq!(request.shared, Shared::Vendored);
    let request = parse(&["--vendor", "3", "lab"]).expect("accepted").expect("a request");
    assert_eq!(request.shared, Shared::Vendored);
    let pinned = ["--shared", "git=ssh://git@example.org/workbook.git@1a2b3c", "3", "lab"];
    let request = parse(&pinned).expect("accepted").expect("a request");
    let url = "ssh://git@example.org/workbook.git".to_string();
    assert_eq!(request.shared, Shared::Git { url, rev: "1a2b3c".to_string() });
    let request = parse(&["--shared", "git", "3", "lab"]).expect("accepted").expect("a request");
    assert_eq!(request.shared, Shared::GitOfWorkbook);
    for refused in [
        &["--shared", "path", "3", "lab"][..],
        &["--shared", "git=https://example.org/workbook", "3", "lab"],
        &["--shared", "git=@1a2b", "3", "lab"],
        &["--vendor", "--shared", "git", "3", "lab"],
        &["3", "lab", "--shared"],
    ] {
        let refused = parse(refused).expect_err("refused");
        assert!(refused.usage && !refused.message.contains('\n'), "{refused:?}");
    }
}

/// A temporary folder, removed however the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("lab-test-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_lab_holds_the_chapter_before_under_the_students_name() {
    let scratch = Scratch::new("made");
    let folder = scratch.0.join("ana-ch04");
    let request = parse(&["4", &folder.display().to_string()]).expect("ok").expect("a request");
    assert!(make(&request).is_ok());
    let read = |file: &str| fs::read_to_string(folder.join(file)).expect(file);
    let manifest = read("Cargo.toml");
    assert!(manifest.contains("name = \"ana-ch04\"\n") && manifest.contains("\n[workspace]\n"));
    let workbook = fs::canonicalize(chapters::workspace_root()).expect("the workbook");
    assert!(manifest.contains("shared = { path = \"shared\" }"), "{manifest}");
    assert!(folder.join("shared/src/lib.rs").is_file() && folder.join("shared/site").is_dir());
    assert_eq!(read("Cargo.lock"), fs::read_to_string(workbook.join("Cargo.lock")).expect("lock"));
    let main = read("src/main.rs");
    assert!(main.contains("Config::from_args(\"ana-ch04\"") && !main.contains("ch03-event-loop"));
    assert!(folder.join("src/event_loop_tests.rs").is_file(), "the tests come along");
    assert!(read("README.md").contains("--chapter 4\n"));
    // What fails as made, from the recorded grading, where there is one.
    let recorded = handed_out::recording_path(&workbook, 4).is_file();
    assert_eq!(read("README.md").contains("\n## What fails as handed out\n"), recorded);

    // A folder that is not empty is refused, and left as it was.
    let again = make(&request).expect_err("refused");
    assert!(matches!(again, Failure::Refused(Refused { usage: false, .. })));
    assert_eq!(read("src/main.rs"), main);
}

#[test]
fn a_lab_inside_chapters_is_refused_and_leaves_nothing() {
    let folder = chapters::workspace_root()
        .join("chapters")
        .join(format!("99-lab-test-{}", std::process::id()));
    let request = Request {
        chapter: chapters::chapter(2).expect("2"),
        folder,
        name: None,
        sketch: false,
        shared: Shared::Vendored,
        handout: false,
        quiet: false,
    };
    let refused = make(&request).expect_err("refused");
    assert!(matches!(refused, Failure::Refused(_)));
    assert!(!request.folder.exists());
}

#[test]
fn a_sketch_lab_holds_the_sketch_before_and_sketch_ns_idea() {
    let request = parse(&["--sketch", "4", "lab"]).expect("accepted").expect("a request");
    assert!(request.sketch);
    let four = chapters::chapter(4).expect("chapter 4");
    let three = chapters::chapter(3).expect("chapter 3");
    if !four.has_sketch() || !three.has_sketch() {
        suite::harness::print_uncaptured("lab: SKIPPED the sketch lab test: no sketches 3 and 4");
        return;
    }
    let scratch = Scratch::new("sketch");
    let folder = scratch.0.join("ana-sketch4");
    let request =
        parse(&["--sketch", "4", &folder.display().to_string()]).expect("ok").expect("a request");
    assert!(make(&request).is_ok());
    let read = |file: &str| fs::read_to_string(folder.join(file)).expect(file);
    let workbook = fs::canonicalize(chapters::workspace_root()).expect("the workbook");
    let sketch = fs::read_to_string(workbook.join(three.sketch_path())).expect("sketch 3");
    // The program is sketch 3, its name (and only its name) made the student's.
    assert_eq!(read("src/main.rs"), sketch.replace("ch03-sketch", "ana-sketch4"));
    let entries: Vec<_> = fs::read_dir(folder.join("src")).expect("src/").flatten().collect();
    assert_eq!(entries.len(), 1, "src/ holds main.rs alone");
    let manifest = read("Cargo.toml");
    assert!(manifest.contains("name = \"ana-sketch4\"\n") && manifest.contains("\n[workspace]\n"));
    assert!(manifest.contains("Sketch 4 of the Event Loop Workbook"), "{manifest}");
    // The assignment is sketch 4's own opening, and the grading asks for its checks.
    let readme = read("README.md");
    let idea = readme::idea(&fs::read_to_string(workbook.join(four.sketch_path())).expect("4"));
    let quoted: Vec<&str> = readme.lines().filter_map(|line| line.strip_prefix("> ")).collect();
    assert_eq!(quoted.join(" "), idea, "{readme}");
    assert!(readme.contains("--chapter 4 --sketch\n") && readme.contains("--chapter 3 --sketch\n"));
    assert!(readme.contains("`departing_clients`"), "{readme}");

    // Sketch 12 does not exist: refused, and nothing is made.
    let none = Request {
        chapter: chapters::chapter(11).expect("11"),
        folder: scratch.0.join("x"),
        name: None,
        sketch: true,
        shared: Shared::Vendored,
        handout: false,
        quiet: false,
    };
    if !chapters::chapter(11).expect("11").has_sketch() {
        assert!(matches!(make(&none), Err(Failure::Refused(_))));
        assert!(!none.folder.exists());
    }
}

#[test]
fn a_sketch_that_borrows_the_chapters_ring_gets_it_too() {
    let ten = chapters::chapter(10).expect("chapter 10");
    if !ten.has_sketch() || !chapters::chapter(11).expect("11").has_sketch() {
        suite::harness::print_uncaptured("lab: SKIPPED the sketch 11 lab test: no sketches 10, 11");
        return;
    }
    let scratch = Scratch::new("sketch11");
    let folder = scratch.0.join("ana-sketch11");
    let request =
        parse(&["--sketch", "11", &folder.display().to_string()]).expect("ok").expect("a request");
    assert!(make(&request).is_ok());
    // Sketch 10 says `#[path = "../src/ring.rs"]`, and ring.rs its `ring_tests.rs`.
    let chapter = chapters::workspace_root().join("chapters").join(ten.directory).join("src");
    for file in ["ring.rs", "ring_tests.rs"] {
        let copied = fs::read_to_string(folder.join("src").join(file)).expect(file);
        assert_eq!(copied, fs::read_to_string(chapter.join(file)).expect(file), "{file}");
    }
}

/// Every file under `folder`, but `target/`, as (path from `folder`, contents).
fn files(folder: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).expect("a folder").flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != "target" {
                pending.push(path);
            } else if path.is_file() {
                let relative = path.strip_prefix(folder).expect("inside").to_path_buf();
                found.push((relative, fs::read(&path).expect("a file")));
            }
        }
    }
    found
}

#[test]
fn a_handout_holds_the_grader_and_no_answer() {
    let scratch = Scratch::new("handout");
    let folder = scratch.0.join("ana-ch04");
    let request =
        parse(&["--handout", "4", &folder.display().to_string()]).expect("ok").expect("a request");
    assert!(request.handout);
    assert!(make(&request).is_ok());
    let handed = files(&folder);
    let has = |path: &str| handed.iter().any(|(file, _)| file == Path::new(path));
    for needed in ["src/main.rs", "shared/src/lib.rs", "grader/src/main.rs", "grader/Cargo.toml"] {
        assert!(has(needed), "{needed} is handed out");
    }
    // No chapter's folder, no page of the book, nothing of the lab command itself.
    for (file, _) in &handed {
        let path = file.display().to_string();
        assert!(!path.contains("chapters/") && !path.contains("book/"), "{path}");
        assert!(!path.contains("answers") && !path.starts_with("grader/src/bin"), "{path}");
    }
    // No file of chapter 4 or later that chapter 3 does not hold as it is, nor an answer.
    let root = chapters::workspace_root();
    let workbook = fs::canonicalize(&root).expect("the workbook");
    let three: Vec<Vec<u8>> =
        files(&root.join("chapters/03-event-loop")).into_iter().map(|(_, text)| text).collect();
    let mut answers = files(&root.join("book/src/answers"));
    answers.extend(
        files(&root.join("book/src")).into_iter().filter(|(f, _)| f.starts_with("answers")),
    );
    let mut later = answers;
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.number >= 4 && chapter.is_present()) {
        later.extend(files(&root.join("chapters").join(chapter.directory)));
    }
    for (file, text) in later.iter().filter(|(_, text)| !three.contains(text)) {
        let copied = handed.iter().find(|(_, handed)| handed == text);
        assert!(copied.is_none(), "{} is handed out as {:?}", file.display(), copied.map(|c| &c.0));
    }
    // Nothing names the workbook, so nothing leads back to it.
    for (file, text) in &handed {
        let text = String::from_utf8_lossy(text);
        assert!(
            !text.contains(&workbook.display().to_string()),
            "{} names the workbook",
            file.display()
        );
    }
    let readme = fs::read_to_string(folder.join("README.md")).expect("README.md");
    assert!(
        readme.contains(
            "cargo run --release -q -p suite -- --command target/release/ana-ch04 --chapter 4\n"
        ),
        "{readme}"
    );
    let manifest = fs::read_to_string(folder.join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains("[workspace]\nmembers = [\"grader\"]\n"), "{manifest}");
    // Cargo resolves the lab, grader and all, from its Cargo.lock alone (`cargo tree` reads
    // only this machine's dependencies, which the workbook has; `cargo metadata` would
    // want every platform's).
    let tree = std::process::Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["tree", "--offline", "--workspace", "--target", "host-tuple", "--depth", "1"])
        .current_dir(&folder)
        .output()
        .expect("cargo tree runs");
    assert!(tree.status.success(), "{}", String::from_utf8_lossy(&tree.stderr));
    let text = String::from_utf8_lossy(&tree.stdout);
    assert!(text.contains("suite v") && text.contains("ana-ch04 v"), "{text}");
}
