//! New in chapter 6: a file sent a chunk at a time, each read on the thread pool once the
//! client has taken most of the last (`fs.rs`): about one chunk in memory, whatever the size.

use std::fs::File;

use shared::files;

use super::{Connection, State};
use crate::fs::Chunk;
use crate::poll_backend::Token;
use crate::{Server, ServerLoop};

/// What is left of a file to send, of how many bytes, and the file (`None` while it is read).
pub struct Download {
    left: u64,
    length: u64,
    file: Option<File>,
}

impl Connection {
    /// The head has gone into the output; its body begins with `first`.
    pub(super) fn start_download(&mut self, first: Chunk) {
        self.download = Some(Download { left: first.length, length: first.length, file: None });
        self.add_chunk(first);
    }

    /// Once less than a chunk is left unsent, reads the next one.
    pub(super) fn read_more(
        &mut self, event_loop: &mut ServerLoop, token: Token, server: &mut Server,
    ) {
        let room = self.pending_output() < files::CHUNK;
        let Some(download) = self.download.as_mut().filter(|_| room) else { return };
        let Some(file) = download.file.take() else { return }; // being read already
        let next = server.files.read(event_loop, file, download.length);
        next.on_settled(move |outcome, event_loop, state| {
            event_loop.with_handler(token, state, |connection: &mut Self, event_loop, _, server| {
                match outcome {
                    Ok(chunk) => connection.add_chunk(chunk),
                    // The head went out long ago: a read error can only end it short.
                    Err(_) => connection.state = State::Done,
                }
                connection.try_respond(event_loop, token, server); // sends; then those behind
                connection.after_event(event_loop, token, server);
            })
        });
    }

    /// Appends a chunk to the output, and keeps the file if more is left to send.
    fn add_chunk(&mut self, Chunk { mut bytes, file, .. }: Chunk) {
        let Some(mut download) = self.download.take() else { return };
        bytes.truncate(download.left as usize); // the file may have grown: send what we said
        if bytes.is_empty() {
            // It shrank: we cannot send the length we said. Closing is the only honest end.
            self.state = State::Done;
            return;
        }
        self.out.extend_from_slice(&bytes);
        download.left -= bytes.len() as u64;
        if download.left > 0 {
            download.file = Some(file);
            self.download = Some(download);
        }
    }
}
