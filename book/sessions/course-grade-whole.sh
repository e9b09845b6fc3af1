# The lab as made, held to the whole of chapter 4: its rows of the capability table and its
# summary (about half a minute). Then the one check of an older row that fails, alone.
# inputs: tests/src tests/Cargo.toml chapters/03-event-loop shared/src shared/Cargo.toml
# inputs: Cargo.toml Cargo.lock book/src/ch04-scheduler.md
# inputs: book/tools/src/bin/lab book/tools/Cargo.toml
# timeout: 900
@ rm -rf /tmp/ana-ch04
@ cargo build -p suite -p book-tools --bins
@ cargo run -q -p book-tools --bin lab -- 4 /tmp/ana-ch04
@ cargo build --release --manifest-path /tmp/ana-ch04/Cargo.toml
# expect: FAIL  graceful shutdown on SIGTERM (expected: has it): 1 of 2 checks fails; broken: prompt_shutdown
# expect: {} checks: {} pass, 4 expected limitations, 10 fail
$ cargo run -p suite -- --command /tmp/ana-ch04/target/release/ana-ch04 --chapter 4 \
    2>/dev/null | sed -n '/^by row/,$p'
$ cargo run -p suite -- --command /tmp/ana-ch04/target/release/ana-ch04 --chapter 4 \
    --only prompt_shutdown 2>/dev/null | head -n 4
