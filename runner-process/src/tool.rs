//! A short call of a program for its answer: `git bundle list-heads`, `git check-ignore`,
//! `ldd`, `docker build -`, `bwrap --version`. No shell: the program by absolute path or by
//! name on PATH, its arguments, an optional stdin, its output captured up to a bound (a
//! program that prints without end cannot fill our memory), and an error that names the
//! program and says what to do when it cannot be started.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::process::{ExitStatus, Stdio};

use crate::CannotStart;

/// How much of each of stdout and stderr is kept unless [`Tool::limit`] says otherwise.
pub const DEFAULT_LIMIT: usize = 16 << 20;

/// A program to call once and wait for; build it, then [`Tool::run`].
#[derive(Debug)]
pub struct Tool {
    program: OsString,
    command: std::process::Command,
    input: Option<Vec<u8>>,
    limit: usize,
}

/// What a tool printed, and how it ended.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    /// How it ended.
    pub status: ExitStatus,
    /// The first [`Tool::limit`] bytes of its stdout.
    pub stdout: Vec<u8>,
    /// The last [`Tool::limit`] bytes of its stderr (the end says why it failed).
    pub stderr: Vec<u8>,
}

impl ToolOutput {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Its stdout as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Its stderr as text, trimmed: the words for an error message.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_owned()
    }
}

impl Tool {
    /// `program` (a path, or a name looked up on PATH), with no stdin unless
    /// [`Tool::input`] gives one, and this process's environment unless told otherwise.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let program = program.as_ref().to_owned();
        let command = std::process::Command::new(&program);
        Self {
            program,
            command,
            input: None,
            limit: DEFAULT_LIMIT,
        }
    }

    command_builders!();

    /// Bytes written to its stdin (from a thread, so a program that prints before it has
    /// read them all does not block on us).
    pub fn input(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.input = Some(bytes.into());
        self
    }

    /// How many bytes of each of stdout and stderr are kept ([`DEFAULT_LIMIT`]); the rest
    /// is read and dropped.
    pub fn limit(&mut self, bytes: usize) -> &mut Self {
        self.limit = bytes;
        self
    }

    /// Runs it to its end: what it printed and how it ended, or why it could not run.
    pub fn run(&mut self) -> Result<ToolOutput, CannotStart> {
        let program = self.program.clone();
        let cannot = |source| CannotStart::new(&program, source);
        let stdin = if self.input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let mut child = self
            .command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(cannot)?;
        let writer = child
            .stdin
            .take()
            .zip(self.input.take())
            .map(|(mut pipe, bytes)| {
                std::thread::spawn(move || {
                    use std::io::Write;
                    // A tool that stops reading early closes the pipe: its status says why.
                    let _ = pipe.write_all(&bytes);
                })
            });
        let limit = self.limit;
        let stdout = child
            .stdout
            .take()
            .map(|pipe| std::thread::spawn(move || read_bounded(pipe, limit, Keep::Head)));
        let stderr = child
            .stderr
            .take()
            .map(|pipe| read_bounded(pipe, limit, Keep::Tail))
            .unwrap_or_default();
        let stdout = stdout
            .and_then(|reader| reader.join().ok())
            .unwrap_or_default();
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        let status = child.wait().map_err(cannot)?;
        Ok(ToolOutput {
            status,
            stdout,
            stderr,
        })
    }
}

/// Which end of a long output is kept.
#[derive(Clone, Copy)]
enum Keep {
    Head,
    Tail,
}

/// Reads `pipe` to its end, keeping `limit` bytes of it.
fn read_bounded(mut pipe: impl Read, limit: usize, keep: Keep) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    while let Ok(n) = pipe.read(&mut chunk) {
        if n == 0 {
            break;
        }
        match keep {
            Keep::Head => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
            Keep::Tail => {
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > limit {
                    let cut = kept.len() - limit;
                    kept.drain(..cut);
                }
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_gets_its_input_and_its_output_is_kept() {
        let out = Tool::new("sh")
            .args(["-c", "tr a-z A-Z; echo oops >&2; exit 3"])
            .input("hello\n")
            .run()
            .unwrap();
        assert_eq!(out.stdout_text(), "HELLO\n");
        assert_eq!(out.stderr_text(), "oops");
        assert_eq!(out.status.code(), Some(3));
        assert!(!out.success());
    }

    #[test]
    fn a_long_output_is_kept_to_its_bound() {
        let out = Tool::new("sh")
            .args(["-c", "seq 1 100000; seq 1 100000 >&2"])
            .limit(10)
            .run()
            .unwrap();
        assert!(out.success());
        assert_eq!(out.stdout_text(), "1\n2\n3\n4\n5\n");
        assert_eq!(out.stderr_text(), "99\n100000");
    }

    #[test]
    fn a_missing_program_is_named_with_what_to_do() {
        let e = Tool::new("codehands-no-such-program").run().unwrap_err();
        let text = e.to_string();
        assert!(text.contains("codehands-no-such-program"), "{text}");
        assert!(text.contains("install it, or put it on PATH"), "{text}");
        assert_eq!(e.program(), "codehands-no-such-program");
    }

    #[test]
    fn a_cleared_environment_keeps_only_what_is_set() {
        let out = Tool::new("/usr/bin/env")
            .env_clear()
            .env("ONLY", "this")
            .current_dir("/")
            .run()
            .unwrap();
        assert_eq!(out.stdout_text(), "ONLY=this\n");
    }
}
