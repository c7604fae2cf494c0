//! Cutting secret values out of text a reader sees: the agent's lines (and so the
//! transcript and every event's payload and `raw`), its stderr, the notes of a run.
//!
//! An agent that prints its key rarely prints it plainly: a JSON encoder escapes a
//! character (`sk\u002dant…`), a tool result is JSON inside JSON (`\\u002d`), a URL
//! carries it percent-encoded, a dump shows it in base64, a log line cuts it short.
//! [`Redactor::redact`] finds each of those forms, in any mix, and any prefix of 12 or
//! more characters of the value, and replaces the whole span with `[redacted]`. It runs
//! on the raw line, before the line is decoded, so the decoded payload never holds the
//! value either; a replaced span is always whole escapes, so a JSON line stays JSON.

use std::borrow::Cow;

use base64::Engine;

/// What a cut-out secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// How many leading characters of a secret are enough to count as the secret.
pub const MIN_PREFIX_CHARS: usize = 12;

/// How short a value may be and still be treated as a secret: shorter values would
/// match ordinary text.
pub const MIN_SECRET_CHARS: usize = 8;

/// Cuts a set of secret values, in every form it knows, out of text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    patterns: Vec<Pattern>,
}

/// One form of one secret: its bytes, and how many of them must match in a row.
#[derive(Debug, Clone)]
struct Pattern {
    bytes: Vec<u8>,
    min_match: usize,
}

impl Redactor {
    /// A redactor for `secrets`; values shorter than [`MIN_SECRET_CHARS`] are left out.
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut patterns = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.chars().count() < MIN_SECRET_CHARS {
                continue;
            }
            patterns.push(Pattern {
                bytes: secret.as_bytes().to_vec(),
                min_match: prefix_bytes(secret, MIN_PREFIX_CHARS),
            });
            patterns.extend(base64_patterns(secret.as_bytes()));
        }
        patterns.sort_by(|a, b| a.bytes.cmp(&b.bytes));
        patterns.dedup_by(|a, b| a.bytes == b.bytes);
        Self { patterns }
    }

    /// Whether there is nothing to cut.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// `text` with every form of every secret replaced by [`REDACTED`]; borrowed when
    /// nothing was found.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let bytes = text.as_bytes();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for pattern in &self.patterns {
            pattern.find_all(bytes, &mut spans);
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut spans = spans.into_iter().peekable();
        while let Some((start, mut end)) = spans.next() {
            // Overlapping or touching matches (two forms, two secrets) become one cut.
            while let Some(&(next_start, next_end)) = spans.peek() {
                if next_start > end {
                    break;
                }
                end = end.max(next_end);
                spans.next();
            }
            out.push_str(&text[at..start]);
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// [`Redactor::redact`] for an owned string.
    pub fn redact_string(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(cut) => cut,
        }
    }
}

impl Pattern {
    /// Adds the span of every match in `text` to `spans`. Spans always start and end on
    /// character boundaries: every encoding matched is ASCII, and a literal match covers
    /// whole characters of the (valid UTF-8) secret.
    fn find_all(&self, text: &[u8], spans: &mut Vec<(usize, usize)>) {
        let first = self.bytes[0];
        let mut pos = 0;
        while let Some(offset) = memchr::memchr3(first, b'\\', b'%', &text[pos..]) {
            let start = pos + offset;
            match self.match_at(text, start) {
                Some(end) => {
                    spans.push((start, end));
                    pos = end;
                }
                None => pos = start + 1,
            }
            if pos >= text.len() {
                break;
            }
        }
    }

    /// The end of the longest run of this pattern's bytes (each in any encoding) that
    /// starts at `start`, if at least `min_match` of them matched.
    fn match_at(&self, text: &[u8], start: usize) -> Option<usize> {
        let mut at = start;
        let mut matched = 0;
        for &want in &self.bytes {
            match encoded_len(&text[at..], want) {
                Some(len) => {
                    at += len;
                    matched += 1;
                }
                None => break,
            }
        }
        // A literal match must end on a character boundary (a prefix of a multi-byte
        // character is not a match of it).
        while matched >= self.min_match && !is_char_boundary(text, at) {
            at -= 1;
            matched -= 1;
        }
        (matched >= self.min_match).then_some(at)
    }
}

/// How many bytes at the start of `text` encode the byte `want`: itself, a JSON escape at
/// any depth (`\u002d`, `\\u002d`, `\/`, `\"`), a `\x2d` escape, or percent-encoding (`%2D`).
fn encoded_len(text: &[u8], want: u8) -> Option<usize> {
    let &first = text.first()?;
    if first == want {
        return Some(1);
    }
    if !want.is_ascii() {
        return None;
    }
    match first {
        b'%' => hex_byte(text.get(1..3)?).filter(|&b| b == want).map(|_| 3),
        b'\\' => {
            let slashes = text.iter().take_while(|&&b| b == b'\\').count();
            let rest = &text[slashes..];
            match rest.first()? {
                b'u' => {
                    let hex = rest.get(1..5)?;
                    (hex_byte(&hex[..2])? == 0 && hex_byte(&hex[2..])? == want)
                        .then_some(slashes + 5)
                }
                b'x' => (hex_byte(rest.get(1..3)?)? == want).then_some(slashes + 3),
                &c if c == want && matches!(want, b'/' | b'"' | b'\\' | b'\'') => Some(slashes + 1),
                _ => None,
            }
        }
        _ => None,
    }
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    let digit = |b: u8| (b as char).to_digit(16);
    Some((digit(two[0])? * 16 + digit(two[1])?) as u8)
}

fn is_char_boundary(text: &[u8], at: usize) -> bool {
    at >= text.len() || (text[at] as i8) >= -0x40
}

