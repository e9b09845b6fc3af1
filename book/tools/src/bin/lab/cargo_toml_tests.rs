use super::*;

const WORKSPACE: &str = r#"[workspace]
resolver = "2"
members = ["shared", "chapters/*", "tests"]

[workspace.package]
edition = "2021"
rust-version = "1.86"
publish = false

[workspace.dependencies]
shared = { path = "shared" }
nix = { version = "0.30", features = ["poll", "signal"] }  # the system calls
rstest = "0.26"
long = { version = "1", features = [
    "a",
    "b",
] }

[workspace.lints.rust]
unsafe_code = "warn"

[profile.release]
debug = "line-tables-only"
"#;

fn changes<'a>(locate: &'a dyn Fn(&str) -> Result<Fields, String>) -> Changes<'a> {
    Changes {
        was: "ch03-event-loop",
        name: "ana-ch04",
        description: "Chapter 4, written from chapter 3's program",
        locate,
        chapter_folder: "chapters/03-event-loop",
        workspace: Some(&[]),
    }
}

/// A path dependency as `path = "PREFIX/PATH"`.
fn path_under(prefix: &str) -> impl Fn(&str) -> Result<Fields, String> + '_ {
    move |path: &str| Ok(vec![("path".to_string(), string(&format!("{prefix}{path}")))])
}

#[test]
fn what_the_workspace_gave_is_written_out() {
    let workspace = Workspace::parse(WORKSPACE).expect("the workspace parses");
    let chapter = "[package]\nname = \"ch03-event-loop\"\nversion = \"0.1.0\"\n\
                   description = \"Chapter 3\"\nedition.workspace = true\n\
                   rust-version = { workspace = true }\n\n[dependencies]\n\
                   shared.workspace = true\nnix = { workspace = true, features = [\"event\", \
                   \"poll\"] }\nlong.workspace = true\n\n[dev-dependencies]\n\
                   rstest.workspace = true\n\n[lints]\nworkspace = true\n";
    let locate = path_under("vendor/");
    let made = workspace.standalone(chapter, &changes(&locate)).expect("it is rewritten");
    let expected = "[package]\nname = \"ana-ch04\"\nversion = \"0.1.0\"\n\
                    description = \"Chapter 4, written from chapter 3's program\"\n\
                    edition = \"2021\"\nrust-version = \"1.86\"\n\n[dependencies]\n\
                    shared = { path = \"vendor/shared\" }\n\
                    nix = { version = \"0.30\", features = [\"poll\", \"signal\", \"event\"] }\n\
                    long = { version = \"1\", features = [ \"a\", \"b\", ] }\n\n\
                    [dev-dependencies]\nrstest = \"0.26\"\n\n[lints.rust]\n\
                    unsafe_code = \"warn\"\n\n# A workspace of its own: this crate is not a \
                    member of the workbook's, wherever it is.\n[workspace]\n\n\
                    # As the workbook builds its chapters.\n[profile.release]\n\
                    debug = \"line-tables-only\"\n";
    assert_eq!(made, expected);
}

#[test]
fn a_path_of_the_chapters_own_is_made_to_lead_from_the_lab() {
    let workspace = Workspace::parse(WORKSPACE).expect("the workspace parses");
    let chapter = "[package]\nname = \"ch03-event-loop\"\n\n[dependencies]\n\
                   shared = { path = \"../../shared\" }\n";
    let locate = path_under("../workbook/");
    let made = workspace.standalone(chapter, &changes(&locate)).expect("it is rewritten");
    assert!(made.contains("shared = { path = \"../workbook/shared\" }\n"), "{made}");
    let absolute = "[dependencies]\nother = { path = \"/elsewhere\" }\n";
    let error = workspace.standalone(absolute, &changes(&locate)).expect_err("refused");
    assert!(error.contains("absolute path"), "{error}");
}

#[test]
fn shared_from_git_is_pinned_to_its_revision() {
    let workspace = Workspace::parse(WORKSPACE).expect("the workspace parses");
    let chapter = "[package]\nname = \"ch03-event-loop\"\n\n[dependencies]\n\
                   shared.workspace = true\n";
    let locate = |_: &str| {
        Ok(vec![
            ("git".to_string(), string("https://example.org/workbook.git")),
            ("rev".to_string(), string("0123abc")),
        ])
    };
    let made = workspace.standalone(chapter, &changes(&locate)).expect("it is rewritten");
    let pinned = "shared = { git = \"https://example.org/workbook.git\", rev = \"0123abc\" }\n";
    assert!(made.contains(pinned), "{made}");
}

