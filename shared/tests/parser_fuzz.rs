//! A randomized property test for the request parser: a small fuzzer that needs no tools.
//!
//! It takes well-formed requests, mutates them at random (flip, insert, delete and
//! duplicate bytes, splice in dangerous fragments), and checks three properties on every
//! result:
//!
//! 1. `parse` never panics, whatever the bytes.
//! 2. It never claims more bytes than it was given, and a body it returns lies inside them.
//! 3. It agrees with itself however the bytes arrive. The chapters call `parse` on
//!    whatever has been received so far, so for every split point the answer for the
//!    prefix must be "incomplete" or exactly the answer for the whole. A parser that said
//!    "400" to half a request and "200" to the whole one would make the server's answer
//!    depend on how the network happened to cut the packets. Read the other way round, it
//!    says that a prefix already refused means the whole is refused with the same status:
//!    the parser refuses a request at its first wrong byte, and nothing that comes after
//!    that byte may change the answer.
//!
//! The run is bounded in time (`PARSER_FUZZ_SECONDS`, default 2) and reproducible: the
//! seed is printed, and `PARSER_FUZZ_SEED` replays it.

use std::time::{Duration, Instant};

use shared::http::{parse, Parse};

/// xorshift64*: a tiny, good-enough pseudo-random generator, so the test needs no crate.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SEEDS: &[&[u8]] = &[
    b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    b"GET /files/a%20b.txt?x=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"\r\nHEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-A: b\r\n\r\nGET / HTTP/1.1\r\n",
    b"GET http://example.com/sleep?ms=5 HTTP/1.1\r\nHost: example.com\r\n\r\n",
    b"OPTIONS * HTTP/1.9\r\nHost: [::1]:80\r\nContent-Length: \t0005 \r\n\r\nhello",
];

const FRAGMENTS: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b" ",
    b"\t",
    b":",
    b"\0",
    b"\x7f",
    b"\xff",
    b"%2e%2e/",
    b"Content-Length: 3\r\n",
    b"Content-Length: 99999999999999999999\r\n",
    b"Content-Length: 1048577\r\n",
    b"Content-Length: 1048576",
    b"Transfer-Encoding: chunked\r\n",
    b"Host: y\r\n",
    b" folded\r\n",
    b"HTTP/2.0",
    b"HTTP/1.",
    b"http://",
    b"*",
    b"\x16\x03\x01",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
];

fn mutate(random: &mut Random, input: &[u8]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for _ in 0..=random.below(4) {
        let at = random.below(bytes.len() + 1);
        match random.below(5) {
            0 if at < bytes.len() => bytes[at] = random.next() as u8,
            1 => bytes.insert(at, random.next() as u8),
            2 if at < bytes.len() => {
                bytes.remove(at);
            }
            3 => {
                let fragment = FRAGMENTS[random.below(FRAGMENTS.len())];
                bytes.splice(at..at, fragment.iter().copied());
            }
            _ => {
                // Repeat a slice: long lines, many headers, doubled requests.
                let start = random.below(bytes.len() + 1);
                let end = (start + random.below(64)).min(bytes.len());
                let copy: Vec<u8> = bytes[start..end].repeat(1 + random.below(200));
                bytes.splice(at..at, copy);
            }
        }
    }
    bytes
}

/// A comparable summary of a parse result.
fn outcome(bytes: &[u8]) -> String {
    match parse(bytes) {
        Parse::Incomplete => "incomplete".to_string(),
        Parse::Invalid(error) => format!("invalid {}", error.status),
        Parse::Complete { request, consumed } => {
            assert!(consumed <= bytes.len(), "consumed {consumed} of {} bytes", bytes.len());
            let body_start = request.body.as_ptr() as usize - bytes.as_ptr() as usize;
            assert!(body_start + request.body.len() <= consumed, "body outside the request");
            format!("complete {consumed} {request:?}")
        }
    }
}

// ANCHOR: split_agreement
fn check(bytes: &[u8]) {
    let whole = outcome(bytes);
    for split in 0..bytes.len() {
        let part = outcome(&bytes[..split]);
        assert!(
            part == "incomplete" || part == whole,
            "prefix of {split} bytes says {part}, the whole says {whole}\ninput: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}
// ANCHOR_END: split_agreement

#[test]
fn parser_survives_random_input_and_agrees_across_splits() {
    let seed =
        std::env::var("PARSER_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map(|d| d.as_nanos() as u64).unwrap_or(1) | 1
        });
    let seconds =
        std::env::var("PARSER_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    println!("parser fuzz: seed {seed} (replay with PARSER_FUZZ_SEED={seed}), {seconds} s");
    let mut random = Random(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut cases = 0u64;
    for seed_request in SEEDS {
        check(seed_request); // the unmutated requests too
    }
    while Instant::now() < deadline {
        let original = SEEDS[random.below(SEEDS.len())];
        let input = mutate(&mut random, original);
        check(&input);
        cases += 1;
    }
    println!("parser fuzz: {cases} inputs, every split of each checked");
    assert!(cases > 100, "too few cases ran to mean anything");
}
