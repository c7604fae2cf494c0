//! Writing to stdout: contract JSON one object per line, and whether to use colour.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use runner_contract::{Error, Result};
use serde::Serialize;

/// Set once stdout's reader has gone (`codehands sessions | head -1`).
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write failed because stdout's reader went away: then `main` ends quietly with
/// success, as a program ended by SIGPIPE would end silently (Rust ignores SIGPIPE).
pub fn stdout_closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

fn write_error(e: &std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CLOSED.store(true, Ordering::Relaxed);
    }
    Error::io("cannot write to stdout", e)
}

/// Prints `value` as one line of JSON and flushes, so a reader sees each event as it happens.
pub fn json_line<T: Serialize>(value: &T) -> Result<()> {
    write_json_line(value).map_err(|e| write_error(&e))
}

/// [`json_line`], with the I/O error as it is (a closed stdout is `BrokenPipe`).
pub fn write_json_line<T: Serialize>(value: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    out.write_all(b"\n").and_then(|()| out.flush())
}

/// Prints `text` as it is (no newline added) and flushes.
pub fn text(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| write_error(&e))
}

/// Prints one line of text and flushes.
pub fn line(text: &str) -> Result<()> {
    write_line(text).map_err(|e| write_error(&e))
}

/// [`line`], with the I/O error as it is (a closed stdout is `BrokenPipe`).
pub fn write_line(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
}

/// The width to fit tables to: `COLUMNS` when set, else the terminal's, else none (piped
/// output is never cut).
pub fn width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(columns);
    }
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(&stdout).map(|(w, _)| usize::from(w.0))
}

/// Colour only on a terminal, and never under `NO_COLOR`.
pub fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether a person is at the keyboard and reads our answer: stdin and stdout are both
/// terminals (with `| less`, stdout is a pipe and the pager owns the keyboard).
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Wraps `text` in an ANSI colour when `on`.
pub fn paint(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}
