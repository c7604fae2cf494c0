//! JSONL framing: raw output bytes in, whole lines out.
//!
//! Lines end at the newline byte only: a U+2028 inside a JSON string is not a line
//! break, and neither is a lone `\r`. Chunks may end anywhere, even inside a UTF-8
//! character; an unterminated last line is given out by [`JsonlDecoder::finish`].
//! A line longer than the cap is dropped as it streams in (its bytes are never held)
//! and reported as [`Frame::TooLong`], and decoding goes on with the next line.

/// The default cap on one line: 256 MiB.
pub const DEFAULT_MAX_LINE: usize = 256 * 1024 * 1024;

/// One framed piece of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A whole line, without its newline.
    Line(String),
    /// A line that is not valid UTF-8, decoded lossily so it can still be shown.
    NotUtf8(String),
    /// A line over the cap, dropped; `bytes` is how long it was.
    TooLong {
        /// The dropped line's length in bytes.
        bytes: usize,
    },
}

impl Frame {
    /// The text to hand to a parser as one line: the line itself, or a short
    /// note for what could not be kept (which parses as a non-JSON message).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Self::Line(line) | Self::NotUtf8(line) => line.as_str().into(),
            Self::TooLong { bytes } => format!(
                "codehands dropped an output line of {bytes} bytes: it is over the line cap"
            )
            .into(),
        }
    }
}

/// Cuts a byte stream into [`Frame`]s.
#[derive(Debug)]
pub struct JsonlDecoder {
    buffer: Vec<u8>,
    max_line: usize,
    /// Bytes of an over-long line dropped so far, while skipping to its end.
    dropping: Option<usize>,
    /// Whether a blank line is given out (as an empty [`Frame::Line`]) rather than skipped.
    keep_blank_lines: bool,
}

impl Default for JsonlDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonlDecoder {
    /// A decoder with the [`DEFAULT_MAX_LINE`] cap.
    pub fn new() -> Self {
        Self::with_max_line(DEFAULT_MAX_LINE)
    }

    /// A decoder that drops lines longer than `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        Self {
            buffer: Vec::new(),
            max_line,
            dropping: None,
            keep_blank_lines: false,
        }
    }

    /// The same decoder, giving out blank lines (without their newline) instead of skipping
    /// them: for a person's answers, where an empty line means something.
    pub fn keeping_blank_lines(mut self) -> Self {
        self.keep_blank_lines = true;
        self
    }

    /// Takes the next chunk of output and appends the frames it completes to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Frame>) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let (piece, rest) = match newline {
                Some(at) => (&chunk[..at], Some(&chunk[at + 1..])),
                None => (chunk, None),
            };
            if let Some(dropped) = &mut self.dropping {
                *dropped += piece.len();
            } else if self.buffer.len() + piece.len() > self.max_line {
                self.dropping = Some(self.buffer.len() + piece.len());
                // Give the memory back: the line may have been huge.
                self.buffer = Vec::new();
            } else {
                self.buffer.extend_from_slice(piece);
            }
            match rest {
                Some(rest) => {
                    self.end_line(out);
                    chunk = rest;
                }
                None => break,
            }
        }
    }

    /// Ends the stream: gives out an unterminated last line, if any.
    pub fn finish(&mut self, out: &mut Vec<Frame>) {
        if self.dropping.is_some() || !self.buffer.is_empty() {
            self.end_line(out);
        }
    }

    fn end_line(&mut self, out: &mut Vec<Frame>) {
        if let Some(bytes) = self.dropping.take() {
            out.push(Frame::TooLong { bytes });
            return;
        }
        if self.buffer.is_empty() {
            if self.keep_blank_lines {
                out.push(Frame::Line(String::new()));
            }
            return;
        }
        // A buffer that grew large is not kept for the next, usually small, line.
        let bytes = if self.buffer.capacity() > 1 << 20 {
            std::mem::take(&mut self.buffer)
        } else {
            let copy = self.buffer.clone();
            self.buffer.clear();
            copy
        };
        if !self.keep_blank_lines && bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        out.push(match String::from_utf8(bytes) {
            Ok(line) => Frame::Line(line),
            Err(e) => Frame::NotUtf8(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(chunks: &[&[u8]], max: usize) -> Vec<Frame> {
        let mut decoder = JsonlDecoder::with_max_line(max);
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut out);
        }
        decoder.finish(&mut out);
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(s.into())
    }

    #[test]
    fn splits_on_newline_bytes_only() {
        let text = "{\"a\":\"x\u{2028}y\"}\n{\"b\":\"\r\"}\n";
        assert_eq!(
            frames(&[text.as_bytes()], 100),
            [line("{\"a\":\"x\u{2028}y\"}"), line("{\"b\":\"\r\"}")]
        );
    }

    #[test]
    fn joins_fragments_even_inside_a_character() {
        let text = "{\"t\":\"é€\"}\n".as_bytes();
        for cut in 1..text.len() {
            assert_eq!(
                frames(&[&text[..cut], &text[cut..]], 100),
                [line("{\"t\":\"é€\"}")],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn gives_out_an_unterminated_last_line_and_skips_blank_ones() {
        assert_eq!(frames(&[b"a\n\n  \nb"], 100), [line("a"), line("b")]);
    }

    #[test]
    fn keeps_blank_lines_when_asked_but_no_line_after_the_last_newline() {
        let mut decoder = JsonlDecoder::with_max_line(100).keeping_blank_lines();
        let mut out = Vec::new();
        decoder.push(b"a\n\n \n", &mut out);
        decoder.finish(&mut out);
        assert_eq!(out, [line("a"), line(""), line(" ")]);
    }

    #[test]
    fn drops_an_over_long_line_and_goes_on() {
        let got = frames(&[b"short\n0123456", b"789abc\nnext\n"], 8);
        assert_eq!(
            got,
            [line("short"), Frame::TooLong { bytes: 13 }, line("next")]
        );
        assert!(got[1].text().contains("13 bytes"));
    }

    #[test]
    fn reports_bytes_that_are_not_utf8() {
        assert_eq!(
            frames(&[b"ok\n\xff\xfe\n"], 100),
            [line("ok"), Frame::NotUtf8("\u{fffd}\u{fffd}".into())]
        );
    }
}
