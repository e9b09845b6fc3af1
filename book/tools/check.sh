#!/usr/bin/env bash
# Checks that the book matches the code, and that it builds cleanly.
#
# Usage: book/tools/check.sh        (from anywhere in the repository)
#
# 1. The checks in book/tools/tests/book.rs: every include names an existing file and anchor,
#    every diff and table a page shows is fresh (book/tools/gen-diffs.sh would not change
#    it), a page shows a diff's table and folds the diff in <details>, no included code
#    line is wider than the book's code column, the summary lists exactly the pages that
#    exist, local links resolve, and every picture a page shows exists (a generated
#    timeline missing? book/tools/gen-timelines.sh draws them). And the quoted output: no
#    page types a program's output by hand (a console block that shows output includes a
#    session that book/tools/gen-sessions.sh ran), and every generated output (sessions,
#    timelines, the benchmark) was made from today's inputs, by the hashes in
#    book/src/generated/sessions.lock. `book/tools/gen-sessions.sh --status` lists the
#    stale ones and the command that makes each again.
# 2. The checks in book/tools/tests/prose/: the prose says what the code does. Every name in
#    backticks is in the code its page speaks of, or in book/names-outside.txt; every
#    Rust block of an answer builds against its chapter (or says why not); no count is
#    typed where it can drift (book/counts-allowed.txt lists the few that stay); every
#    fresh session shows what its `# expect:` lines say; a page's claims about its step's
#    files match the diff's table; the diagrams' words are held as a page's.
# 3. If mdbook is installed: `mdbook build` prints no warning or error, and no include
#    directive is left unexpanded in the HTML it writes. The build goes to a temporary
#    folder, so book/book/ is left alone.
#
# To fix a stale diff, run book/tools/gen-diffs.sh and look at what changed; a stale
# session, book/tools/gen-sessions.sh NAME.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

echo "== book: includes, diffs, tables, code width, summary, links, pictures, quoted output (book/tools/tests/book.rs)"
cargo test --quiet -p book-tools --test book

echo "== book: names, answers' code, counts, sessions' expectations, diffs' files, diagrams (book/tools/tests/prose)"
cargo test --quiet -p book-tools --test prose

if ! command -v mdbook >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/mdbook" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v mdbook >/dev/null 2>&1; then
    echo "== book: mdbook is not installed, skipping the build (cargo install --locked mdbook)"
    exit 0
fi

echo "== book: mdbook build"
built="$(mktemp -d)"
log="$built.log"
trap 'rm -rf "$built" "$log"' EXIT
mdbook build book --dest-dir "$built" >"$log" 2>&1 || {
    cat "$log"
    echo "mdbook build failed" >&2
    exit 1
}
if grep -E 'WARN|ERROR' "$log"; then
    echo "mdbook build printed warnings or errors" >&2
    exit 1
fi
# A directive mdBook could not expand would survive as text in the HTML.
if grep -rl --include='*.html' '{{#' "$built"; then
    echo "the pages above still contain an unexpanded include directive" >&2
    exit 1
fi
echo "book OK: $(find "$built" -maxdepth 1 -name '*.html' | wc -l) pages built"
