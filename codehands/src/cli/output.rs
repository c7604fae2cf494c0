//! Writing to stdout: contract JSON one object per line, and whether to use colour.

use std::io::{IsTerminal, Write};

use runner_core::{Error, Result};
use serde::Serialize;

/// Prints `value` as one line of JSON and flushes, so a reader sees each event as it happens.
pub fn json_line<T: Serialize>(value: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)
        .map_err(|e| Error::internal(format!("cannot encode JSON: {e}")))?;
    out.write_all(b"\n")
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("cannot write to stdout", &e))
}

/// Prints one line of text and flushes.
pub fn line(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("cannot write to stdout", &e))
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
