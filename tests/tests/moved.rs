//! The book's tools moved from this package to `book-tools` (`book/tools/`); their old
//! names stay for one release and must say where the tools went, not fail in silence.

use std::process::Command;

#[test]
fn the_old_names_of_the_books_tools_say_where_they_went() {
    let stubs = [
        ("bench", env!("CARGO_BIN_EXE_bench"), "cargo run --release -p book-tools --bin bench"),
        ("load", env!("CARGO_BIN_EXE_load"), "cargo run --release -p book-tools --bin load"),
        ("timeline", env!("CARGO_BIN_EXE_timeline"), "cargo run -p book-tools --bin timeline"),
        ("sessions", env!("CARGO_BIN_EXE_sessions"), "cargo run -p book-tools --bin sessions"),
        ("lab", env!("CARGO_BIN_EXE_lab"), "cargo run -p book-tools --bin lab"),
    ];
    for (name, program, command) in stubs {
        let output = Command::new(program).args(["4", "/tmp/ana"]).output().expect("it runs");
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {output:?}");
        assert!(said.contains(&format!("{command} -- 4 /tmp/ana")), "{name} said: {said}");
    }
}
