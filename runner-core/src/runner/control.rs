//! The files in `runs/<sessionId>/` that let another process find and stop a run:
//! who supervises it (`runner.json`), which agent process it runs (`agent.json`),
//! and whether a stop was asked for (`stop-requested`). Pids live here, never in
//! the session record, always with their start time. They are replaced atomically
//! but not fsynced: they describe live processes, which a reboot ends anyway.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::home::Home;
use crate::ids::SessionId;
use crate::private::{PrivateRoot, read_no_follow};
use crate::process::tree::ProcessIdentity;

/// The control files of one session's run folder.
#[derive(Debug, Clone)]
pub struct RunFiles {
    root: PrivateRoot,
    dir: PathBuf,
}

impl RunFiles {
    /// The control files in `dir` (`runs/<sessionId>/`), a private folder of its own.
    pub fn new(dir: PathBuf) -> Self {
        Self {
            root: PrivateRoot::new(&dir),
            dir,
        }
    }

    /// The control files of session `id` under `home`: every folder from the home down
    /// is private and none is reached through a link.
    pub fn in_home(home: &Home, id: &SessionId) -> Self {
        Self {
            root: home.private(),
            dir: home.run_dir(id),
        }
    }

    /// Makes the run folder (private), refusing a link there or at the transcript: a
    /// run's output must never be written through one to someone else's file.
    pub fn prepare(&self) -> Result<()> {
        self.root.ensure_dir(&self.dir)?;
        self.root.check_file(&self.transcript())
    }

    /// Opens the transcript for appending (0600, never through a link).
    pub fn open_transcript(&self) -> Result<std::fs::File> {
        self.root.append(&self.transcript())
    }

    /// Writes a private file of the run (0600, replaced atomically, never through a link).
    pub fn write_private(&self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.dir.join(name);
        self.root.replace_file(&path, bytes)?;
        Ok(path)
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
        self.root
            .replace_file(&self.dir.join("stop-requested"), b"")
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
        self.root.replace_file(&self.dir.join(name), &json)
    }

    fn read_identity(&self, name: &str) -> Option<ProcessIdentity> {
        let bytes = read_no_follow(&self.dir.join(name)).ok()??;
        serde_json::from_slice(&bytes).ok()
    }
}
