//! A full (or read-only) disk under a run: appends that are whole or absent, the reserve of
//! space a turn holds to write its end, and the message that names the disk.
//!
//! Every append to a run's line files (the event log, the transcript, the inbox, a turn's
//! input file) goes through [`Appender`]: the room for the line is taken first (`fallocate`
//! without growing the file), so a full disk refuses the line whole; where a file system cannot
//! be asked, a write that fails part way is cut back to the last whole line before anything
//! else is written, and every writer cuts a last line left without its newline (by a writer
//! that died) before it appends. A reader never sees a torn line followed by another.
//!
//! Each planned turn holds a reserve, `runs/<id>/reserve` ([`RESERVE_BYTES`]). A supervisor
//! that meets a full disk ends the agent, deletes the reserve and, in the room it leaves,
//! writes the turn's end (`task.failed` with `disk_full`, or the closing events it had made)
//! and the record; a failed turn's worktree goes then too, which frees more.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use runner_contract::error::{Error, ErrorKind, Result};

/// The room a planned turn holds for its end (deleted when it meets a full disk).
pub(super) const RESERVE_BYTES: u64 = 64 << 10;

/// Less free space than this on the disk of the run or the worktree counts as full when an
/// agent ends without a result (its own writes may have failed for it).
const FULL_BELOW: u64 = 1 << 20;

/// The appending end of a file of whole lines.
pub(super) struct Appender {
    path: PathBuf,
    file: File,
    /// The length up to and including the last whole line.
    len: u64,
    /// A failed write could not be cut back yet: cut before the next write.
    torn: bool,
}

impl Appender {
    /// Appends to `file` (opened for reading and writing, without `O_APPEND`) at `path`,
    /// cutting off a last line left without its newline by a writer that died mid-write.
    pub fn new(path: &Path, mut file: File) -> Result<Self> {
        let len = complete_length(&mut file)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), &e))?;
        let mut appender = Self {
            path: path.to_owned(),
            file,
            len,
            torn: true,
        };
        appender.cut_back()?;
        Ok(appender)
    }

    /// The length of the whole lines written.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Appends `bytes` (whole lines, ending in a newline) in one write: all of them reach the
    /// file, or none does.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.torn {
            self.cut_back()?;
        }
        let written = preallocate(&self.file, self.len, bytes.len() as u64)
            .and_then(|()| self.file.write_all_at(bytes, self.len));
        if let Err(e) = written {
            self.torn = true;
            let _ = self.cut_back();
            return Err(Error::io(
                format!("cannot append to {}", self.path.display()),
                &e,
            ));
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Cuts the file back to its last whole line (a write that failed part way).
    fn cut_back(&mut self) -> Result<()> {
        self.file
            .set_len(self.len)
            .map_err(|e| Error::io(format!("cannot cut back {}", self.path.display()), &e))?;
        self.torn = false;
        Ok(())
    }

    /// Cuts the file to `len` bytes (a line's end) when it is longer: a turn taken over
    /// writes its lines again from there.
    pub fn cut_to(&mut self, len: u64) -> Result<()> {
        if len < self.len {
            self.len = len;
            self.cut_back()?;
        }
        Ok(())
    }
}

/// Takes the room for `len` bytes at `offset` without growing the file, so a full disk
/// refuses a write before any of it is made. A file system that cannot be asked is not an
/// error: the write itself finds out, and is cut back.
fn preallocate(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    use nix::fcntl::{FallocateFlags, fallocate};
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Ok(());
    };
    match fallocate(file, FallocateFlags::FALLOC_FL_KEEP_SIZE, offset, len) {
        Err(
            e @ (nix::errno::Errno::ENOSPC | nix::errno::Errno::EDQUOT | nix::errno::Errno::EROFS),
        ) => Err(std::io::Error::from(e)),
        _ => Ok(()),
    }
}

