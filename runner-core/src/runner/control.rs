//! The files in `runs/<sessionId>/` that let another process find and stop a run:
//! who supervises it (`runner.json`), which agent process it runs (`agent.json`),
//! and whether a stop was asked for (`stop-requested`). Pids live here, never in
//! the session record, always with their start time. They are replaced atomically
//! but not fsynced: they describe live processes, which a reboot ends anyway.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::process::tree::ProcessIdentity;
use crate::store::replace_file;

/// The control files of one session's run folder.
#[derive(Debug, Clone)]
pub struct RunFiles {
    dir: PathBuf,
}

impl RunFiles {
    /// The control files in `dir` (`runs/<sessionId>/`).
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The run folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `transcript.jsonl`: every line the agent printed.
    pub fn transcript(&self) -> PathBuf {
        self.dir.join("transcript.jsonl")
    }

    /// Records which process supervises the run.
    pub fn set_runner(&self, who: &ProcessIdentity) -> Result<()> {
        self.write_identity("runner.json", who)
    }

    /// Records the agent process.
    pub fn set_agent(&self, who: &ProcessIdentity) -> Result<()> {
        self.write_identity("agent.json", who)
    }

    /// The supervising process, if recorded.
    pub fn runner(&self) -> Option<ProcessIdentity> {
        self.read_identity("runner.json")
    }

    /// The agent process, if recorded.
    pub fn agent(&self) -> Option<ProcessIdentity> {
        self.read_identity("agent.json")
    }

    /// Forgets the agent process (it exited).
    pub fn clear_agent(&self) {
        let _ = std::fs::remove_file(self.dir.join("agent.json"));
    }

    /// Forgets the supervisor (the run ended).
    pub fn clear_runner(&self) {
        let _ = std::fs::remove_file(self.dir.join("runner.json"));
    }

    /// Marks that a stop was asked for, so the supervisor reports `task.stopped`.
    pub fn request_stop(&self) -> Result<()> {
        replace_file(&self.dir, &self.dir.join("stop-requested"), b"")
    }

    /// Whether a stop was asked for.
    pub fn stop_requested(&self) -> bool {
        self.dir.join("stop-requested").exists()
    }

    /// Clears a stop request (at the start of a run, and once handled).
    pub fn clear_stop(&self) {
        let _ = std::fs::remove_file(self.dir.join("stop-requested"));
    }

    fn write_identity(&self, name: &str, who: &ProcessIdentity) -> Result<()> {
        let json = serde_json::to_vec(who).map_err(|e| Error::internal(e.to_string()))?;
        replace_file(&self.dir, &self.dir.join(name), &json)
    }

    fn read_identity(&self, name: &str) -> Option<ProcessIdentity> {
        let bytes = std::fs::read(self.dir.join(name)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}