/// How many bytes the first `chars` characters of `text` take (all of it when shorter).
fn prefix_bytes(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// The secret as it shows inside base64 text, at each of the three alignments it can
/// start at, in the standard and the URL-safe alphabet: only the characters that come
/// from the secret's bits alone, so they match whatever surrounds it.
fn base64_patterns(secret: &[u8]) -> Vec<Pattern> {
    let mut patterns = Vec::new();
    for lead in 0..3usize {
        let mut padded = vec![0u8; lead];
        padded.extend_from_slice(secret);
        let bits = padded.len() * 8;
        let first = (lead * 8).div_ceil(6);
        let last = bits / 6; // chars wholly inside the secret end here
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            let encoded = engine.encode(&padded);
            let Some(core) = encoded.get(first..last) else {
                continue;
            };
            // Twelve bytes of the secret are sixteen base64 characters.
            let min_match = if secret.len() >= MIN_PREFIX_CHARS {
                16.min(core.len())
            } else {
                core.len()
            };
            if min_match > 0 {
                patterns.push(Pattern {
                    bytes: core.as_bytes().to_vec(),
                    min_match,
                });
            }
        }
    }
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-ant-api03-Zq9xT4mPz1Lr8Kd2Vn7Ws3Yb6Hc0Jf5Ge";

    fn redact(text: &str) -> String {
        Redactor::new([KEY]).redact(text).into_owned()
    }

    fn assert_cut(text: &str) {
        let out = redact(text);
        assert!(out.contains(REDACTED), "nothing cut from {text:?}: {out:?}");
        let tail = &KEY[MIN_PREFIX_CHARS..];
        for probe in [&KEY[..MIN_PREFIX_CHARS], tail] {
            assert!(!out.contains(probe), "{probe:?} is left in {out:?}");
        }
    }

    #[test]
    fn the_raw_value_is_cut() {
        assert_eq!(redact(&format!("key={KEY}; done")), "key=[redacted]; done");
        assert_eq!(redact(KEY), REDACTED);
    }

    #[test]
    fn json_escaped_forms_are_cut_and_the_line_stays_json() {
        let one = KEY.replace('-', "\\u002d");
        let line = format!(r#"{{"type":"result","result":"the key is {one}"}}"#);
        assert_cut(&line);
        let value: serde_json::Value = serde_json::from_str(&redact(&line)).unwrap();
        assert_eq!(value["result"], "the key is [redacted]");
        // Every character escaped, upper-case hex.
        let all: String = KEY.bytes().map(|b| format!("\\u{b:04X}")).collect();
        assert_cut(&format!(r#"{{"a":"{all}"}}"#));
        // JSON inside JSON: the escape is escaped again.
        let nested = KEY.replace('-', "\\\\u002d");
        let line = format!(r#"{{"content":"{{\"env\":\"{nested}\"}}"}}"#);
        assert_cut(&line);
        let value: serde_json::Value = serde_json::from_str(&redact(&line)).unwrap();
        assert!(value["content"].as_str().unwrap().contains(REDACTED));
        assert_cut(&KEY.replace('-', "\\x2d"));
    }

    #[test]
    fn url_encoded_forms_are_cut() {
        assert_cut(&format!("GET /v1?key={}&x=1", KEY.replace('-', "%2D")));
        let all: String = KEY.bytes().map(|b| format!("%{b:02x}")).collect();
        assert_cut(&format!("https://example.invalid/?k={all}"));
    }

    #[test]
    fn base64_forms_are_cut_at_every_alignment() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE};
        for lead in ["", "x", "xy", "xyz"] {
            let text = format!("{lead}ANTHROPIC_API_KEY={KEY}\n");
            for encoded in [STANDARD.encode(&text), URL_SAFE.encode(&text)] {
                let out = redact(&format!("dump: {encoded}"));
                assert!(out.contains(REDACTED), "{lead:?}: {out}");
                let plain = STANDARD.encode(KEY);
                assert!(!out.contains(&plain[4..24]), "{out}");
            }
        }
    }

    #[test]
    fn a_prefix_of_twelve_characters_or_more_is_cut() {
        assert_eq!(redact(&format!("{}…", &KEY[..12])), "[redacted]…");
        assert_eq!(redact(&format!("({})", &KEY[..20])), "([redacted])");
        assert_eq!(redact(&KEY[..11]), &KEY[..11], "eleven characters stay");
        assert_cut(&KEY[..16].replace('-', "\\u002d"));
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let redactor = Redactor::new([KEY]);
        for text in [
            "",
            "plain text with \\n escapes and 100% of it fine",
            r#"{"a":"\u00e9\\u002d","b":"%zz"}"#,
            "sk-ant-api0",
            "ünïcödé ✓ \\",
        ] {
            assert!(matches!(redactor.redact(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn short_values_are_not_secrets_and_several_secrets_are_all_cut() {
        let redactor = Redactor::new(["short", "tok_0123456789", KEY]);
        assert_eq!(redactor.redact("short"), "short");
        assert_eq!(
            redactor.redact(&format!("a tok_0123456789 b {KEY} c")),
            "a [redacted] b [redacted] c"
        );
        // A secret shorter than the prefix length must match whole.
        assert_eq!(redactor.redact("tok_01234"), "tok_01234");
    }

    #[test]
    fn multibyte_secrets_and_text_keep_their_characters() {
        let redactor = Redactor::new(["pässwörd-geheim"]);
        assert_eq!(redactor.redact("ä pässwörd-geheim ö"), "ä [redacted] ö");
        assert_eq!(redactor.redact("pässwörd-gehei"), "[redacted]");
    }
}
