//! `bench` was the benchmark of this package; it moved to the book's tools (`book/tools/`,
//! package `book-tools`). This stub keeps the old command for one release, so that a
//! script that still runs `cargo run -p suite --bin bench` fails saying where it went,
//! instead of with Cargo's "no bin target named bench". Delete it in the release after.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = if args.is_empty() { String::new() } else { format!(" -- {}", args.join(" ")) };
    eprintln!(
        "bench moved to the package book-tools (book/tools/): run\n  \
         cargo run --release -p book-tools --bin bench{rest}"
    );
    std::process::exit(2);
}
