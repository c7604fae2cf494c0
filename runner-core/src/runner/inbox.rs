//! A running turn's inbox, `runs/<id>/inbox.jsonl`: what callers in any process ask of it (a
//! message that steers it, an answer to a permission request, an interrupt). A caller
//! appends one line in one write; the turn's supervisor reads the lines as they come,
//! writes each to the agent's input file (`turn-<n>.stdin`, which a relay feeds to the
//! agent's stdin) and says in the event log what came of it. The input file is the record
//! of what was delivered: a supervisor taking the turn over reads the inbox again from its
//! start and skips each request whose line the input file already holds.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::control::RunFiles;
use super::disk::Appender;
use runner_contract::error::{Error, Result};
use runner_contract::options::PermissionAnswer;

/// One request to a running turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", deny_unknown_fields)]
pub(super) enum Request {
    /// Text for the agent while its turn runs.
    #[serde(rename_all = "camelCase")]
    Send {
        /// A fresh UUID.
        id: String,
        /// The turn it is for (a request for an earlier turn is never delivered).
        turn: u64,
        /// The caller's text.
        text: String,
    },
    /// The answer to a permission request.
    #[serde(rename_all = "camelCase")]
    Answer {
        /// A fresh UUID.
        id: String,
        /// The turn it is for.
        turn: u64,
        /// The agent's request id.
        request_id: String,
        /// Allow or deny.
        answer: PermissionAnswer,
    },
    /// End the turn without ending the agent's process.
    #[serde(rename_all = "camelCase")]
    Interrupt {
        /// A fresh UUID.
        id: String,
        /// The turn it is for.
        turn: u64,
        /// The agent's id of the conversation the caller made the line with, so the
        /// supervisor makes the same one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_session_id: Option<String>,
    },
}

impl Request {
    /// The turn the request is for.
    pub(super) fn turn(&self) -> u64 {
        match self {
            Self::Send { turn, .. } | Self::Answer { turn, .. } | Self::Interrupt { turn, .. } => {
                *turn
            }
        }
    }

    /// Its id.
    pub(super) fn id(&self) -> &str {
        match self {
            Self::Send { id, .. } | Self::Answer { id, .. } | Self::Interrupt { id, .. } => id,
        }
    }
}

/// The inbox file of a run.
fn path(files: &RunFiles) -> PathBuf {
    files.dir().join(runner_contract::run_folder::INBOX)
}

/// The input file of a turn: every line given to the agent's stdin, in order.
pub(super) fn input_file(files: &RunFiles, turn: u64) -> PathBuf {
    files
        .dir()
        .join(runner_contract::run_folder::agent_stdin(turn))
}

/// Appends `request` to the inbox, in one write (0600, never through a link): whole or not
/// at all. Callers in other processes append too, so each does it under a lock of the file
/// (a last line cut short by a caller that died is cut off first).
pub(super) fn post(files: &RunFiles, request: &Request) -> Result<()> {
    let mut line = serde_json::to_vec(request)
        .map_err(|e| Error::internal(format!("cannot encode an inbox request: {e}")))?;
    line.push(b'\n');
    let path = path(files);
    let file = open_lines(files, &path)?;
    file.lock()
        .map_err(|e| Error::io(format!("cannot lock {}", path.display()), &e))?;
    Appender::new(&path, file)?.append(&line)
}

