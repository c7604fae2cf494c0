//! Replaying a recording: its paths and session id rewritten to this run's.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::apply;

/// Plays a recording line by line.
pub struct Player {
    lines: Vec<Value>,
    next: usize,
    from_cwd: String,
    to_cwd: String,
    session_id: String,
    delay: Duration,
}

impl Player {
    /// A player of `recording`, moving its paths from the recording's cwd to `cwd`.
    pub fn new(recording: &str, cwd: &Path, session_id: &str, delay: Duration) -> Self {
        let lines: Vec<Value> = recording
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let from_cwd = lines
            .iter()
            .find_map(|l| l.get("cwd").and_then(Value::as_str))
            .unwrap_or("/nonexistent-recording-cwd")
            .to_owned();
        Self {
            lines,
            next: 0,
            from_cwd,
            to_cwd: cwd.to_string_lossy().into_owned(),
            session_id: session_id.to_owned(),
            delay,
        }
    }

    /// Plays the first line only (the `system/init`).
    pub fn play_init(&mut self) -> Result<(), String> {
        if self.next < self.lines.len() {
            self.play_one()?;
        }
        Ok(())
    }

    /// Plays every remaining line, performing file edits as they come.
    pub fn play_all(&mut self) -> Result<(), String> {
        while self.next < self.lines.len() {
            self.play_one()?;
        }
        Ok(())
    }

    fn play_one(&mut self) -> Result<(), String> {
        let mut line = self.lines[self.next].clone();
        self.next += 1;
        self.rewrite(&mut line);
        if line.get("type").and_then(Value::as_str) == Some("assistant") {
            apply::tool_uses(&line, Path::new(&self.to_cwd))?;
        }
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &line).map_err(|e| e.to_string())?;
        out.write_all(b"\n")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())
    }

    fn rewrite(&self, value: &mut Value) {
        match value {
            Value::String(s) if s.contains(&self.from_cwd) => {
                *s = s.replace(&self.from_cwd, &self.to_cwd);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.rewrite(v)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if key == "session_id" && !self.session_id.is_empty() {
                        *v = Value::String(self.session_id.clone());
                    } else {
                        self.rewrite(v);
                    }
                }
            }
            _ => {}
        }
    }
}
