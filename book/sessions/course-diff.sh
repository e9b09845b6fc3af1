# A lab as made, against the chapter it was made from and against the chapter it is to be.
# inputs: book/tools/src/bin/lab tests/src/chapters.rs book/tools/Cargo.toml Cargo.toml
# inputs: chapters/03-event-loop chapters/04-scheduler
@ rm -rf /tmp/ana-ch04
@ cargo build -p book-tools --bin lab
@ cargo run -q -p book-tools --bin lab -- 4 /tmp/ana-ch04
$ diff -ru chapters/03-event-loop/src /tmp/ana-ch04/src
$ diff -rq chapters/04-scheduler/src /tmp/ana-ch04/src