#[test]
fn a_crate_the_lab_holds_has_no_workspace_of_its_own() {
    let workspace = Workspace::parse(WORKSPACE).expect("the workspace parses");
    let chapter = "[package]\nname = \"shared\"\n\n[dependencies]\nnix.workspace = true\n";
    let locate = path_under("");
    let member = Changes { was: "shared", name: "shared", workspace: None, ..changes(&locate) };
    let made = workspace.standalone(chapter, &member).expect("it is rewritten");
    assert!(!made.contains("[workspace]") && !made.contains("[profile"), "{made}");
    let root = Changes { workspace: Some(&["grader"]), ..changes(&locate) };
    let made = workspace.standalone(chapter, &root).expect("it is rewritten");
    assert!(made.contains("[workspace]\nmembers = [\"grader\"]\n"), "{made}");
}

#[test]
fn a_program_named_after_the_chapter_is_named_after_the_student() {
    let workspace = Workspace::parse(WORKSPACE).expect("the workspace parses");
    let chapter = "[package]\nname = \"ch03-event-loop\"\n\n[[bin]]\nname = \"ch03-event-loop\"\n\
                   path = \"src/main.rs\"\n\n[[bin]]\nname = \"helper\"\n";
    let locate = path_under("");
    let made = workspace.standalone(chapter, &changes(&locate)).expect("it is rewritten");
    assert!(made.starts_with("[package]\nname = \"ana-ch04\"\n\n[[bin]]\nname = \"ana-ch04\"\n"));
    assert!(made.contains("[[bin]]\nname = \"helper\"\n"), "{made}");
}

#[test]
fn what_is_not_understood_is_an_error() {
    let workspace = Workspace::parse(WORKSPACE).expect("the workspace parses");
    let locate = path_under("");
    for (chapter, says) in [
        ("[dependencies]\nmissing.workspace = true\n", "does not list it"),
        ("[package]\nlicense.workspace = true\n", "does not set it"),
        ("[dependencies.nix]\nworkspace = true\n", "not understood"),
        ("[dependencies]\nnix = 0.30\n", "expected a version or an inline table"),
    ] {
        let error = workspace.standalone(chapter, &changes(&locate)).expect_err(chapter);
        assert!(error.contains(says), "{chapter}: {error}");
    }
}

#[test]
fn every_chapter_of_the_workbook_stands_alone() {
    let root = suite::chapters::workspace_root();
    let workspace_text = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let workspace = Workspace::parse(&workspace_text).expect("the workbook's workspace parses");
    let locate = path_under("vendor/");
    for chapter in suite::chapters::CHAPTERS.iter().filter(|chapter| chapter.is_present()) {
        let path = root.join("chapters").join(chapter.directory).join("Cargo.toml");
        let text = std::fs::read_to_string(&path).expect("the chapter's Cargo.toml");
        let made = workspace.standalone(&text, &changes(&locate)).expect(chapter.name);
        assert!(!made.contains("workspace = true") && !made.contains(".workspace"), "{made}");
        assert!(made.contains("name = \"ana-ch04\"\n") && made.contains("\n[workspace]\n"));
        assert!(made.contains("shared = { path = \"vendor/shared\" }"), "{made}");
    }
}

#[test]
fn strings_and_comments_are_read_as_toml_has_them() {
    assert_eq!(strip_comment("a = \"#1\" # note"), "a = \"#1\" ");
    assert_eq!(depth("x = [\"]\", {"), 2);
    assert_eq!(unquote(r#""a\"b\\c""#).as_deref(), Ok("a\"b\\c"));
    assert_eq!(unquote(r"'C:\x'").as_deref(), Ok(r"C:\x"));
    assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
    assert_eq!(normalize("chapters/03-event-loop/../../shared"), "shared");
    assert_eq!(split_top_level("a = [1, 2], b = { c = 3, d = 4 }").len(), 2);
}
