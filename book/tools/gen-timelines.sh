#!/usr/bin/env bash
# Redraws the timeline pictures the chapters' pages show, one per chapter:
#
#   book/src/generated/timeline-ch04.svg   chapter 4 serving three clients, drawn from its --trace
#
# Each is drawn from a real run by `cargo run -p book-tools --bin timeline` (see
# book/tools/src/bin/timeline/main.rs): the chapter starts with --trace and a slow disk
# (--fs-delay-ms 200), client A asks for /sleep?ms=300, B for /hello 50 ms later and C for
# a file at 100 ms, each on its own connection, and the trace is drawn on one time axis:
# what the loop (and from chapter 6 the pool's worker) did, and when each client was
# accepted and answered. About two seconds a chapter; chapter 7 runs the scenario twice,
# with --backend poll and epoll, each beside 5,000 idle connections opened first (--idle N
# for another number; `ulimit -n` must allow them), and chapter 8 adds when each task ran
# and B's request zoomed in.
#
# Usage: book/tools/gen-timelines.sh [OUTPUT_DIR] [--chapter N]...
#        (default: every chapter, into book/src/generated; `--chapter 11` draws chapter
#        11's picture alone, as a page that shows only that one needs)
#
# Run it after changing how a chapter waits or what it traces, on a machine that is not
# busy with something else: the clients must connect on time (the tool runs a chapter again
# when one is more than 15 ms late) and the server must not wait for a CPU. The times differ
# a little from run to run, so unlike the diffs the pictures are not compared byte for
# byte: each picture records the hash of what it was drawn from (the chapter's folder, the
# shared crate's code, book/tools/src/bin/timeline) in book/src/generated/sessions.lock, and
# book/tools/tests/book.rs fails when those inputs changed after it was drawn
# ("... is stale (its inputs changed)"), and when a picture a page shows does not exist.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/book/src/generated"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
    out="$1"
    shift
fi
cd "$root"
ulimit -n 20000 2>/dev/null || true # chapter 7's idle connections need the descriptors
# The chapters asked for (`--chapter N`, passed on as they are), or every one.
[ $# -gt 0 ] || set -- --all
cargo run --quiet -p book-tools --bin timeline -- "$@" --out "$out"
