#!/usr/bin/env bash
# Regenerates the "what changed" pieces the book shows, two for each step between chapters:
#
#   book/src/generated/diff-05-06.diff   chapter 5 -> chapter 6 as a unified diff
#   book/src/generated/diff-05-06.md     a Markdown table: lines added and removed per file
#
# It makes both pieces for exactly the steps some page includes (either piece), so a
# chapter whose page is not written yet costs nothing here.
#
# Usage: book/tools/gen-diffs.sh [OUTPUT_DIR]    (default: book/src/generated)
#
# Each diff is what a reader gets from `diff -ru` on the two chapters' Cargo.toml and src/
# (nothing else in a chapter folder is part of the lesson), trimmed to the lesson:
#
# - Test files are left out: `tests.rs`, `*_tests.rs` and anything in a folder called
#   `tests`, and the three lines that hook such a file into its module (`#[cfg(test)]`,
#   `#[path = "x_tests.rs"]`, `mod tests;`). Tests sit in sibling files precisely so that
#   the step shows the code alone.
# - The `// ANCHOR: name` and `// ANCHOR_END: name` lines that mark the book's excerpts are
#   left out: they are there for the book, not for the program.
# - A hunk whose changed lines are all comments (or blank) is left out, and so is a file
#   left with no hunk. A hunk that changes code shows its comment lines too. In
#   Cargo.toml the package's `name` and `description` count as comments: every chapter
#   changes them, and they are its label, not its code (a new dependency still shows).
# - The modification times diff prints after each file name are cut off, so the output
#   depends only on the files' contents and a fresh checkout produces the same bytes.
#   The "diff -ru A B" line before each file is cut too: the "--- A" and "+++ B" lines
#   below it name the same two files.
# - A file that is new in the later chapter (event_loop.rs, say) shows as one "Only in"
#   line rather than in full: the chapter's page walks through it piece by piece, and
#   repeating all of it here would bury the changes to the files both chapters share.
#
# The table counts the same lines as the diff: for a file in both chapters, the + and -
# lines of the hunks the diff keeps; for a whole file that is new or gone, its lines
# (without anchor lines). Files with no lesson change are not listed.
#
# It also makes the sketch arc's steps, every one whether a page shows it yet or not:
#
#   book/src/generated/sketch-03-04.diff   examples/ch03-sketch.rs -> examples/ch04-sketch.rs
#
# for each two consecutive chapters whose sketches both exist, but 07-08 and 09-10: the
# sketches of 8 (async) and 10 (the ring) start afresh. A sketch diff is `diff -u` of the
# two files whole, comments and all (in a sketch the comments are the lesson too), without
# anchor lines and with the times cut, as above.
#
# book/tools/tests/book.rs runs this script into a temporary folder and fails when the
# committed pieces differ from what it produces, so a stale diff cannot reach the book.
# Run it after changing any chapter whose diff a page shows, or any sketch.
set -euo pipefail
export LC_ALL=C # one sort order and one character set, whoever runs it

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/book/src/generated}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# diff exits 1 when the files differ, which is the normal case here; only 2 is trouble.
differences() {
    local status=0
    diff "$@" || status=$?
    if [ "$status" -gt 1 ]; then
        echo "gen-diffs: diff $* failed with status $status" >&2
        exit "$status"
    fi
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

# Copies a chapter's lesson (Cargo.toml and src/) to the same path under $work, without
# its test files, test hooks and anchor lines. Diffing the copies keeps the paths the reader knows.
copy_lesson() {
    local folder="$1"
    [ -d "$work/$folder" ] && return
    mkdir -p "$work/$folder"
    cp "$folder/Cargo.toml" "$work/$folder/"
    cp -R "$folder/src" "$work/$folder/"
    find "$work/$folder" -depth \( -name tests -type d -exec rm -rf {} + \) -o \
        \( -type f \( -name tests.rs -o -name '*_tests.rs' \) -delete \)
    find "$work/$folder" -depth -type d -empty -delete
    local file
    find "$work/$folder" -type f | while read -r file; do
        awk "$lesson_lines" "$file" >"$file.lesson"
        mv "$file.lesson" "$file"
    done
}

# Prints a source file without its anchor lines and without the lines that hook a sibling
# test file into it (`#[cfg(test)]`, `#[path = "x_tests.rs"]`, `mod tests;`, and any
# `#[cfg(...)]` between the first two, such as chapter 10's `target_os = "linux"`),
# together with the blank line before them.
lesson_lines='
/^[ \t]*(\/\/|#)[ \t]*ANCHOR(_END)?:/ { next }
{ line[++count] = $0 }
END {
    for (i = 1; i <= count; i++) {
        if (line[i] == "#[cfg(test)]") {
            j = i + 1
            while (j <= count && line[j] ~ /^#\[cfg\(/) j++
            if (line[j] ~ /^#\[path = ".*tests\.rs"\]$/ && line[j + 1] == "mod tests;") {
                if (kept > 0 && out[kept] == "") kept--
                i = j + 1
                continue
            }
        }
        out[++kept] = line[i]
    }
    for (i = 1; i <= kept; i++) print out[i]
}
'

# Reads `diff -ru` output on stdin; writes the trimmed diff to $diff_out and the table to
# $table_out. Runs in $work, where the "Only in" files can be counted.
filter='
# Is this changed line outside the lesson: blank, a comment, or in Cargo.toml the
# package name and description that every chapter changes?
function not_lesson(line, text) {
    text = substr(line, 2)
    sub(/^[ \t]+/, "", text)
    if (text == "") return 1
    if (file ~ /\.toml$/) return text ~ /^(#|name[ \t]*=|description[ \t]*=)/
    return text ~ /^\/\//
}
function flush_hunk(i) {
    if (hunk_lines == 0) return
    if (hunk_has_code) {
        if (header != "") { printf "%s", header > diff_out; header = "" }
        for (i = 1; i <= hunk_lines; i++) print hunk[i] > diff_out
        added[file] += hunk_added
        removed[file] += hunk_removed
        if (!(file in listed)) { listed[file] = 1; order[++files] = file }
    }
    hunk_lines = 0; hunk_has_code = 0; hunk_added = 0; hunk_removed = 0
}
function lines_in(path, line, count) {
    count = 0
    while ((getline line < path) > 0) count++
    close(path)
    return count
}
# "chapters/06-thread-pool/src/fs.rs" -> "src/fs.rs"
function in_chapter(path) {
    sub(/^chapters\/[^\/]+\//, "", path)
    return path
}
function whole(path, kind, name, command) {
    command = "find " path " -type f | sort"
    while ((command | getline name) > 0) {
        name = in_chapter(name)
        order[++files] = name
        listed[name] = 1
        note[name] = kind
        if (kind == "new") { added[name] = lines_in(after "/" name); removed[name] = 0 }
        else { removed[name] = lines_in(before "/" name); added[name] = 0 }
    }
    close(command)
}
# A header is "diff -ru A B" (not for Cargo.toml), then "--- A", then "+++ B"; a line
# inside a hunk can start with "---" too, so only the line after "diff" (or the first line
# of all) counts as one. The "diff -ru" line itself is dropped: it repeats the two paths
# that follow, and two long paths on one line are wider than the code column of the book.
/^diff / { flush_hunk(); header = ""; expect = "---"; next }
/^--- / && (expect == "---" || NR == 1) {
    flush_hunk(); sub(/\t.*/, ""); header = header $0 "\n"; expect = "+++"; next
}
/^\+\+\+ / && expect == "+++" {
    sub(/\t.*/, ""); header = header $0 "\n"; expect = ""
    file = $0; sub(/^\+\+\+ /, "", file); file = in_chapter(file)
    next
}
/^Only in / {
    flush_hunk(); header = ""
    print > diff_out
    folder = $0; sub(/^Only in /, "", folder); sub(/: .*$/, "", folder)
    name = $0; sub(/^[^:]*: /, "", name)
    whole(folder "/" name, index(folder "/", after "/") == 1 ? "new" : "gone")
    next
}
/^@@/ { flush_hunk(); hunk[++hunk_lines] = $0; next }
{
    hunk[++hunk_lines] = $0
    if (/^\+/) { hunk_added++; if (!not_lesson($0)) hunk_has_code = 1 }
    else if (/^-/) { hunk_removed++; if (!not_lesson($0)) hunk_has_code = 1 }
}
END {
    flush_hunk()
    print "| File | Lines added | Lines removed | |" > table_out
    print "|:-----|------------:|--------------:|:--|" > table_out
    for (i = 1; i <= files; i++) {
        name = order[i]
        printf "| `%s` | %d | %d |%s|\n", name, added[name], removed[name], \
            note[name] == "" ? " " : " " note[name] " " > table_out
        total_added += added[name]; total_removed += removed[name]
    }
    printf "| **Total** | **%d** | **%d** | |\n", total_added, total_removed > table_out
}
'

# The steps the pages include, such as "diff-01-02", from either of its two pieces.
wanted=$(grep -rhoE --include='*.md' 'generated/diff-[0-9]{2}-[0-9]{2}\.(diff|md)' book/src |
    sed -E 's#generated/(.*)\.(diff|md)#\1#' | sort -u)

for name in $wanted; do
    numbers="${name#diff-}"
    before=$(chapter_folder "${numbers%-*}")
    after=$(chapter_folder "${numbers#*-}")
    copy_lesson "$before"
    copy_lesson "$after"
    (
        cd "$work"
        {
            differences -u "$before/Cargo.toml" "$after/Cargo.toml"
            differences -ru "$before/src" "$after/src"
        } | awk -v before="$before" -v after="$after" \
            -v diff_out="$out/$name.diff.tmp" -v table_out="$out/$name.md.tmp" "$filter"
    )
    touch "$out/$name.diff.tmp" # an empty diff is still a diff
    mv "$out/$name.diff.tmp" "$out/$name.diff"
    mv "$out/$name.md.tmp" "$out/$name.md"
    echo "wrote ${out#"$root"/}/$name.diff ($(wc -l <"$out/$name.diff") lines) and $name.md"
done

# The sketch arc: chapters/NN-name/examples/chNN-sketch.rs, for every chapter that has one.
sketch_of() {
    local matches=(chapters/"$1"-*/examples/ch"$1"-sketch.rs)
    [ -f "${matches[0]}" ] && echo "${matches[0]}"
}
numbers=$(for folder in chapters/[0-9][0-9]-*/; do folder="${folder#chapters/}"; echo "${folder:0:2}"; done)
for before_number in $numbers; do
    after_number=$(printf '%02d' $((10#$before_number + 1)))
    case "$before_number-$after_number" in 07-08 | 09-10) continue ;; esac # they start afresh
    before=$(sketch_of "$before_number") || continue
    after=$(sketch_of "$after_number") || continue
    for sketch in "$before" "$after"; do
        mkdir -p "$work/sketches/$(dirname "$sketch")"
        awk "$lesson_lines" "$sketch" >"$work/sketches/$sketch"
    done
    name="sketch-$before_number-$after_number"
    (cd "$work/sketches" && differences -u "$before" "$after") |
        sed -E 's/^((---|\+\+\+) [^\t]*)\t.*$/\1/' >"$out/$name.diff.tmp"
    mv "$out/$name.diff.tmp" "$out/$name.diff"
    echo "wrote ${out#"$root"/}/$name.diff ($(wc -l <"$out/$name.diff") lines)"
done
