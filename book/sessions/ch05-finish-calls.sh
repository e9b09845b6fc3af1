# Where chapter 4's upstream fetch ends: every call of finish.
# inputs: chapters/04-scheduler/src/upstream.rs
$ grep -n 'finish(' chapters/04-scheduler/src/upstream.rs
