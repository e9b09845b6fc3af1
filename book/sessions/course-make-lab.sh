# A lab for chapter 4: chapter 3's program in a crate of the student's own, and its README;
# then the same command again, which refuses the folder it has just filled.
# inputs: book/tools/src/bin/lab tests/src/chapters.rs tests/src/manifest.rs tests/src/flags.rs
# inputs: tests/src/probes tests/Cargo.toml chapters/03-event-loop Cargo.toml Cargo.lock
# inputs: book/src/ch04-scheduler.md
# inputs: book/tools/Cargo.toml
# timeout: 300
@ rm -rf /tmp/ana-ch04
@ cargo build -p book-tools --bin lab
$ cargo run -p book-tools --bin lab -- 4 /tmp/ana-ch04
# expect: *{} checks: {} pass, 4 expected limitations, 10 fail*
$ cat /tmp/ana-ch04/README.md
$ cargo run -p book-tools --bin lab -- 4 /tmp/ana-ch04; echo "exit status $?"
