#!/usr/bin/env bash
# Regenerates the "what changed" diffs the book shows: book/src/generated/diff-01-02.diff
# is chapter 1 -> chapter 2, and so on. It makes exactly the diffs that some page
# includes, so a chapter whose page is not written yet costs nothing here.
#
# Usage: book/tools/gen-diffs.sh [OUTPUT_DIR]    (default: book/src/generated)
#
# Each diff is what a reader gets from `diff -ru` on the two chapters' Cargo.toml and src/
# (nothing else in a chapter folder is part of the lesson), with one change: the
# modification times that diff prints after each file name are cut off, so the output
# depends only on the files' contents and a fresh checkout produces the same bytes.
# A file that is new in the later chapter (event_loop.rs, say) shows as one "Only in"
# line rather than in full: the chapter's page walks through it piece by piece, and
# repeating all of it here would bury the changes to the files both chapters share.
#
# shared/tests/book.rs runs this script into a temporary folder and fails when the
# committed diffs differ from what it produces, so a stale diff cannot reach the book.
# Run it after changing any chapter whose diff a page shows.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/book/src/generated}"
mkdir -p "$out"
cd "$root"

# diff exits 1 when the files differ, which is the normal case here; only 2 is trouble.
differences() {
    local status=0
    diff "$@" || status=$?
    if [ "$status" -gt 1 ]; then
        echo "gen-diffs: diff $* failed with status $status" >&2
        exit "$status"
    fi
}

# Drops the tab and timestamp after the file name in "--- a/x<TAB>2024-..." headers.
strip_times() {
    sed -E 's/^((---|\+\+\+) [^\t]*)\t.*$/\1/'
}

# chapters/NN-name for a two-digit chapter number, or a message and failure.
chapter_folder() {
    local matches=(chapters/"$1"-*/)
    if [ ! -f "${matches[0]}Cargo.toml" ]; then
        echo "gen-diffs: a page shows a diff with chapter $1, but chapters/$1-* does not exist" >&2
        exit 1
    fi
    echo "${matches[0]%/}"
}

# The diffs the pages include, such as "diff-01-02".
wanted=$(grep -rhoE --include='*.md' 'generated/diff-[0-9]{2}-[0-9]{2}\.diff' book/src |
    sed -E 's|generated/(.*)\.diff|\1|' | sort -u)

for name in $wanted; do
    numbers="${name#diff-}"
    before=$(chapter_folder "${numbers%-*}")
    after=$(chapter_folder "${numbers#*-}")
    target="$out/$name.diff"
    {
        differences -u "$before/Cargo.toml" "$after/Cargo.toml"
        differences -ru "$before/src" "$after/src"
    } | strip_times >"$target.tmp"
    mv "$target.tmp" "$target"
    echo "wrote ${target#"$root"/} ($(wc -l <"$target") lines)"
done
