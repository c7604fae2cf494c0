//! How notes are written, built from a run, trimmed and capped: pure functions over text.
//!
//! `notes.md` is Markdown, newest note last. Every note opens with a heading line
//! (`## <when> …`), which is what marks where one note ends and the next begins, so
//! trimming can drop whole notes. A body line that would look like a heading is
//! escaped with a backslash (Markdown shows it unchanged) so a note cannot split itself.
//!
//! A run's note is data the next run's agent reads, written from what an untrusted agent
//! said and which files it touched: every part is put on one line, stripped of control
//! characters and bidi controls, and capped, so one note stays a few hundred characters.

use runner_contract::present;
use runner_contract::{Error, Result, RunSummary};

/// About how many lines `notes.md` keeps: older whole notes are dropped beyond it.
pub const MAX_NOTE_LINES: usize = 200;

/// How many characters of notes the agent gets at most (the newest end).
pub const PROMPT_CAP_CHARS: usize = 6_000;

/// The longest note `add_note` takes: more than the agent would ever see is refused.
pub const MAX_NOTE_CHARS: usize = PROMPT_CAP_CHARS;

const HEADING: &str = "## ";

/// How long the parts of a run's one-line summary may get, so one run cannot fill the prompt.
const PROMPT_CHARS: usize = 160;
const RESULT_CHARS: usize = 300;
const FILES_LISTED: usize = 5;
/// One file name, and the whole list of them.
const FILE_CHARS: usize = 60;
const FILES_CHARS: usize = 160;

/// What a note's line saying how its session ended starts with.
const ENDED: &str = "Ended: ";

/// Writes one note: a heading line, then the text. The heading is put on one line;
/// the text keeps its lines, without blank lines at either end.
///
/// ```
/// let note = memory_fs::format_note("2026-10-20T09:00:00.000Z", "npm test needs TZ=UTC");
/// assert_eq!(note, "## 2026-10-20T09:00:00.000Z\nnpm test needs TZ=UTC\n");
/// ```
pub fn format_note(heading: &str, text: &str) -> String {
    let mut note = format!("{HEADING}{}\n", note_line(heading, usize::MAX));
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    if let (Some(first), Some(last)) = (first, last) {
        for line in &lines[first..=last] {
            let line = present::plain(line);
            if line.starts_with(HEADING) {
                note.push('\\');
            }
            note.push_str(&line);
            note.push('\n');
        }
    }
    note
}

/// The note a finished run leaves: when and on which branch, then its summary on one
/// line (what was asked, what changed, what the agent said), each part shortened.
pub fn run_note(run: &RunSummary) -> String {
    let stat = &run.diff_stat;
    let mut summary = format!("Asked: {}", note_line(&run.prompt, PROMPT_CHARS));
    // A prompt is often a sentence already ("Fix the test. Run npm test to check."):
    // close it only when it does not close itself.
    if !summary.ends_with(['.', '!', '?', '…']) {
        summary.push('.');
    }
    if stat.is_empty() {
        summary.push_str(" Changed nothing.");
    } else {
        let files: Vec<String> = stat
            .files
            .iter()
            .take(FILES_LISTED)
            .map(|f| note_line(&f.path, FILE_CHARS))
            .collect();
        let plural = if stat.files_changed == 1 { "" } else { "s" };
        summary.push_str(&format!(
            " Changed {} file{plural} (+{} -{})",
            stat.files_changed, stat.insertions, stat.deletions
        ));
        if !files.is_empty() {
            summary.push_str(&format!(": {}", note_line(&files.join(", "), FILES_CHARS)));
            let more = stat.files.len().saturating_sub(FILES_LISTED);
            if more > 0 {
                summary.push_str(&format!(" and {more} more"));
            }
        }
        summary.push('.');
    }
    if let Some(result) = run.result.as_deref().filter(|r| !r.trim().is_empty()) {
        summary.push_str(&format!(" Result: {}", note_line(result, RESULT_CHARS)));
    }
    format_note(&format!("{} {}", run.finished_at, run.branch), &summary)
}

/// `notes` with the note of `branch` saying how its session ended (`approved`,
/// `rejected`): an `Ended: …` line at its end, replacing one it had. `None` when no note
/// names the branch.
pub fn set_outcome(notes: &str, branch: &str, outcome: &str) -> Option<String> {
    let starts = note_starts(notes);
    let (start, end) = starts
        .windows(2)
        .map(|w| (w[0], w[1]))
        .rfind(|&(start, end)| {
            notes[start..end]
                .lines()
                .next()
                .is_some_and(|heading| heading.starts_with(HEADING) && heading.ends_with(branch))
        })?;
    let body: Vec<&str> = notes[start..end]
        .trim_end()
        .lines()
        .filter(|l| !l.starts_with(ENDED))
        .collect();
    let mut note = body.join("\n");
    note.push_str(&format!("\n{ENDED}{}.\n", note_line(outcome, 40)));
    if end < notes.len() {
        note.push('\n');
    }
    Some(format!("{}{note}{}", &notes[..start], &notes[end..]))
}

