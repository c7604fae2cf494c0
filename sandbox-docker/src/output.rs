//! The last bytes of a box's output, kept in bounded memory however much it prints.

/// Keeps the last `cap` bytes pushed into it, using at most about `2 * cap`.
#[derive(Debug)]
pub(crate) struct TailBuffer {
    cap: usize,
    buf: Vec<u8>,
}

impl TailBuffer {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            buf: Vec::with_capacity(cap.min(1 << 20) * 2),
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if bytes.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&bytes[bytes.len() - self.cap..]);
            return;
        }
        self.buf.extend_from_slice(bytes);
        // Drop the front only once it is large, so pushing stays amortised O(1).
        if self.buf.len() > 2 * self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
        }
    }

    /// The kept bytes as text: at most `cap` bytes, starting at a character boundary.
    pub(crate) fn into_string(self) -> String {
        let start = self.buf.len().saturating_sub(self.cap);
        let mut tail = &self.buf[start..];
        // A cut may land inside a UTF-8 character: skip its continuation bytes.
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        tail = &tail[skip..];
        String::from_utf8_lossy(tail).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::TailBuffer;

    #[test]
    fn keeps_the_last_bytes() {
        let mut t = TailBuffer::new(4);
        for chunk in [b"ab".as_slice(), b"cdef", b"g", b"hi"] {
            t.push(chunk);
        }
        assert_eq!(t.into_string(), "fghi");
    }

    #[test]
    fn a_big_chunk_and_memory_stay_bounded() {
        let mut t = TailBuffer::new(10);
        for _ in 0..1000 {
            t.push(b"0123456");
            assert!(t.buf.len() <= 20);
        }
        t.push(&[b'x'; 100]);
        assert_eq!(t.into_string(), "x".repeat(10));
    }

    #[test]
    fn a_cut_character_is_dropped_not_mangled() {
        let mut t = TailBuffer::new(5);
        t.push("aé€b".as_bytes()); // a(1) é(2) €(3) b(1): the last 5 bytes cut é
        assert_eq!(t.into_string(), "€b");
    }
}
