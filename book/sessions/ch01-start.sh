# Chapter 1 starts and says where it listens (the introduction, and chapter 1's first block).
# inputs: chapters/01-blocking shared/src shared/Cargo.toml
@ cargo build -p ch01-blocking
& cargo run -p ch01-blocking
@ book/tools/wait-for-port.sh 8080
