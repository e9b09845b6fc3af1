use super::*;

/// A pipelined request, as a client sends it.
const REQUEST: &[u8] = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";

#[test]
fn consuming_moves_no_byte() {
    let mut buffer = Buffer::new();
    for _ in 0..100 {
        buffer.extend_from_slice(REQUEST);
    }
    let rest = buffer[REQUEST.len()..].as_ptr();
    buffer.consume(REQUEST.len());
    // What is left is where it was: consuming moved the offset, not the bytes.
    assert_eq!(buffer.as_ptr(), rest);
    assert_eq!(buffer.len(), 99 * REQUEST.len());
    assert!(buffer.starts_with(REQUEST));
}

#[test]
fn the_rest_moves_to_the_front_once_half_is_consumed() {
    let mut buffer = Buffer::new();
    buffer.extend_from_slice(&[1; BUFFER_SIZE]); // full
    buffer.consume(BUFFER_SIZE / 4);
    buffer.extend_from_slice(&[2; 10]); // a quarter consumed: it grows, the front stays
    assert_eq!(buffer.start, BUFFER_SIZE / 4);
    let capacity = buffer.bytes.capacity();
    let rest = BUFFER_SIZE + 10 - BUFFER_SIZE / 4;
    buffer.consume(rest - 20); // more than half consumed now
    let room = capacity - buffer.bytes.len();
    buffer.extend_from_slice(&vec![3; room + 1]); // and full again: the 20 bytes move
    assert_eq!(buffer.start, 0);
    assert_eq!(buffer.bytes.capacity(), capacity, "room was made by moving, not growing");
    assert_eq!(&buffer[..20], &[[1; 10], [2; 10]].concat()[..]);
    assert_eq!(buffer.len(), 20 + room + 1);
}

#[test]
fn an_emptied_buffer_holds_no_memory() {
    let mut buffer = Buffer::new();
    buffer.extend_from_slice(REQUEST);
    assert!(buffer.bytes.capacity() > 0);
    buffer.consume(REQUEST.len());
    assert_eq!(buffer.bytes.capacity(), 0, "consumed to the end, the memory went back");
    assert!(buffer.is_empty());
    buffer.extend_from_slice(REQUEST);
    buffer.clear();
    assert_eq!(buffer.bytes.capacity(), 0, "cleared, likewise");
}

#[test]
fn keep_alive_traffic_reuses_one_block() {
    let mut buffer = Buffer::new();
    buffer.extend_from_slice(REQUEST);
    let first = buffer.as_ptr();
    for _ in 0..1000 {
        buffer.consume(REQUEST.len());
        buffer.extend_from_slice(REQUEST); // the next request: the same memory, from the pool
        assert_eq!(buffer.as_ptr(), first);
    }
}

#[test]
fn the_pool_keeps_only_so_many_spares_of_its_size() {
    let pool = Pool::new(64, 3);
    let taken: Vec<Vec<u8>> = (0..5).map(|_| pool.take()).collect();
    assert!(taken.iter().all(|bytes| bytes.is_empty() && bytes.capacity() == 64));
    for bytes in taken {
        pool.give_back(bytes);
    }
    assert_eq!(pool.spares(), 3, "five given back, three kept, two freed");
    let mut grown = pool.take();
    grown.extend_from_slice(&[0; 65]); // it grew past the pool's size: not kept
    pool.give_back(grown);
    assert_eq!(pool.spares(), 2);
    let mut used = pool.take();
    used.push(7);
    pool.give_back(used);
    assert!(pool.take().is_empty(), "a spare comes back empty");
}

#[test]
fn idle_buffers_are_given_back_to_a_bounded_pool() {
    // A thousand connections, each with a request in its buffer, then all idle: the thread
    // keeps at most SPARE_BUFFERS of their blocks; the rest are freed.
    let mut connections: Vec<Buffer> = (0..1000).map(|_| Buffer::new()).collect();
    for buffer in &mut connections {
        buffer.extend_from_slice(REQUEST);
    }
    for buffer in &mut connections {
        buffer.consume(REQUEST.len());
    }
    assert_eq!(spare_buffers(), SPARE_BUFFERS);
    assert!(connections.iter().all(|buffer| buffer.bytes.capacity() == 0));
}

#[test]
fn answers_are_written_into_a_buffer() {
    use std::io::Write;
    let mut buffer = Buffer::new();
    write!(buffer, "HTTP/1.1 {} OK\r\n", 200).expect("writing into memory cannot fail");
    assert_eq!(&buffer[..], b"HTTP/1.1 200 OK\r\n");
}
