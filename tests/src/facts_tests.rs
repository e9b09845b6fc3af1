use super::*;

#[test]
fn counts_and_lists_read_as_prose() {
    assert_eq!(in_words(5), "five");
    assert_eq!(in_words(58), "58");
    assert_eq!(chapter_ranges(&[4, 5, 6, 7, 8, 9, 10, 11]), "4 to 11");
    assert_eq!(chapter_ranges(&[5, 8, 10, 11]), "5, 8, 10 and 11");
    assert_eq!(chapter_ranges(&[7]), "7");
    assert_eq!(listed(&["`a`".to_string(), "`b`".to_string()]), "`a` and `b`");
}

#[test]
fn the_backend_flag_is_spelled_with_its_values() {
    assert_eq!(flags_of(Extra::Backend), "`--backend epoll` or `--backend poll`");
    assert_eq!(
        flags_of(Extra::Timeouts),
        "`--keep-alive-timeout`, `--header-timeout`, `--send-timeout`"
    );
}

/// The probes in [`ON_ONE_LOOP`] are the ones whose code starts a server with
/// `--threads 1`, found in their sources: in the probe's own function, or in a helper of
/// the same file that it calls.
#[test]
fn the_probes_on_one_loop_are_the_ones_that_ask_for_it() {
    let mut found = Vec::new();
    for (_, source) in crate::probes::sources() {
        // Each function, by name, with its text (up to the next function at the top).
        let mut functions: Vec<(String, String)> = Vec::new();
        for line in source.lines() {
            let head = line.strip_prefix("pub fn ").or_else(|| line.strip_prefix("fn "));
            match head {
                Some(head) => {
                    let name = head.split(['(', '<']).next().unwrap_or_default().to_string();
                    functions.push((name, String::new()));
                }
                None => {
                    if let Some((_, body)) = functions.last_mut() {
                        body.push_str(line);
                        body.push('\n');
                    }
                }
            }
        }
        let asks = |body: &str| body.contains("(\"--threads\", \"1\"");
        for probe in PROBES {
            let Some((_, body)) = functions.iter().find(|(name, _)| name == probe.name) else {
                continue;
            };
            let through_helper = functions
                .iter()
                .filter(|(name, helper)| name != probe.name && asks(helper))
                .any(|(name, _)| body.contains(&format!("{name}(")));
            if asks(body) || through_helper {
                found.push(probe.name);
            }
        }
    }
    let mut listed: Vec<&str> = ON_ONE_LOOP.to_vec();
    found.sort();
    listed.sort();
    assert_eq!(found, listed, "the modules' `on_one_loop` (ON_ONE_LOOP) and the probes differ");
}

/// The book includes the facts; this keeps them the same as the code.
#[test]
fn book_facts_are_current() {
    let path = workspace_root().join("book/src/generated/facts.md");
    let in_book = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        in_book == facts(),
        "{} is out of date with the suite; regenerate it with\n    \
         cargo run -p suite -- --facts > book/src/generated/facts.md",
        path.display()
    );
}

/// The `shared` page includes the table of extra flags; this keeps it the same as the code.
#[test]
fn book_extras_table_is_current() {
    let path = workspace_root().join("book/src/generated/extras.md");
    let in_book = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        in_book == extras_table(),
        "{} is out of date with shared/src/args.rs or the chapters; regenerate it with\n    \
         cargo run -p suite -- --extras-table > book/src/generated/extras.md",
        path.display()
    );
}
