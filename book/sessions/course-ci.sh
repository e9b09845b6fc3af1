# A course's grading script, written out and run on the lab as made (the student's work
# would be another folder): a fresh lab, the student's src/ in it, both chapters whole.
# inputs: tests/src tests/Cargo.toml chapters/03-event-loop shared/src shared/Cargo.toml
# inputs: Cargo.toml Cargo.lock book/src/ch04-scheduler.md
# inputs: book/tools/src/bin/lab book/tools/Cargo.toml
# timeout: 900
@ rm -rf /tmp/ana-ch04
@ cargo build -p suite -p book-tools --bins
@ cargo run -q -p book-tools --bin lab -- 4 /tmp/ana-ch04
$ cat > /tmp/grade.sh <<'END'
#!/bin/sh
# grade.sh STUDENT N: holds the src/ of a student's lab to chapters N-1 and N, and leaves
# the reports in STUDENT. Run it in the workbook's folder; it exits 0 only if no check fails
# and none is skipped.
set -u
work="$(mktemp -d)" && trap 'rm -rf "$work"' EXIT
lab="$work/lab"
cargo run -q -p book-tools --bin lab -- --name student "$2" "$lab" > /dev/null || exit 2
rm -r "$lab/src" && cp -r "$1/src" "$lab/src"
cargo build -q --release --manifest-path "$lab/Cargo.toml" || exit 1
status=0
for chapter in $(($2 - 1)) "$2"; do
    cargo run -q -p suite -- --command "$lab/target/release/student" --chapter "$chapter" \
        > "$1/report-$chapter.txt" 2> /dev/null || status=1
    echo "chapter $chapter: $(tail -n 1 "$1/report-$chapter.txt")"
done
exit "$status"
END
# expect: chapter 3: {} checks: * 0 fail
# expect: chapter 4: {} checks: {} pass, 4 expected limitations, 10 fail
$ sh /tmp/grade.sh /tmp/ana-ch04 4; echo "exit status $?"
