//! The event log of a session, `runs/<sessionId>/events.jsonl`: every event, in seq order, as
//! the contract's JSON, one per line. It is appended to before any caller sees an event, so a
//! caller can replay from any seq, and a runner that adopts a run knows what was said.
//!
//! Only the run's supervisor (who holds `supervisor.lock`) appends. The events of one agent
//! line go out in one `write`, so a reader sees all of them or none; a supervisor killed in
//! the middle of a write can leave a last line without its newline, which readers ignore
//! and the next writer cuts off before it appends.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::disk::Appender;
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::event::Event;
use runner_contract::private::PrivateRoot;

/// The appending end of a session's event log.
pub(super) struct EventLog {
    out: Appender,
    buffer: Vec<u8>,
}

impl EventLog {
    /// Opens the log at `path` for appending (0600, never through a link), cutting off a
    /// last line left without its newline by a writer that died mid-write.
    pub fn open(root: &PrivateRoot, path: &Path) -> Result<Self> {
        let file = root.open(
            path,
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        Ok(Self {
            out: Appender::new(path, file)?,
            buffer: Vec::new(),
        })
    }

    /// Appends `events` in one write: all of them reach the log, or none (a write that fails
    /// part way, on a full disk, is cut back).
    pub fn append(&mut self, events: &[Event]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        self.buffer.clear();
        for event in events {
            serde_json::to_writer(&mut self.buffer, event)
                .map_err(|e| Error::internal(format!("cannot write an event as JSON: {e}")))?;
            self.buffer.push(b'\n');
        }
        self.out.append(&self.buffer)
    }
}

/// Reads complete lines of a log as they are appended, from a byte offset.
///
/// Bytes after the last newline are read again next time rather than kept: a writer cuts a
/// line it could not finish back before it appends the next, so what follows the last whole
/// line may change.
pub(super) struct LogReader {
    path: PathBuf,
    file: Option<File>,
    /// Just after the last whole line read.
    offset: u64,
    line: usize,
}

impl LogReader {
    /// A reader of the log at `path` from its start (the file may not exist yet).
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            file: None,
            offset: 0,
            line: 0,
        }
    }

    /// The events appended since the last call (only whole lines); an empty list when
    /// nothing new is there. A line that is not an event is an error naming the file and
    /// the line ([`ErrorKind::CorruptRecord`]): the log is written only by codehands.
    pub fn read_new(&mut self) -> Result<Vec<Event>> {
        if self.file.is_none() {
            match runner_contract::private::open_no_follow(
                &self.path,
                std::fs::OpenOptions::new().read(true),
            ) {
                Ok(file) => self.file = Some(file),
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(e),
            }
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(Vec::new());
        };
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.read_to_end(&mut bytes))
            .map_err(|e| Error::io(format!("cannot read {}", self.path.display()), &e))?;
        let Some(last) = bytes.iter().rposition(|&b| b == b'\n') else {
            return Ok(Vec::new());
        };
        self.offset += last as u64 + 1;
        let mut events = Vec::new();
        for line in bytes[..last].split(|&b| b == b'\n') {
            self.line += 1;
            if line.is_empty() {
                continue;
            }
            events.push(parse(line, self.line, &self.path)?);
        }
        Ok(events)
    }
}

/// Line `number` of the log at `path` as an event.
fn parse(line: &[u8], number: usize, path: &Path) -> Result<Event> {
    serde_json::from_slice(line).map_err(|e| {
        Error::new(
            ErrorKind::CorruptRecord,
            format!(
                "line {number} of the event log {} is not an event ({e}): the log is written only by codehands; move the file away to read the session's record without it",
                path.display()
            ),
        )
    })
}

/// What one pass over a log keeps: its last seq, and the few events after a seq that a turn's
/// end needs (`keep` says which), so a log of any length is read in constant memory.
pub(super) struct Scan {
    /// The seq of the last whole event (0 for an empty log).
    pub last_seq: u64,
    /// The events after the seq asked for that `keep` chose, in order.
    pub kept: Vec<Event>,
}

/// Reads the log at `path` line by line, keeping only what [`Scan`] says.
pub(super) fn scan(
    path: &Path,
    after: u64,
    mut keep: impl FnMut(&runner_contract::event::EventBody) -> bool,
) -> Result<Scan> {
    use std::io::BufRead;
    let mut found = Scan {
        last_seq: 0,
        kept: Vec::new(),
    };
    let file = match runner_contract::private::open_no_follow(
        path,
        std::fs::OpenOptions::new().read(true),
    ) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
        // The end, or a last line cut short by a writer that died: not an event.
        if n == 0 || line.last() != Some(&b'\n') {
            return Ok(found);
        }
        number += 1;
        if line.len() == 1 {
            continue;
        }
        let event = parse(&line[..line.len() - 1], number, path)?;
        found.last_seq = event.seq;
        if event.seq > after && keep(&event.body) {
            found.kept.push(event);
        }
    }
}