/// Drops the oldest whole notes until at most `max_lines` lines are left. The newest
/// note is always kept, even when it alone is longer. The result is a suffix of `notes`.
pub fn trim_notes(notes: &str, max_lines: usize) -> String {
    let starts = note_starts(notes);
    let mut lines = notes.lines().count();
    let mut keep_from = 0;
    // The last chunk is the newest note, which is never dropped.
    for pair in starts[..starts.len() - 1].windows(2) {
        if lines <= max_lines {
            break;
        }
        lines -= notes[pair[0]..pair[1]].lines().count();
        keep_from = pair[1];
    }
    notes[keep_from..].to_owned()
}

/// The newest end of `notes`, at most `cap_chars` characters, cut on a character
/// boundary. When the cut lands inside a note, it moves on to the next note's heading
/// (or else the next line) so the agent does not get half a note at the top.
pub fn notes_for_prompt(notes: &str, cap_chars: usize) -> String {
    if cap_chars == 0 {
        return String::new();
    }
    let cut = match notes.char_indices().rev().nth(cap_chars - 1) {
        Some((cut, _)) if cut > 0 => cut,
        _ => return notes.to_owned(), // Within the cap.
    };
    let tail = &notes[cut..];
    let at_line_start = notes.as_bytes()[cut - 1] == b'\n';
    if at_line_start && tail.starts_with(HEADING) {
        return tail.to_owned();
    }
    let start = tail
        .find(&format!("\n{HEADING}"))
        .or_else(|| tail.find('\n').filter(|&i| i + 1 < tail.len()))
        .map_or(0, |i| i + 1);
    tail[start..].to_owned()
}

/// `notes` with `note` added at the end (a blank line between), trimmed to [`MAX_NOTE_LINES`].
pub(crate) fn append(notes: &str, note: &str) -> String {
    let old = notes.trim_end();
    let joined = if old.is_empty() {
        note.to_owned()
    } else {
        format!("{old}\n\n{note}")
    };
    trim_notes(&joined, MAX_NOTE_LINES)
}

/// Checks the text of a note given to `add_note`.
pub(crate) fn check_note_text(text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid_input(
            "the note is empty: pass the text to remember",
        ));
    }
    let chars = text.chars().count();
    if chars > MAX_NOTE_CHARS {
        return Err(Error::invalid_input(format!(
            "the note has {chars} characters, more than the {MAX_NOTE_CHARS} the agent is ever \
             shown: pass a shorter note"
        )));
    }
    Ok(())
}

/// Byte offsets where notes begin, plus the end of the text. Text before the first
/// heading (hand-written, say) counts as the oldest note.
fn note_starts(notes: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let mut offset = 0;
    for line in notes.split_inclusive('\n') {
        if offset > 0 && line.starts_with(HEADING) {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts.push(notes.len());
    starts
}

/// Puts `text` on one line, drops control characters and bidi controls (a note is read by
/// an agent and shown on terminals), and shortens it to `max_chars` characters with an
/// ellipsis.
fn note_line(text: &str, max_chars: usize) -> String {
    present::one_line(&present::plain(text), max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outcome_is_added_to_the_note_of_its_branch() {
        let notes = "## t1 codehands/a-1\nAsked: a.\n\n## t2 codehands/b-2\nAsked: b.\n";
        let once = set_outcome(notes, "codehands/a-1", "approved").unwrap();
        assert_eq!(
            once,
            "## t1 codehands/a-1\nAsked: a.\nEnded: approved.\n\n## t2 codehands/b-2\nAsked: b.\n"
        );
        let twice = set_outcome(&once, "codehands/b-2", "rejected").unwrap();
        assert!(twice.ends_with("Asked: b.\nEnded: rejected.\n"), "{twice}");
        let again = set_outcome(&twice, "codehands/a-1", "rejected").unwrap();
        assert!(
            again.starts_with("## t1 codehands/a-1\nAsked: a.\nEnded: rejected.\n\n## t2"),
            "{again}"
        );
        assert_eq!(set_outcome(notes, "codehands/none", "approved"), None);
    }

    #[test]
    fn note_text_loses_control_and_bidi_characters() {
        let note = format_note("t", "a\u{1b}[2Jb\u{202e}c\td");
        assert_eq!(note, "## t\na[2Jbc\td\n");
    }
}
