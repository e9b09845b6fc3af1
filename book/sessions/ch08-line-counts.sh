# Chapter 7's connection against chapter 8's, and both chapters whole, in non-blank lines
# (the second command leaves out the test files).
# inputs: chapters/07-epoll chapters/08-async
$ for f in chapters/07-epoll/src/connection.rs chapters/07-epoll/src/connection/download.rs \
    chapters/08-async/src/connection.rs; do printf '%5d %s\n' "$(grep -cv '^\s*$' $f)" $f; done
$ for chapter in chapters/07-epoll chapters/08-async; do printf '%5d %s\n' "$(find $chapter/src \
    -name '*.rs' ! -name '*_tests.rs' -exec cat {} + | grep -cv '^\s*$')" $chapter; done
