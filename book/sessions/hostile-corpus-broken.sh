# The corpus on a parser broken on purpose, as the page says: Content-Length wins when a
# request has both it and Transfer-Encoding. The hidden steps make that change (the
# reader makes it by hand) and put the file back however the session ends.
# inputs: chapters/04-scheduler shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 900
@ cp shared/src/http/request.rs /tmp/hostile-request.rs
@ trap 'cp /tmp/hostile-request.rs shared/src/http/request.rs' EXIT INT TERM
@ sed -i 's/if let Some(chunked) = facts.transfer_encoding {/if let (Some(chunked), None) = (facts.transfer_encoding, facts.content_length) {/' shared/src/http/request.rs
@ sed -i '/Two ways to say where the body ends/,+3d' shared/src/http/request.rs
@ grep -q 'if let (Some(chunked), None)' shared/src/http/request.rs
@ ! grep -q 'both Content-Length and Transfer-Encoding' shared/src/http/request.rs
@ cargo build -p suite
# expect: FAIL: 3 of {} corpus rows failed
# expect: 1 check: 0 pass, 0 expected limitations, 1 fail
$ cargo run -p suite -- --chapter 4 --only corpus
