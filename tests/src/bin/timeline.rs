//! `timeline` was the timeline drawer of this package; it moved to the book's tools (`book/tools/`,
//! package `book-tools`). This stub keeps the old command for one release, so that a
//! script that still runs `cargo run -p suite --bin timeline` fails saying where it went,
//! instead of with Cargo's "no bin target named timeline". Delete it in the release after.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = if args.is_empty() { String::new() } else { format!(" -- {}", args.join(" ")) };
    eprintln!(
        "timeline moved to the package book-tools (book/tools/): run\n  \
         cargo run -p book-tools --bin timeline{rest}"
    );
    std::process::exit(2);
}
