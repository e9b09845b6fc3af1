# Every chapter that keeps a connection alive: what a pipelined request costs, behind a wait and not.
# inputs: chapters shared/src shared/Cargo.toml tests/src tests/Cargo.toml
# timeout: 1800
@ cargo build -p suite
$ cargo run -p suite -- --only flood_behind 2>/dev/null | grep µs | sort | cut -d: -f1,3 \
    | sed 's/ the server//'
