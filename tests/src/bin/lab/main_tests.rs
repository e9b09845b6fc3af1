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
fn shared_is_found_by_a_relative_path_inside_the_workbook_and_an_absolute_one_outside() {
    let workbook = Path::new("/work/book");
    let shared = workbook.join("shared");
    assert_eq!(path_between(Path::new("/work/book/labs/ana"), &shared, workbook), "../../shared");
    assert_eq!(path_between(Path::new("/tmp/ana"), &shared, workbook), "/work/book/shared");
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
    let shared = format!("shared = {{ path = \"{}\" }}", workbook.join("shared").display());
    assert!(manifest.contains(&shared), "{manifest}");
    assert_eq!(read("Cargo.lock"), fs::read_to_string(workbook.join("Cargo.lock")).expect("lock"));
    let main = read("src/main.rs");
    assert!(main.contains("Config::from_args(\"ana-ch04\"") && !main.contains("ch03-event-loop"));
    assert!(folder.join("src/event_loop_tests.rs").is_file(), "the tests come along");
    assert!(read("README.md").contains("--chapter 4\n"));

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
    let request = Request { chapter: chapters::chapter(2).expect("2"), folder, name: None };
    let refused = make(&request).expect_err("refused");
    assert!(matches!(refused, Failure::Refused(_)));
    assert!(!request.folder.exists());
}
