use super::*;

use suite::chapters;

#[test]
fn names_literals_comments_and_layout_are_made_alike() {
    let one = "fn serve(port: u16) -> Result<(), String> { // the loop\n    let x = \"a\";\n}";
    let two = "fn   run(p: u16)->Result<(),String>{\n/* renamed */ let y = r#\"b\"#; }";
    assert_eq!(tokens(one), tokens(two));
    assert_eq!(
        tokens("'a' '\\n' &'a str b\"x\" 0..10 1_000u64"),
        ["'c'", "'c'", "&", "'v", "v", "\"s\"", "0", ".", ".", "0", "0"]
    );
    assert_eq!(tokens("match v { /* a /* nested */ comment */ }"), ["match", "v", "{", "}"]);
}

#[test]
fn a_score_counts_the_new_tokens_that_are_the_chapters_own() {
    let before: HashSet<u64> = HashSet::new();
    let text = "fn a() { let x = 1; let y = 2; let z = 3; let w = 4; let q = 5; }";
    let own: HashSet<u64> = fingerprints(&tokens(text)).into_iter().collect();
    let copied = score(text, &before, &own);
    assert_eq!((copied.new, copied.own, copied.percent()), (copied.tokens, copied.tokens, 100));
    let mine = score("fn b(v: u8) -> u8 { v }", &before, &own);
    assert_eq!((mine.own, mine.percent()), (0, 0));
    // What chapter N-1 had is not new, whoever wrote it.
    let old = score(text, &own, &HashSet::new());
    assert_eq!((old.new, old.percent()), (0, 0));
}

/// Copies `from` into `to`, every `.rs` file with its names changed, as a student who
/// copies and renames might.
fn copy_renamed(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("a folder");
    for entry in fs::read_dir(from).expect("a folder").flatten() {
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if source.is_dir() {
            copy_renamed(&source, &target);
        } else {
            let text = fs::read_to_string(&source).expect("a source file");
            let renamed = text.replace("Timer", "Alarm").replace("connection", "client");
            fs::write(target, renamed.replace("    ", "  ")).expect("a copy");
        }
    }
}

#[test]
fn a_copy_of_chapter_n_scores_high_and_chapter_n_minus_1_low() {
    let root = chapters::workspace_root();
    let (four, three) = (chapters::chapter(4).expect("4"), chapters::chapter(3).expect("3"));
    if !four.is_present() || !three.is_present() {
        suite::harness::print_uncaptured("lab: SKIPPED the similarity test: no chapters 3, 4");
        return;
    }
    let scratch = std::env::temp_dir().join(format!("lab-test-{}-similar", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    let copy = scratch.join("copy");
    copy_renamed(&root.join("chapters").join(four.directory).join("src"), &copy.join("src"));
    let (_, copied) = report(&copy, 4).expect("the copy is scored");
    let (_, handed_out) = report(&root.join("chapters").join(three.directory), 4).expect("3");
    let _ = fs::remove_dir_all(&scratch);
    assert!(copied.percent() >= 90, "a renamed copy of chapter 4: {copied:?}");
    assert!(handed_out.percent() <= 10, "chapter 3 as handed out: {handed_out:?}");
}
