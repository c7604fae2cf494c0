//! The box's output, written to the shim's stdout and stderr (the run's transcript files).
//! A shim started again for the same box reads the box's log from the start: the bytes its
//! files hold already are skipped, as the runner's re-adoption rule asks.

use std::cell::Cell;
use std::io::Write;
use std::rc::Rc;
use std::time::Instant;

use crate::frame::ResultCollector;

/// When something was first seen, shared with whoever waits for it beside the reader.
pub(crate) type Seen = Rc<Cell<Option<Instant>>>;

/// Where the box's output goes.
pub(crate) struct Output {
    skip_out: u64,
    skip_err: u64,
    err_line: Vec<u8>,
    held: Vec<u8>,
    collectors: Vec<ResultCollector>,
    first_output: Seen,
    result_ended: Seen,
    exited: Rc<Cell<Option<i32>>>,
    exit_notify: Rc<tokio::sync::Notify>,
    stdout_end: Option<Vec<u8>>,
    stdout_ended: Rc<Cell<bool>>,
}

impl Output {
    /// An output that skips what our stdout and stderr files hold already, and takes the
    /// lines of each of `collectors` out of stderr.
    pub(crate) fn resumed(collectors: Vec<ResultCollector>) -> Self {
        Self {
            skip_out: file_len(1),
            skip_err: file_len(2),
            err_line: Vec::new(),
            held: Vec::new(),
            collectors,
            first_output: Seen::default(),
            result_ended: Seen::default(),
            exited: Rc::default(),
            exit_notify: Rc::default(),
            stdout_end: None,
            stdout_ended: Rc::default(),
        }
    }

    /// Takes the box's stdout end line (`frame::stdout_end_line`) out of stdout, and says
    /// when it came ([`Output::stdout_ended`]).
    pub(crate) fn with_stdout_end(mut self, line: &str) -> Self {
        self.stdout_end = Some(format!("{line}\n").into_bytes());
        self
    }

    /// Whether stdout's end line came: what the box prints on stdout has all come. The exit
    /// notice ([`Output::exit`]) wakes its waiter when it comes, too.
    pub(crate) fn stdout_ended(&self) -> Rc<Cell<bool>> {
        self.stdout_ended.clone()
    }

    /// The agent's exit code once the box's last line (the exit line) came, and a notice that
    /// wakes whoever waits for it.
    pub(crate) fn exit(&self) -> (Rc<Cell<Option<i32>>>, Rc<tokio::sync::Notify>) {
        (self.exited.clone(), self.exit_notify.clone())
    }

    /// When the box's first output came.
    pub(crate) fn first_output(&self) -> Seen {
        self.first_output.clone()
    }

    /// When the end line of the result (the first collector's) came: the agent has ended.
    pub(crate) fn result_ended(&self) -> Seen {
        self.result_ended.clone()
    }

    fn saw_output(&self) {
        if self.first_output.get().is_none() {
            self.first_output.set(Some(Instant::now()));
        }
    }

    /// Skips the bytes already passed on again: for a second read of the same log from its
    /// start. The collectors keep what they took (a line read twice counts once).
    pub(crate) fn replay(&mut self, written_out: u64, written_err: u64) {
        self.skip_out = written_out;
        self.skip_err = written_err;
        self.err_line.clear();
        self.held.clear();
    }

    /// Bytes of stdout from the box, passed on up to the last whole line, which is held back
    /// ([`Output::finish`]). Returns how many bytes were passed on.
    pub(crate) fn stdout(&mut self, bytes: &[u8]) -> u64 {
        self.saw_output();
        self.held.extend_from_slice(bytes);
        // The end line is stdout's last bytes: a second read of the log finds it again.
        if let Some(end) = &self.stdout_end
            && self.held.ends_with(end)
        {
            self.held.truncate(self.held.len() - end.len());
            if !self.stdout_ended.replace(true) {
                self.exit_notify.notify_one();
            }
        }
        let cut = ready_len(&self.held);
        let ready: Vec<u8> = self.held.drain(..cut).collect();
        self.write_out(&ready)
    }

    /// Passes the held-back last line on once the result is applied (`applied`), or drops it
    /// when the result was refused; returns the bytes passed on.
    pub(crate) fn finish(&mut self, applied: bool) -> u64 {
        let held = std::mem::take(&mut self.held);
        if applied { self.write_out(&held) } else { 0 }
    }

    fn write_out(&mut self, bytes: &[u8]) -> u64 {
        let rest = skip(&mut self.skip_out, bytes);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(rest);
        let _ = out.flush();
        rest.len() as u64
    }

    /// Bytes of stderr from the box; with collectors, whole lines, theirs taken out.
    /// Returns how many bytes were passed on (the skip counts only those).
    pub(crate) fn stderr(&mut self, bytes: &[u8]) -> u64 {
        self.saw_output();
        if self.collectors.is_empty() {
            let rest = skip(&mut self.skip_err, bytes);
            let _ = std::io::stderr().write_all(rest);
            return rest.len() as u64;
        }
        self.err_line.extend_from_slice(bytes);
        let mut passed = 0;
        while let Some(end) = self.err_line.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.err_line.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            // A warm box's answers to its hand-in are in its log, not in the run's transcript.
            if crate::handin::is_answer(&text) {
                continue;
            }
            if !self.collectors.iter_mut().any(|c| c.take(&text)) {
                let rest = skip(&mut self.skip_err, &line);
                let _ = std::io::stderr().write_all(rest);
                passed += rest.len() as u64;
            }
        }
        if let Some(result) = self.collectors.first() {
            if self.result_ended.get().is_none() && result.ended() {
                self.result_ended.set(Some(Instant::now()));
            }
            if self.exited.get().is_none() && result.exit_code().is_some() {
                self.exited.set(result.exit_code());
                self.exit_notify.notify_one();
            }
        }
        passed
    }

    /// The collectors, with everything they took, in the order given.
    pub(crate) fn take_collectors(&mut self) -> Vec<ResultCollector> {
        std::mem::take(&mut self.collectors)
    }
}

/// How much of `held` may be passed on: everything up to the last whole line, or through it
/// when more has come after it.
fn ready_len(held: &[u8]) -> usize {
    let mut newlines = held
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
        .rev();
    match (newlines.next(), newlines.next()) {
        (Some(last), _) if last + 1 < held.len() => last + 1,
        (Some(_), Some(before)) => before + 1,
        _ => 0,
    }
}

fn skip<'a>(left: &mut u64, bytes: &'a [u8]) -> &'a [u8] {
    let cut = (*left).min(bytes.len() as u64) as usize;
    *left -= cut as u64;
    &bytes[cut..]
}

/// The size of the regular file open on descriptor `fd` (the runner's transcript), else 0.
fn file_len(fd: u32) -> u64 {
    std::fs::metadata(format!("/proc/self/fd/{fd}"))
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len())
}

#[cfg(test)]
mod tests {
    use super::ready_len;

    #[test]
    fn the_last_whole_line_is_held_back_until_more_comes() {
        assert_eq!(ready_len(b""), 0);
        assert_eq!(ready_len(b"partial"), 0);
        assert_eq!(ready_len(b"one\n"), 0, "the only line may be the result");
        assert_eq!(ready_len(b"one\ntwo\n"), 4, "the last line waits");
        assert_eq!(
            ready_len(b"one\ntwo\nthr"),
            8,
            "a line has begun after it: it goes"
        );
    }
}
