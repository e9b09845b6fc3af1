# The property test on a parser broken on purpose, as the page says: a CR that is the
# last byte received is called a bare CR. The hidden steps make that change (the reader
# makes it by hand) and put the file back however the session ends.
# inputs: shared/src shared/Cargo.toml shared/tests/parser_fuzz.rs
# timeout: 600
@ cp shared/src/http/request.rs /tmp/hostile-request.rs
@ trap 'cp /tmp/hostile-request.rs shared/src/http/request.rs' EXIT INT TERM
@ sed -i "s/\[b'\\\\r'\] => LineEnd::HalfWay,/[b'\\\\r'] => LineEnd::Broken(\"bare CR in the request head\"),/" shared/src/http/request.rs
@ ! grep -q 'LineEnd::HalfWay,' shared/src/http/request.rs
@ cargo build --tests -p shared
$ cargo test -p shared --test parser_fuzz 2>&1 | grep -e '^prefix' -e '^input'
