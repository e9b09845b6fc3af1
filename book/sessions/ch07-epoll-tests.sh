# The epoll backend's unit tests.
# inputs: chapters/07-epoll shared/src shared/Cargo.toml
# timeout: 600
@ cargo build --tests -p ch07-epoll
$ cargo test -p ch07-epoll epoll_backend
