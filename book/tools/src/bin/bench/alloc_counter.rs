//! The allocation counter: a shared library that the benchmark loads into a server with
//! `LD_PRELOAD`, to count the server's heap allocations while it runs.
//!
//! This file is not a module of the bench (`main.rs` has no `mod alloc_counter`), and Cargo
//! does not compile it: it is a program of its own, for another process. `allocations.rs`
//! embeds this text, writes it to the bench's scratch folder and builds it there with the
//! toolchain's `rustc`:
//!
//! ```text
//! rustc -O --crate-type cdylib -C panic=abort --edition 2021 alloc_counter.rs
//! ```
//!
//! How it counts. The dynamic linker looks a symbol up in the preloaded library before
//! glibc, so the server's calls to `malloc` and its kin (the Rust standard library's
//! allocator among them, and glibc's own internal calls) come here first. Each one is
//! passed on to glibc's allocator under the names glibc gives it for exactly this purpose
//! (`__libc_malloc` and so on), and counted when it allocates. The counts live in a small
//! file, named by the environment variable `WORKBOOK_ALLOCATION_COUNTS`, that the library
//! maps shared: the bench reads it while the server runs, before and after a number of
//! requests, so the server never has to exit to report (valgrind's DHAT, used before,
//! reported only at exit, and cannot run a program that uses io_uring).
//!
//! What counts as one allocation, as DHAT counts "blocks": every `malloc`, `calloc`,
//! `posix_memalign`, `aligned_alloc`, `memalign`, `valloc` and `pvalloc` that returns memory;
//! and every `realloc` that returns memory, whether the block moved, grew where it was or
//! shrank. (DHAT counts a `realloc` as a `malloc` and a `free`; and whether glibc can grow
//! a block where it is depends on what happens to lie next to it, which should not change
//! a count.) `realloc(NULL, n)` is a `malloc`; `realloc(p, 0)` frees; `free` counts
//! nothing. Bytes are the sizes asked for. glibc's `reallocarray` calls `realloc` through
//! the same lookup, so it is counted there.
//!
//! Three rules keep it safe inside any program:
//! - It never allocates: it is `#![no_std]` without the `alloc` crate, so it *cannot*. A
//!   counter that called `malloc` would call itself.
//! - Any thread may allocate at any moment: the counts are atomics, added to with one
//!   instruction each, never a lock.
//! - Allocations happen before `main`, even before this library is set up (the dynamic
//!   linker's own). Until its constructor has mapped the file, nothing is counted; the
//!   bench only ever subtracts one reading from another, so that start is never missed.

#![no_std]
// Each exported function's contract is C's, in its manual page (`man 3 malloc`), and
// glibc's implementation underneath keeps it: there is nothing of ours to add.
#![allow(clippy::missing_safety_doc)]

use core::ffi::{c_char, c_int, c_void};
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// The file's layout: two native-endian `u64`s, which the bench reads back.
#[repr(C)]
struct Counts {
    allocations: AtomicU64,
    bytes: AtomicU64,
}

/// The mapped file, once the constructor has mapped it; null until then, or for good if
/// there is no file to map (the program then runs as it would without us).
static COUNTS: AtomicPtr<Counts> = AtomicPtr::new(ptr::null_mut());

