//! `/upstream/PATH`: connect, send, read, as straight-line code. Chapter 5 chained these
//! steps as promises; chapter 4 nested them as callbacks. Here each step is an `.await`,
//! and the whole fetch is one future that `timeout` drops after 5 s (closing its socket).

use std::net::{SocketAddr, TcpStream};

use shared::buffer::Buffer;
use shared::http::Response;
use shared::upstream::{self, ResponseReader, UpstreamParse};

use crate::net::Async;
use crate::sync::Semaphore;
use crate::time::timeout;

// ANCHOR: fetch
/// Fetches `path_and_query` from `address`: the upstream's answer, or a 502 or a 504. At
/// most `slots` fetches run at once; the others wait their turn (inside the 5 s).
pub async fn fetch(address: SocketAddr, path_and_query: &str, slots: &Semaphore) -> Response {
    let fetched = timeout(upstream::TIMEOUT, async {
        let _slot = slots.acquire().await;
        let cannot = |_| upstream::bad_gateway("could not reach the upstream");
        let stream = Async::<TcpStream>::connect(address).await.map_err(cannot)?;
        stream.write_all(&upstream::request(path_and_query, address)).await.map_err(cannot)?;
        let (mut reader, mut received) = (ResponseReader::new(), Buffer::new());
        loop {
            received.clear();
            let _ = stream.read_to(&mut received).await; // a reset ends it, as an end does
            match reader.push(&received) {
                UpstreamParse::Done(response) => return Ok(response),
                UpstreamParse::Garbage(reason) => return Err(upstream::bad_gateway(reason)),
                UpstreamParse::NeedMore => {}
            }
        }
    });
    match fetched.await {
        Ok(Ok(response) | Err(response)) => response,
        Err(_elapsed) => upstream::gateway_timeout(),
    }
}
// ANCHOR_END: fetch