/// The length of `file` up to and including its last newline.
pub(super) fn complete_length(file: &mut File) -> std::io::Result<u64> {
    let len = file.seek(SeekFrom::End(0))?;
    let mut end = len;
    let mut chunk = [0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..n])?;
        if let Some(at) = chunk[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Makes the reserve file at `path`: [`RESERVE_BYTES`] of room really taken on the disk.
/// Fails (leaving nothing) when the disk has not that much.
pub(super) fn make_reserve(file: &File, path: &Path) -> Result<()> {
    use nix::fcntl::{FallocateFlags, fallocate};
    let size = RESERVE_BYTES as i64;
    let made = match fallocate(file, FallocateFlags::empty(), 0, size) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EOPNOTSUPP | nix::errno::Errno::ENOSYS) => {
            // Written out instead: the blocks are taken all the same.
            let zeros = vec![0u8; 64 << 10];
            (0..RESERVE_BYTES / zeros.len() as u64)
                .try_for_each(|i| file.write_all_at(&zeros, i * zeros.len() as u64))
        }
        Err(e) => Err(std::io::Error::from(e)),
    };
    made.map_err(|e| Error::io(format!("cannot write {}", path.display()), &e))
}

/// Whether `error` says the disk is full or read-only.
pub(super) fn is_full(error: &Error) -> bool {
    error.kind() == ErrorKind::DiskFull
}

/// Whether the disk holding `path` has almost no room left (or is read-only).
pub(super) fn looks_full(path: &Path) -> bool {
    match space(path) {
        Some(Space { read_only, free }) => read_only || free < FULL_BELOW,
        None => false,
    }
}

/// What the disk holding a path has.
struct Space {
    read_only: bool,
    free: u64,
}

/// The free space of the disk holding `path` (or its nearest folder that exists).
fn space(path: &Path) -> Option<Space> {
    let found = path
        .ancestors()
        .find_map(|p| nix::sys::statvfs::statvfs(p).ok())?;
    Some(Space {
        read_only: found
            .flags()
            .contains(nix::sys::statvfs::FsFlags::ST_RDONLY),
        free: found.blocks_available() * found.fragment_size(),
    })
}

/// The error of a full (or read-only) disk holding `path`: what it has left, and what to
/// do (`then`: "run `codehands recover`", "try again"); `detail` is the failure met.
pub(super) fn full(path: &Path, detail: &str, then: &str) -> Error {
    Error::new(ErrorKind::DiskFull, full_message(path, detail, then))
}

/// `error` as a session's command says it: a full disk named with what it has left (the
/// home's disk when the error says no more), anything else as it is.
pub(super) fn named(home: &Path, error: Error) -> Error {
    if is_full(&error) && !error.message().starts_with("the disk holding") {
        full(home, error.message(), "run `codehands recover`")
    } else {
        error
    }
}

/// The words of [`full`].
pub(super) fn full_message(path: &Path, detail: &str, then: &str) -> String {
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    };
    match space(path) {
        Some(Space {
            read_only: true, ..
        }) => format!(
            "the disk holding {} is read-only: make it writable and {then}{detail}",
            path.display()
        ),
        Some(Space { free, .. }) => format!(
            "the disk holding {} is full ({} free): free space and {then}{detail}",
            path.display(),
            bytes(free)
        ),
        None => format!(
            "the disk holding {} is full: free space and {then}{detail}",
            path.display()
        ),
    }
}

/// `n` bytes for a person: "0 bytes", "12 KiB", "3.4 MiB".
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap()
    }

    #[test]
    fn a_line_left_without_its_newline_is_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, "one\ntw").unwrap();
        let mut out = Appender::new(&path, open(&path)).unwrap();
        assert_eq!(out.len(), 4);
        out.append(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        assert_eq!(out.len(), 8);
    }

    #[test]
    fn sizes_read_as_a_person_would() {
        assert_eq!(bytes(0), "0 bytes");
        assert_eq!(bytes(12 << 10), "12 KiB");
        assert_eq!(bytes(3 << 20 | 400 << 10), "3.4 MiB");
    }

    #[test]
    fn the_message_names_the_disk_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let error = full(
            &dir.path().join("not/yet"),
            "os error 28",
            "run `codehands recover`",
        );
        assert_eq!(error.kind(), ErrorKind::DiskFull);
        let text = error.to_string();
        assert!(
            text.starts_with(&format!(
                "the disk holding {}",
                dir.path().join("not/yet").display()
            )),
            "{text}"
        );
        assert!(
            text.contains("free): free space and run `codehands recover` (os error 28)"),
            "{text}"
        );
    }
}
