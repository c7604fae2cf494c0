//! Incremental JSONL framing of an agent's stdout, read asynchronously: an
//! async reader over [`JsonlDecoder`], which does the cutting.
//!
//! Lines are split on the newline byte only: a U+2028 inside a JSON string is
//! not a line break. Fragmented lines are joined, an unterminated last line is
//! still a line, a line of any size up to the cap is returned whole (a 64 MiB
//! tool result is fine), and a line over the cap is reported and skipped while
//! reading goes on. Bytes that are not UTF-8 are replaced, never fatal. Blank
//! lines carry nothing and are skipped.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::framing::{Frame, JsonlDecoder};

pub use super::framing::DEFAULT_MAX_LINE;

const CHUNK: usize = 64 << 10;

/// One framed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A whole line, without its newline (and without a trailing `\r`).
    Text(String),
    /// A line longer than the cap, dropped; `bytes` is its length.
    Oversized {
        /// How long the dropped line was.
        bytes: usize,
    },
}

/// Splits a byte stream into lines as they arrive.
#[derive(Debug)]
pub struct LineDecoder<R> {
    reader: R,
    decoder: JsonlDecoder,
    ready: VecDeque<Frame>,
    frames: Vec<Frame>,
    chunk: Vec<u8>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineDecoder<R> {
    /// A decoder with the default cap.
    pub fn new(reader: R) -> Self {
        Self::with_max_line(reader, DEFAULT_MAX_LINE)
    }

    /// A decoder that drops lines longer than `max` bytes.
    pub fn with_max_line(reader: R, max: usize) -> Self {
        Self {
            reader,
            decoder: JsonlDecoder::with_max_line(max),
            ready: VecDeque::new(),
            frames: Vec::new(),
            chunk: vec![0; CHUNK],
            eof: false,
        }
    }

    /// The next line, or `None` at the end of the stream.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return Ok(Some(match frame {
                    Frame::Line(text) | Frame::NotUtf8(text) => Line::Text(strip_cr(text)),
                    Frame::TooLong { bytes } => Line::Oversized { bytes },
                }));
            }
            if self.eof {
                return Ok(None);
            }
            let n = self.reader.read(&mut self.chunk).await?;
            if n == 0 {
                self.decoder.finish(&mut self.frames);
                self.eof = true;
            } else {
                self.decoder.push(&self.chunk[..n], &mut self.frames);
            }
            self.ready.extend(self.frames.drain(..));
        }
    }
}

/// `text` without a trailing `\r` (a line ended by CRLF).
pub(crate) fn strip_cr(mut text: String) -> String {
    if text.ends_with('\r') {
        text.pop();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(chunks: Vec<Vec<u8>>, max: usize) -> Vec<Line> {
        let (mut w, r) = tokio::io::duplex(1 << 20);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for c in chunks {
                w.write_all(&c).await.unwrap();
                w.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let mut d = LineDecoder::with_max_line(r, max);
        let mut out = Vec::new();
        while let Some(l) = d.next_line().await.unwrap() {
            out.push(l);
        }
        writer.await.unwrap();
        out
    }

    fn text(s: &str) -> Line {
        Line::Text(s.into())
    }

    #[tokio::test]
    async fn joins_fragments_and_keeps_an_unterminated_last_line() {
        let got = lines_of(
            vec![
                b"{\"a\":".to_vec(),
                b"1}\n{\"b\"".to_vec(),
                b":2}\nlast".to_vec(),
            ],
            1024,
        )
        .await;
        assert_eq!(
            got,
            vec![text("{\"a\":1}"), text("{\"b\":2}"), text("last")]
        );
    }

    #[tokio::test]
    async fn splits_on_the_newline_byte_only() {
        let got = lines_of(
            vec!["{\"t\":\"a\u{2028}b\u{2029}c\"}\r\n".as_bytes().to_vec()],
            1024,
        )
        .await;
        assert_eq!(got, vec![text("{\"t\":\"a\u{2028}b\u{2029}c\"}")]);
    }

    #[tokio::test]
    async fn a_multibyte_character_split_across_reads_survives() {
        let bytes = "é😀\n".as_bytes().to_vec();
        let chunks = bytes.iter().map(|b| vec![*b]).collect();
        assert_eq!(lines_of(chunks, 1024).await, vec![text("é😀")]);
    }

    #[tokio::test]
    async fn an_oversized_line_is_reported_and_reading_goes_on() {
        let long = vec![b'x'; 5000];
        let mut input = long.clone();
        input.extend_from_slice(b"\nnext\n");
        let got = lines_of(vec![input], 1000).await;
        assert_eq!(got, vec![Line::Oversized { bytes: 5000 }, text("next")]);
    }

    #[tokio::test]
    async fn an_oversized_unterminated_line_is_reported() {
        let got = lines_of(vec![vec![b'y'; 3000]], 1000).await;
        assert_eq!(got, vec![Line::Oversized { bytes: 3000 }]);
    }

    #[tokio::test]
    async fn a_64_mib_line_comes_back_whole() {
        let mut big = vec![b'z'; 64 << 20];
        big.push(b'\n');
        let got = lines_of(vec![big], DEFAULT_MAX_LINE).await;
        match &got[..] {
            [Line::Text(t)] => assert_eq!(t.len(), 64 << 20),
            other => panic!("{:?}", other.len()),
        }
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced_not_fatal() {
        let got = lines_of(vec![vec![b'a', 0xff, b'b', b'\n']], 1024).await;
        assert_eq!(got, vec![text("a\u{fffd}b")]);
    }

    #[tokio::test]
    async fn blank_lines_are_skipped() {
        assert_eq!(
            lines_of(vec![b"\n\nx\n".to_vec()], 10).await,
            vec![text("x")]
        );
    }
}
