//! Cuts mini-swe-agent's stdout into trajectory documents and the lines between them.
//!
//! With `--output /dev/stdout` mini writes its whole trajectory after every step as
//! JSON indented by two spaces, without a final newline. So a document is a line
//! `{`, lines that each start with a space, and a line that starts with `}`; the
//! next write (or a print) may follow on that same line (`}{`, `}Saved …`). Strings
//! inside are JSON-escaped, so nothing a command printed can end a document early
//! or open one: command output never reaches stdout unescaped.

/// A document longer than this is dropped as cut short (mini's writes stay far below).
const MAX_DOCUMENT: usize = 64 << 20;

/// A piece of stdout.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Piece {
    /// A line outside any document.
    Line(String),
    /// A whole document, as text.
    Document(String),
    /// A document that never closed (a new one began, or it grew past the cap); its size in lines.
    Cut(usize),
}

/// The state between lines: the document being read, if any.
#[derive(Debug, Default)]
pub(super) struct Splitter {
    open: Option<(String, usize)>,
}

impl Splitter {
    /// The pieces that `line` completes.
    pub(super) fn push(&mut self, line: &str) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut line = line;
        loop {
            match self.open.take() {
                Some((mut doc, lines)) => {
                    if let Some(rest) = line.strip_prefix('}') {
                        doc.push('}');
                        pieces.push(Piece::Document(doc));
                        if rest.is_empty() {
                            break;
                        }
                        line = rest;
                        continue;
                    }
                    if line == "{" {
                        pieces.push(Piece::Cut(lines));
                        self.open = Some(("{\n".to_owned(), 1));
                    } else if doc.len() + line.len() > MAX_DOCUMENT {
                        pieces.push(Piece::Cut(lines + 1));
                    } else {
                        doc.push_str(line);
                        doc.push('\n');
                        self.open = Some((doc, lines + 1));
                    }
                    break;
                }
                None => {
                    if line == "{" {
                        self.open = Some(("{\n".to_owned(), 1));
                    } else {
                        pieces.push(Piece::Line(line.to_owned()));
                    }
                    break;
                }
            }
        }
        pieces
    }

    /// A document still open at the end of the stream.
    pub(super) fn finish(&mut self) -> Option<Piece> {
        self.open.take().map(|(_, lines)| Piece::Cut(lines))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<Piece> {
        let mut splitter = Splitter::default();
        let mut pieces: Vec<Piece> = text.split('\n').flat_map(|l| splitter.push(l)).collect();
        pieces.extend(splitter.finish());
        pieces
    }

    #[test]
    fn documents_written_back_to_back_and_the_lines_around_them() {
        let text = "Building agent config\n{\n  \"a\": 1\n}{\n  \"a\": 2\n}Saved trajectory\n";
        assert_eq!(
            split(text),
            [
                Piece::Line("Building agent config".into()),
                Piece::Document("{\n  \"a\": 1\n}".into()),
                Piece::Document("{\n  \"a\": 2\n}".into()),
                Piece::Line("Saved trajectory".into()),
                Piece::Line(String::new()),
            ]
        );
    }

    #[test]
    fn a_document_that_never_closes_is_cut() {
        assert_eq!(
            split("{\n  \"a\": 1\n{\n  \"b\": 2\n}"),
            [Piece::Cut(2), Piece::Document("{\n  \"b\": 2\n}".into())]
        );
        assert_eq!(split("{\n  \"a\": [\n"), [Piece::Cut(3)]);
    }

    #[test]
    fn lines_that_only_look_like_json_stay_lines() {
        assert_eq!(
            split("{\"type\":1}\n }"),
            [Piece::Line("{\"type\":1}".into()), Piece::Line(" }".into())]
        );
    }
}
