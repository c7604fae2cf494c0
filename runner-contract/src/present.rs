//! Text for people: the one place that makes an agent's text safe to show and puts report
//! lines together.
//!
//! An agent's text (its messages, commands, file names, stderr) may hold control characters
//! that move a terminal's cursor, clear its screen or retitle its window, and Unicode's bidi
//! controls, which reorder what a person reads. Whatever shows such text (the human view of
//! a run, the report, the notes an agent is given, a run's note) goes through these
//! functions, and `xtask/tests/tidy.rs` fails when a copy of them appears anywhere else.

use std::borrow::Cow;

use crate::options::DiffStat;

/// The characters that change the order text is shown in (Unicode's bidi controls).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A character that must never reach a terminal as it is: a control character (C0, DEL, C1)
/// or a bidi control.
pub fn is_hidden(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// `text` with every hidden character ([`is_hidden`]) shown as an escape (`\x1b`,
/// `\u{202e}`) instead of reaching the terminal. With `keep_lines`, line feeds and tabs
/// stay (a patch, a test log).
pub fn visible(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let escaped = |c: char| !(keep_lines && matches!(c, '\n' | '\t')) && is_hidden(c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !escaped(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// `text` without its hidden characters ([`is_hidden`]), line feeds and tabs kept: for text
/// that is read again later (notes), where an escape would only be noise.
pub fn plain(text: &str) -> Cow<'_, str> {
    let dropped = |c: char| !matches!(c, '\n' | '\t') && is_hidden(c);
    if !text.chars().any(dropped) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|&c| !dropped(c)).collect())
}

/// `text` on one line (every run of whitespace, line breaks included, is one space), cut to
/// `max_chars` characters with an ellipsis as the last one. Hidden characters other than
/// whitespace stay: pass the result through [`visible`] or [`plain`].
pub fn one_line(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        return flat;
    }
    let mut short: String = flat.chars().take(max_chars.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// "2 files changed, 3 insertions(+), 1 deletion(-)", as git says it.
pub fn stat_line(stat: &DiffStat) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{}, {}(+), {}(-)",
        plural(stat.files_changed, "file changed", "files changed"),
        plural(stat.insertions, "insertion", "insertions"),
        plural(stat.deletions, "deletion", "deletions")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::FileStat;

    #[test]
    fn controls_and_bidi_controls_are_escaped() {
        assert_eq!(
            visible("a\u{1b}[2J\tb\u{202e}c\u{7f}\u{85}", false),
            "a\\x1b[2J\\x09b\\u{202e}c\\x7f\\x85"
        );
        assert_eq!(visible("a\n\tb\u{1b}", true), "a\n\tb\\x1b");
        assert!(matches!(visible("plain text", false), Cow::Borrowed(_)));
    }

    #[test]
    fn plain_text_keeps_lines_and_drops_the_rest() {
        assert_eq!(plain("a\u{1b}[2J\n\tb\u{2066}c\r"), "a[2J\n\tbc");
        assert!(matches!(plain("plain\ntext"), Cow::Borrowed(_)));
    }

    #[test]
    fn one_line_flattens_and_cuts_with_an_ellipsis() {
        assert_eq!(one_line("  a\n\n b\tc  ", 160), "a b c");
        let long = "x".repeat(500);
        let cut = one_line(&long, 160);
        assert_eq!(cut.chars().count(), 160);
        assert!(cut.ends_with('…'));
        assert_eq!(one_line("abc", 3), "abc");
        assert_eq!(one_line("abcd", 3), "ab…");
    }

    #[test]
    fn the_stat_line_speaks_as_git_does() {
        let file = |insertions, deletions| FileStat {
            path: "a".into(),
            old_path: None,
            insertions,
            deletions,
            binary: false,
            too_large: false,
        };
        assert_eq!(
            stat_line(&DiffStat::from_files(vec![file(1, 0)])),
            "1 file changed, 1 insertion(+), 0 deletions(-)"
        );
        assert_eq!(
            stat_line(&DiffStat::from_files(vec![file(2, 1), file(1, 0)])),
            "2 files changed, 3 insertions(+), 1 deletion(-)"
        );
    }
}
