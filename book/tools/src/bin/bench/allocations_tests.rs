use std::process::Command;

use super::*;
use crate::process::TempDir;

#[test]
fn reads_the_counts_file() {
    let mut bytes = 7u64.to_ne_bytes().to_vec();
    bytes.extend(1_000u64.to_ne_bytes());
    assert_eq!(parse_counts(&bytes), Some(Counts { allocations: 7, bytes: 1_000 }));
    assert_eq!(parse_counts(&bytes[..8]), None);
    assert_eq!(parse_counts(&[0; 17]), None);
}

#[test]
fn the_connection_cancels_out() {
    // Start-up and the warm-up before; then each batch pays 5 allocations (64 bytes) for
    // its connection, and 3 (128 bytes) per request.
    let before = Counts { allocations: 1_234, bytes: 99_999 };
    let batch = |counts: Counts, requests: u64| Counts {
        allocations: counts.allocations + 5 + 3 * requests,
        bytes: counts.bytes + 64 + 128 * requests,
    };
    let between = batch(before, 1_000);
    let after = batch(between, 5_000);
    let count = per_request(before, between, after, (1_000, 5_000));
    assert_eq!(count.allocations_per_request, 3.0);
    assert_eq!(count.bytes_per_request, 128.0);
}

/// A program that allocates in each of the four ways Rust's standard library does
/// (`malloc`, `calloc`, `realloc`, `posix_memalign`), `argv[1]` times on each of two
/// threads at once: 4 allocations and 24 + 100 + 1,000 + 64 bytes a round.
const PROGRAM: &str = r#"
use std::alloc::{alloc, alloc_zeroed, dealloc, realloc, Layout};
use std::hint::black_box;

fn main() {
    let rounds: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let threads: Vec<_> = (0..2).map(|_| std::thread::spawn(move || {
        for _ in 0..rounds {
            unsafe {
                let small = Layout::from_size_align(24, 8).unwrap();
                let zeroed = Layout::from_size_align(100, 8).unwrap();
                let aligned = Layout::from_size_align(64, 4096).unwrap();
                let first = black_box(alloc(small));
                let second = black_box(alloc_zeroed(zeroed));
                let grown = black_box(realloc(first, small, 1_000));
                let third = black_box(alloc(aligned));
                assert!(!grown.is_null() && !second.is_null() && !third.is_null());
                dealloc(grown, Layout::from_size_align(1_000, 8).unwrap());
                dealloc(second, zeroed);
                dealloc(third, aligned);
            }
        }
    })).collect();
    for thread in threads {
        thread.join().unwrap();
    }
}
"#;

#[test]
fn counts_every_allocation_of_a_program_from_any_thread() {
    let folder = TempDir::new("workbook-alloc-counter").expect("a temporary folder");
    let folder = folder.path();
    let library = build_counter(folder).expect("the counter builds");
    let source = folder.join("program.rs");
    let program = folder.join("program");
    fs::write(&source, PROGRAM).expect("write the program");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let built = Command::new(rustc)
        .args(["--edition", "2021", "-o"])
        .arg(&program)
        .arg(&source)
        .output()
        .expect("run rustc");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));

    // The program's counts with `rounds` rounds, from a fresh file of `size` bytes.
    let counted = |rounds: u32, size: usize| {
        let file = folder.join(format!("counts-{rounds}-{size}"));
        fs::write(&file, vec![0; size]).expect("write the counts file");
        let status = Command::new(&program)
            // As wide for every count: the program's copy of its arguments is counted too.
            .arg(format!("{rounds:05}"))
            .env("LD_PRELOAD", &library)
            .env(COUNTS_VARIABLE, &file)
            .status()
            .expect("run the program");
        assert!(status.success());
        fs::read(&file).expect("read the counts file")
    };
    let none = parse_counts(&counted(0, COUNTS_SIZE)).expect("16 bytes");
    let some = parse_counts(&counted(1_000, COUNTS_SIZE)).expect("16 bytes");
    assert!(none.allocations > 0, "start-up allocates: the counter was loaded");
    assert_eq!(some.allocations - none.allocations, 2 * 1_000 * 4);
    assert_eq!(some.bytes - none.bytes, 2 * 1_000 * (24 + 100 + 1_000 + 64));
    // A file too short to hold the counts is left alone, and the program runs as ever.
    assert_eq!(counted(10, 8), vec![0; 8]);
}
