//! Incremental JSONL framing of an agent's stdout.
//!
//! Lines are split on the newline byte only: a U+2028 inside a JSON string is
//! not a line break. Fragmented lines are joined, an unterminated last line is
//! still a line, a line of any size up to the cap is returned whole (a 64 MiB
//! tool result is fine), and a line over the cap is reported and skipped while
//! reading goes on. Bytes that are not UTF-8 are replaced, never fatal.

use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest line returned whole by default: 256 MiB.
pub const DEFAULT_MAX_LINE: usize = 256 << 20;

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
    buf: Vec<u8>,
    /// Where the current (unreturned) line starts in `buf`.
    start: usize,
    /// How far `buf` has been searched for a newline.
    scanned: usize,
    max: usize,
    /// Bytes of an over-long line dropped so far, while skipping to its end.
    dropping: Option<usize>,
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
            buf: Vec::with_capacity(CHUNK),
            start: 0,
            scanned: 0,
            max,
            dropping: None,
            eof: false,
        }
    }

    /// The next line, or `None` at the end of the stream.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            if let Some(line) = self.take_buffered() {
                return Ok(Some(line));
            }
            if self.eof {
                return Ok(self.take_rest());
            }
            self.fill().await?;
        }
    }

    /// A complete line already in the buffer, if any.
    fn take_buffered(&mut self) -> Option<Line> {
        let found = memchr(&self.buf[self.scanned..]).map(|i| self.scanned + i);
        let Some(end) = found else {
            self.scanned = self.buf.len();
            if self.buf.len() - self.start > self.max {
                // Too long already: forget what we have and skip to the newline.
                *self.dropping.get_or_insert(0) += self.buf.len() - self.start;
                self.buf.clear();
                self.start = 0;
                self.scanned = 0;
            }
            return None;
        };
        let line = &self.buf[self.start..end];
        self.start = end + 1;
        self.scanned = self.start;
        if let Some(dropped) = self.dropping.take() {
            return Some(Line::Oversized {
                bytes: dropped + line.len(),
            });
        }
        if line.len() > self.max {
            return Some(Line::Oversized { bytes: line.len() });
        }
        Some(Line::Text(to_text(line)))
    }

    /// The unterminated last line at the end of the stream.
    fn take_rest(&mut self) -> Option<Line> {
        let line = &self.buf[self.start..];
        let len = line.len();
        let text = (len > 0).then(|| to_text(line));
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        if let Some(dropped) = self.dropping.take() {
            return Some(Line::Oversized {
                bytes: dropped + len,
            });
        }
        text.map(Line::Text)
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        // Move the partial line to the front, so the buffer holds at most one line plus a chunk.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + CHUNK, 0);
        let read = self.reader.read(&mut self.buf[len..]).await;
        let n = *read.as_ref().unwrap_or(&0);
        self.buf.truncate(len + n);
        read?;
        if n == 0 {
            self.eof = true;
        }
        Ok(())
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

fn to_text(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
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
    async fn empty_lines_are_lines() {
        assert_eq!(
            lines_of(vec![b"\n\nx\n".to_vec()], 10).await,
            vec![text(""), text(""), text("x")]
        );
    }
}