/// Opens a file of lines under the run folder for reading and appending.
fn open_lines(files: &RunFiles, path: &std::path::Path) -> Result<std::fs::File> {
    files.root().open(
        path,
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
}

/// Reads an inbox as it grows.
pub(super) struct InboxReader {
    path: PathBuf,
    /// Just after the last whole line read (what follows may still be cut back).
    offset: u64,
}

impl InboxReader {
    /// A reader from the inbox's first line.
    pub(super) fn new(files: &RunFiles) -> Self {
        Self {
            path: path(files),
            offset: 0,
        }
    }

    /// The whole requests appended since the last call; a line that cannot be read is
    /// skipped (only codehands writes the inbox, and a line cut short by a kill is no
    /// request).
    pub(super) fn read_new(&mut self) -> Vec<Request> {
        let Ok(len) = std::fs::symlink_metadata(&self.path).map(|m| m.len()) else {
            return Vec::new();
        };
        if len <= self.offset {
            return Vec::new();
        }
        let Ok(mut file) = runner_contract::private::open_no_follow(
            &self.path,
            std::fs::OpenOptions::new().read(true),
        ) else {
            return Vec::new();
        };
        let mut bytes = Vec::new();
        if file.seek(SeekFrom::Start(self.offset)).is_err() || file.read_to_end(&mut bytes).is_err()
        {
            return Vec::new();
        }
        let Some(last) = bytes.iter().rposition(|&b| b == b'\n') else {
            return Vec::new();
        };
        self.offset += last as u64 + 1;
        bytes[..last]
            .split(|&b| b == b'\n')
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect()
    }
}

/// Appends `line` to the turn's input file in one write, unless the file already holds it
/// (delivered by a supervisor that went away); returns whether it wrote.
///
/// Whole or not at all: the relay feeding the agent (`tail -f`) must never pass on half a
/// line, so the room for it is taken first (`disk.rs`).
pub(super) fn deliver(files: &RunFiles, turn: u64, line: &str) -> Result<bool> {
    let path = input_file(files, turn);
    if delivered(files, turn, line) {
        return Ok(false);
    }
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    Appender::new(&path, open_lines(files, &path)?)?.append(&bytes)?;
    Ok(true)
}

/// Whether the turn's input file holds `line` as one of its lines.
pub(super) fn delivered(files: &RunFiles, turn: u64, line: &str) -> bool {
    let Ok(Some(bytes)) = runner_contract::private::read_no_follow(&input_file(files, turn)) else {
        return false;
    };
    bytes.split(|&b| b == b'\n').any(|l| l == line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> (tempfile::TempDir, RunFiles) {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path().join("run"));
        files.prepare().unwrap();
        (dir, files)
    }

    #[test]
    fn requests_come_back_in_order_and_a_line_cut_short_waits_for_its_end() {
        let (_dir, files) = files();
        let mut reader = InboxReader::new(&files);
        assert!(reader.read_new().is_empty());
        let send = Request::Send {
            id: "a".into(),
            turn: 1,
            text: "also do x".into(),
        };
        let answer = Request::Answer {
            id: "b".into(),
            turn: 1,
            request_id: "r1".into(),
            answer: PermissionAnswer::Deny {
                message: Some("no".into()),
            },
        };
        post(&files, &send).unwrap();
        post(&files, &answer).unwrap();
        assert_eq!(reader.read_new(), vec![send.clone(), answer]);
        // Half a line (a writer killed mid-write), then the rest of it.
        let mut half = files.root().append(&path(&files)).unwrap();
        use std::io::Write;
        half.write_all(br#"{"kind":"interrupt","id":"c","#).unwrap();
        assert!(reader.read_new().is_empty());
        half.write_all(b"\"turn\":1}\n").unwrap();
        assert_eq!(
            reader.read_new(),
            vec![Request::Interrupt {
                id: "c".into(),
                turn: 1,
                agent_session_id: None,
            }]
        );
        // A second reader (a supervisor taking over) sees them all again.
        assert_eq!(InboxReader::new(&files).read_new().len(), 3);
        assert_eq!(send.turn(), 1);
        assert_eq!(send.id(), "a");
    }

    #[test]
    fn a_line_cut_short_by_a_caller_that_died_is_cut_off_by_the_next() {
        let (_dir, files) = files();
        let mut reader = InboxReader::new(&files);
        std::fs::write(path(&files), br#"{"kind":"interrupt","id":"c","#).unwrap();
        assert!(reader.read_new().is_empty());
        let send = Request::Send {
            id: "d".into(),
            turn: 1,
            text: "next".into(),
        };
        post(&files, &send).unwrap();
        assert_eq!(reader.read_new(), vec![send]);
        let text = std::fs::read_to_string(path(&files)).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    #[test]
    fn a_line_is_delivered_once() {
        let (_dir, files) = files();
        assert!(deliver(&files, 2, r#"{"x":1}"#).unwrap());
        assert!(!deliver(&files, 2, r#"{"x":1}"#).unwrap());
        assert!(deliver(&files, 2, r#"{"x":2}"#).unwrap());
        assert!(delivered(&files, 2, r#"{"x":2}"#));
        // A line that merely contains another is not it.
        assert!(!delivered(&files, 2, r#"{"x":"#));
        assert!(!delivered(&files, 3, r#"{"x":1}"#));
        let text = std::fs::read_to_string(input_file(&files, 2)).unwrap();
        assert_eq!(text, "{\"x\":1}\n{\"x\":2}\n");
    }
}
