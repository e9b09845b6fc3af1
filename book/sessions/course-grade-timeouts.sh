# The lab as made, built, and graded at chapters 3 and 4 on the timeout checks only
# (`--only timeout`: seconds, where the whole suite takes half a minute a chapter).
# inputs: tests/src tests/Cargo.toml chapters/03-event-loop shared/src shared/Cargo.toml
# inputs: Cargo.toml Cargo.lock book/src/ch04-scheduler.md
# inputs: book/tools/src/bin/lab book/tools/Cargo.toml
# timeout: 600
@ rm -rf /tmp/ana-ch04
@ cargo build -p suite -p book-tools --bins
@ cargo run -q -p book-tools --bin lab -- 4 /tmp/ana-ch04
$ cargo build --release --manifest-path /tmp/ana-ch04/Cargo.toml
$ /tmp/ana-ch04/target/release/ana-ch04 --help
# expect: 4 checks: 1 pass, 3 expected limitations, 0 fail
$ cargo run -p suite -- --command /tmp/ana-ch04/target/release/ana-ch04 --chapter 3 --only timeout
# expect: 4 checks: 1 pass, 0 expected limitations, 3 fail
$ cargo run -p suite -- --command /tmp/ana-ch04/target/release/ana-ch04 --chapter 4 \
    --only timeout; echo "exit status $?"