// glibc, linked by name (`-lc`): without std nothing else would say that we need it, and
// needing it also makes glibc initialise before our constructor runs.
#[link(name = "c")]
extern "C" {
    // glibc's allocator under its own names: what `malloc` and the rest call inside glibc.
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(items: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(block: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(block: *mut c_void);
    fn __libc_memalign(alignment: usize, size: usize) -> *mut c_void;
    fn __libc_valloc(size: usize) -> *mut c_void;
    fn __libc_pvalloc(size: usize) -> *mut c_void;

    fn getenv(name: *const c_char) -> *const c_char;
    fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn lseek(fd: c_int, offset: i64, whence: c_int) -> i64;
    fn mmap(
        address: *mut c_void, length: usize, protection: c_int, flags: c_int, fd: c_int,
        offset: i64,
    ) -> *mut c_void;
    fn close(fd: c_int) -> c_int;
    fn abort() -> !;
}

// From Linux's and glibc's headers (x86-64 and aarch64 agree on all of them).
const O_RDWR: c_int = 2;
const O_CLOEXEC: c_int = 0o2_000_000;
const SEEK_END: c_int = 2;
const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
const MAP_SHARED: c_int = 1;
const MAP_FAILED: *mut c_void = !0 as *mut c_void;
const EINVAL: c_int = 22;
const ENOMEM: c_int = 12;

/// Our constructor: the dynamic linker calls what `.init_array` lists after the libraries
/// we depend on (glibc) are initialised and before the program's `main`.
#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = map_the_file;

/// Maps the counts file. Opening, measuring and mapping a file allocate nothing; the file
/// must already hold the two counts (the bench writes 16 zero bytes): reading past a file's
/// end through a mapping is a SIGBUS, so a shorter file is left alone.
extern "C" fn map_the_file() {
    // SAFETY: plain C calls with a NUL-terminated name and path; `mmap` gives back either
    // MAP_FAILED or a page-aligned mapping of the file's first `size_of::<Counts>()` bytes,
    // which is never unmapped, and which holds two `u64`s (atomics have their layout).
    unsafe {
        let path = getenv(c"WORKBOOK_ALLOCATION_COUNTS".as_ptr());
        if path.is_null() {
            return;
        }
        let fd = open(path, O_RDWR | O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let size = core::mem::size_of::<Counts>();
        if lseek(fd, 0, SEEK_END) >= size as i64 {
            let counts = mmap(ptr::null_mut(), size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if counts != MAP_FAILED {
                // Release: a thread that sees the pointer sees the mapping behind it.
                COUNTS.store(counts.cast(), Ordering::Release);
            }
        }
        close(fd);
    }
}

/// Counts one allocation of `bytes`, if the file is mapped.
fn count(bytes: usize) {
    // SAFETY: non-null only once it points at the mapping, which stays for the process's
    // life (and is inherited by a `fork`: nginx's workers add to the same counts).
    if let Some(counts) = unsafe { COUNTS.load(Ordering::Acquire).as_ref() } {
        // Relaxed: a count is one atomic add that nothing else depends on. The bench reads
        // the file after the server answered, and the socket between them orders the two.
        counts.allocations.fetch_add(1, Ordering::Relaxed);
        counts.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// Counts `block`'s allocation if there is a block: a failed allocation allocated nothing.
fn counted(block: *mut c_void, bytes: usize) -> *mut c_void {
    if !block.is_null() {
        count(bytes);
    }
    block
}

// The allocator's functions, as a C program knows them. Each one is glibc's, counted.
// SAFETY (for all of them): the caller keeps C's contract, and glibc's functions keep
// theirs; we only pass the arguments on and look at the result.

#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    counted(__libc_malloc(size), size)
}

#[no_mangle]
pub unsafe extern "C" fn calloc(items: usize, size: usize) -> *mut c_void {
    // glibc fails a product that overflows, so a block that came back has this size.
    counted(__libc_calloc(items, size), items.wrapping_mul(size))
}

#[no_mangle]
pub unsafe extern "C" fn realloc(block: *mut c_void, size: usize) -> *mut c_void {
    // `realloc(p, 0)` frees `p` and returns null: nothing allocated, nothing counted.
    counted(__libc_realloc(block, size), size)
}

#[no_mangle]
pub unsafe extern "C" fn free(block: *mut c_void) {
    __libc_free(block)
}

#[no_mangle]
pub unsafe extern "C" fn memalign(alignment: usize, size: usize) -> *mut c_void {
    counted(__libc_memalign(alignment, size), size)
}

#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(alignment: usize, size: usize) -> *mut c_void {
    // In glibc 2.36 `aligned_alloc` is `memalign` under another name.
    counted(__libc_memalign(alignment, size), size)
}

/// What the Rust standard library calls for an alignment above 16 bytes. glibc's own
/// `posix_memalign` reaches its allocator directly, not through `memalign`, so it must be
/// here too, or we would miss it. Its check is glibc's: the alignment must be a power of
/// two times a pointer's size, which is to say a power of two no smaller than a pointer.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    result: *mut *mut c_void, alignment: usize, size: usize,
) -> c_int {
    let word = core::mem::size_of::<*mut c_void>();
    if !alignment.is_power_of_two() || alignment < word {
        return EINVAL;
    }
    let block = counted(__libc_memalign(alignment, size), size);
    if block.is_null() {
        return ENOMEM;
    }
    *result = block;
    0
}

#[no_mangle]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    counted(__libc_valloc(size), size)
}

#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    counted(__libc_pvalloc(size), size)
}

/// Nothing here can panic, but a `no_std` library must still say what a panic would do.
/// Unwinding into C would be worse than stopping.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `abort` takes nothing and never returns.
    unsafe { abort() }
}
