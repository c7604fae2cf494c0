//! Writing to stdout: contract JSON one object per line.

use std::io::Write;

use runner_core::{Error, Result};
use serde::Serialize;

/// Prints `value` as one line of JSON and flushes, so a reader sees each event as it happens.
pub fn json_line<T: Serialize>(value: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value).map_err(|e| Error::internal(format!("cannot encode JSON: {e}")))?;
    out.write_all(b"\n").and_then(|()| out.flush()).map_err(|e| Error::io("cannot write to stdout", &e))
}
