//! The one reader of lines a client writes to codehands (an editor on `codehands acp`'s
//! stdin, a person answering a question on the terminal): bytes in, [`Frame`]s out.
//!
//! It reads bytes, not text, so no line ends the input: a line that is not UTF-8 comes out
//! as [`Frame::NotUtf8`] and a line over the cap as [`Frame::TooLong`] (its bytes are never
//! held), and the reader reads on. Only a real end of input, or a read that fails (a closed
//! pipe, a stdin that is gone), ends it; a last line the end cut short (no newline) comes
//! out as a line like any other. The framing is the agents' output's (`JsonlDecoder`):
//! lines end at the newline byte only.

use std::collections::VecDeque;

pub use runner_contract::framing::Frame;
use runner_contract::framing::JsonlDecoder;

/// How much one read takes.
const CHUNK: usize = 64 << 10;

/// Lines from a client's byte stream `R`: [`ClientLines::next`] for an async reader,
/// [`ClientLines::next_blocking`] for a blocking one.
pub struct ClientLines<R> {
    reader: R,
    decoder: JsonlDecoder,
    ready: VecDeque<Frame>,
    ended: bool,
    chunk: Box<[u8]>,
}

impl<R> ClientLines<R> {
    /// Lines of `reader`, each at most `max_line` bytes; blank lines are skipped.
    pub fn new(reader: R, max_line: usize) -> Self {
        Self {
            reader,
            decoder: JsonlDecoder::with_max_line(max_line),
            ready: VecDeque::new(),
            ended: false,
            chunk: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    /// The same reader, giving out blank lines too (as empty lines): for a person's
    /// answers, where an empty line means "the default".
    pub fn keeping_blank_lines(mut self) -> Self {
        self.decoder = self.decoder.keeping_blank_lines();
        self
    }

    /// Takes the outcome of one read: `Some(n)` bytes of the chunk, or `None` for the end.
    fn take(&mut self, read: Option<usize>) {
        let mut frames = Vec::new();
        match read {
            Some(n) if n > 0 => self.decoder.push(&self.chunk[..n], &mut frames),
            _ => {
                self.decoder.finish(&mut frames);
                self.ended = true;
            }
        }
        self.ready.extend(frames);
    }

    /// The next frame already read, or `None` when a read is needed (or the input ended).
    fn ready(&mut self) -> Option<Frame> {
        self.ready.pop_front()
    }
}

impl<R: tokio::io::AsyncRead + Unpin> ClientLines<R> {
    /// The next line; `None` once the input has ended.
    pub async fn next(&mut self) -> Option<Frame> {
        use tokio::io::AsyncReadExt;
        loop {
            if let Some(frame) = self.ready() {
                return Some(frame);
            }
            if self.ended {
                return None;
            }
            let read = match self.reader.read(&mut self.chunk).await {
                Ok(n) => Some(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A read that fails is the end of this input: nothing more can come.
                Err(_) => None,
            };
            self.take(read);
        }
    }
}

impl<R: std::io::Read> ClientLines<R> {
    /// The next line, blocking until it is read; `None` once the input has ended.
    pub fn next_blocking(&mut self) -> Option<Frame> {
        loop {
            if let Some(frame) = self.ready() {
                return Some(frame);
            }
            if self.ended {
                return None;
            }
            let read = match self.reader.read(&mut self.chunk) {
                Ok(n) => Some(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => None,
            };
            self.take(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8], max_line: usize) -> Vec<Frame> {
        let mut lines = ClientLines::new(bytes, max_line);
        std::iter::from_fn(|| lines.next_blocking()).collect()
    }

    #[test]
    fn a_bad_line_is_a_frame_and_the_lines_after_it_still_come() {
        let got = all(b"\xff\xfe\n{\"a\":1}\n0123456789\n\n{\"cut\":", 8);
        assert_eq!(
            got,
            [
                Frame::NotUtf8("\u{fffd}\u{fffd}".into()),
                Frame::Line("{\"a\":1}".into()),
                Frame::TooLong { bytes: 10 },
                Frame::Line("{\"cut\":".into()),
            ]
        );
    }

    #[tokio::test]
    async fn the_async_reader_gives_the_same_lines() {
        let bytes: &[u8] = b"one\n\xc3\ntwo";
        let mut lines = ClientLines::new(bytes, 100);
        let mut got = Vec::new();
        while let Some(frame) = lines.next().await {
            got.push(frame);
        }
        assert_eq!(got, all(bytes, 100));
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn blank_lines_are_kept_when_asked() {
        let mut lines = ClientLines::new(&b"\nk\n"[..], 100).keeping_blank_lines();
        let got: Vec<Frame> = std::iter::from_fn(|| lines.next_blocking()).collect();
        assert_eq!(got, [Frame::Line(String::new()), Frame::Line("k".into())]);
    }
}