/// Every whole event of the log at `path` (none when there is no log).
pub(super) fn read_all(path: &Path) -> Result<Vec<Event>> {
    LogReader::new(path.to_owned()).read_new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::event::{EventBody, Message};
    use runner_contract::ids::SessionId;
    use runner_contract::sequence::EventSequence;
    use std::io::Write;

    fn events(n: usize) -> Vec<Event> {
        let mut seq = EventSequence::new(SessionId::new_random());
        (0..n)
            .map(|i| {
                seq.next(
                    EventBody::Message(Message {
                        text: format!("line {i}"),
                        ..Message::default()
                    }),
                    None,
                )
            })
            .collect()
    }

    #[test]
    fn a_line_cut_short_is_not_read_and_is_cut_off_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let root = PrivateRoot::new(dir.path());
        let path = dir.path().join("events.jsonl");
        let all = events(3);
        let mut log = EventLog::open(&root, &path).unwrap();
        log.append(&all[..2]).unwrap();
        drop(log);
        // A writer killed mid-write: half of the third line.
        let third = serde_json::to_string(&all[2]).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(&third.as_bytes()[..third.len() / 2])
            .unwrap();
        assert_eq!(read_all(&path).unwrap(), all[..2]);
        let mut log = EventLog::open(&root, &path).unwrap();
        log.append(&all[2..]).unwrap();
        assert_eq!(read_all(&path).unwrap(), all);
    }

    #[test]
    fn a_reader_that_saw_half_a_line_reads_the_line_written_in_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let root = PrivateRoot::new(dir.path());
        let path = dir.path().join("events.jsonl");
        let all = events(3);
        let mut log = EventLog::open(&root, &path).unwrap();
        log.append(&all[..1]).unwrap();
        drop(log);
        let mut reader = LogReader::new(path.clone());
        // A write that failed part way (a full disk) and was cut back, seen before the cut.
        let torn = serde_json::to_string(&all[2]).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(&torn.as_bytes()[..torn.len() / 3]).unwrap();
        assert_eq!(reader.read_new().unwrap(), all[..1]);
        let mut log = EventLog::open(&root, &path).unwrap();
        log.append(&all[1..]).unwrap();
        assert_eq!(reader.read_new().unwrap(), all[1..]);
    }

    #[test]
    fn a_line_torn_in_the_middle_of_the_log_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let lines: Vec<String> = events(3)
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        let torn = format!("{}\n{}\n{}\n", lines[0], &lines[1][..20], lines[2]);
        std::fs::write(&path, torn).unwrap();
        for error in [
            read_all(&path).unwrap_err(),
            scan(&path, 0, |_| true).err().unwrap(),
        ] {
            assert_eq!(error.kind(), ErrorKind::CorruptRecord);
            assert!(
                error.to_string().starts_with("line 2 of the event log"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_scan_keeps_only_what_it_is_asked_for_after_a_seq() {
        let dir = tempfile::tempdir().unwrap();
        let root = PrivateRoot::new(dir.path());
        let path = dir.path().join("events.jsonl");
        let all = events(6);
        EventLog::open(&root, &path).unwrap().append(&all).unwrap();
        let scan = scan(
            &path,
            2,
            |body| matches!(body, EventBody::Message(m) if m.text.ends_with('4')),
        )
        .unwrap();
        assert_eq!(scan.last_seq, 6);
        assert_eq!(scan.kept, all[4..5]);
    }

    #[test]
    fn a_reader_sees_only_what_was_appended_since_its_last_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = PrivateRoot::new(dir.path());
        let path = dir.path().join("events.jsonl");
        let mut reader = LogReader::new(path.clone());
        assert!(reader.read_new().unwrap().is_empty(), "no log yet");
        let all = events(5);
        let mut log = EventLog::open(&root, &path).unwrap();
        log.append(&all[..3]).unwrap();
        assert_eq!(reader.read_new().unwrap(), all[..3]);
        assert!(reader.read_new().unwrap().is_empty());
        log.append(&all[3..]).unwrap();
        assert_eq!(reader.read_new().unwrap(), all[3..]);
    }
}
