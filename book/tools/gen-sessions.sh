#!/usr/bin/env bash
# Runs the console sessions the book quotes, and writes what they printed:
#
#   book/sessions/NAME.sh                      what a page runs and shows
#   book/src/generated/sessions/NAME.txt       what it printed, which the page includes
#   book/src/generated/sessions.lock           NAME HASH: the hash of the session and its inputs
#
# Usage: book/tools/gen-sessions.sh [NAME...]     (all sessions when none is named)
#        book/tools/gen-sessions.sh --status      which generated pieces are stale
#        book/tools/gen-sessions.sh --help        the session format
#
# A session file, line by line (book/tools/src/bin/sessions/session.rs has the details):
#
#   # inputs: chapters/08-async shared/src shared/Cargo.toml
#                      what the output depends on: files, or folders taken recursively
#                      (their *.rs, *.toml, *.py, *.sh and *.html files), from the root
#   # timeout: 120     seconds the whole session may take (the default)
#   # ...              any other comment
#   $ command          shown on the page as `$ command`, and run
#   & command          shown as `$ command`, run in the background: a server the page
#                      runs in a terminal of its own
#   @ command          run, not shown, its output dropped: setup, such as
#                      `@ cargo build -p ch08-async` before the page's `cargo run`, or
#                      `@ book/tools/wait-for-port.sh 8080` until a server listens
#
#   # expect: PATTERN  above a shown command: a line of its output matches (`*`: any
#                      text, `{}`: a number); `# absent: PATTERN`, no line does;
#   # range: LOW..HIGH PATTERN
#                      every line that matches has its `{}` in the range: a figure the
#                      prose gives as a range, checked on every run
#   # quiet            it prints nothing, on purpose
#
# A session fails, and its output is not written, when a shown command prints nothing
# (unless it only starts, stops, waits, builds or writes a file, or is `# quiet`), when a
# suite summary counts a failure no `# expect:` of its command matches, or when an
# expectation does not hold (book/tools/src/bin/sessions/expect.rs).
#
# A line ending in `\` continues on the next (shown and run as one command). Every
# command runs from the repository's root, in one bash process, so `&`, `%1` and
# `kill %1` work as in a terminal. Each session has a time limit, and every process it
# started is stopped when it ends, whatever happens. A session that runs a server on a
# fixed port (8080) refuses to start while something else listens there.
#
# The output shows each command and then what it, and any background job, printed, in
# the order it was printed; cargo's status lines (Compiling, Finished, Running, ...) and
# build warnings are left out, the repository's path is shown as `.`, and a line wider
# than the book's code column (101 characters) is wrapped. book/tools/tests/book.rs fails when
# a session or one of its inputs changed since its output was made
# ("... is stale (its inputs changed): run book/tools/gen-sessions.sh NAME"), when a page
# types a program's output by hand instead of including a session, and when a line is
# wider than the column.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
exec cargo run --quiet -p book-tools --bin sessions -- "$@"
