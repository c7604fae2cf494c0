//! The files in `runs/<sessionId>/` that let another process find, follow, adopt and stop
//! a run: the event log (`events.jsonl`), the turn planned (`turn.json`), the agent's
//! output (`turn-<n>.stdout`, `turn-<n>.stderr`, written by the agent itself), which
//! agent process runs it (`agent.json`), how it exited (`exit.json`), who started it
//! (`runner.json`), the lock of its one supervisor (`supervisor.lock`), whether a stop
//! was asked for (`stop-requested`), and the room kept for the turn's end on a full disk
//! (`reserve`). Pids live here, never in the session record, always with their start time.
//! They are replaced atomically but not fsynced: they describe live processes, which a
//! reboot ends anyway.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::disk::{self, Appender};
use runner_contract::error::{Error, Result};
use runner_contract::home::Home;
use runner_contract::ids::SessionId;
use runner_contract::private::{PrivateRoot, read_no_follow};
use runner_process::tree::ProcessIdentity;

use runner_contract::run_folder::RESERVE;

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

    /// Opens the transcript to append whole lines to (0600, never through a link); a last
    /// line left without its newline is cut off.
    pub(super) fn open_transcript(&self) -> Result<Appender> {
        let path = self.transcript();
        let file = self.root.open(
            &path,
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        Appender::new(&path, file)
    }

    /// Takes the room a turn keeps for writing its end on a full disk (`reserve`, see
    /// `disk.rs`); a disk without that much refuses the turn before it is planned.
    pub(super) fn make_reserve(&self) -> Result<()> {
        let path = self.dir.join(RESERVE);
        let file = self.root.open(
            &path,
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        let made = disk::make_reserve(&file, &path);
        if made.is_err() {
            let _ = std::fs::remove_file(&path);
        }
        made
    }

    /// Whether the turn still holds its reserve (a supervisor that met a full disk used it).
    pub(super) fn has_reserve(&self) -> bool {
        self.dir.join(RESERVE).exists()
    }

    /// Gives the reserve's room back to the disk; whether there was one.
    pub(super) fn release_reserve(&self) -> bool {
        std::fs::remove_file(self.dir.join(RESERVE)).is_ok()
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
        self.dir.join(runner_contract::run_folder::TRANSCRIPT)
    }

    /// `events.jsonl`: every event of the session, in seq order, as the contract's JSON.
    pub fn events(&self) -> PathBuf {
        self.dir.join(runner_contract::run_folder::EVENTS)
    }

    /// What the agent of turn `turn` prints on stdout, written by the agent itself.
    pub fn agent_stdout(&self, turn: u64) -> PathBuf {
        self.dir
            .join(runner_contract::run_folder::agent_stdout(turn))
    }

    /// What the agent of turn `turn` prints on stderr.
    pub fn agent_stderr(&self, turn: u64) -> PathBuf {
        self.dir
            .join(runner_contract::run_folder::agent_stderr(turn))
    }

    /// Where a supervisor process started for this run writes its own messages.
    pub fn supervisor_log(&self) -> PathBuf {
        self.dir.join(runner_contract::run_folder::SUPERVISOR_LOG)
    }

    /// The lock file `name` of the run folder, held (released when the file is dropped), if
    /// nobody holds it now; `what` names it in an error.
    pub(crate) fn try_lock(&self, name: &str, what: &str) -> Result<Option<std::fs::File>> {
        let path = self.dir.join(name);
        let file = self.root().open(
            &path,
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(
                format!("cannot take {what} {}", path.display()),
                &e,
            )),
        }
    }

    /// The private root the run folder is under.
    pub fn root(&self) -> &PrivateRoot {
        &self.root
    }

    /// Records the turn to run (before anything supervises it).
    pub fn set_turn(&self, turn: &TurnPlan) -> Result<()> {
        self.write_json(runner_contract::run_folder::TURN, turn)
    }

    /// The turn planned or under way, if any.
    pub fn turn(&self) -> Option<TurnPlan> {
        self.read_json(runner_contract::run_folder::TURN)
    }

    /// How long ago the current turn was planned (`None` without a plan, or a clock that
    /// went back).
    pub fn turn_age(&self) -> Option<std::time::Duration> {
        let meta =
            std::fs::symlink_metadata(self.dir().join(runner_contract::run_folder::TURN)).ok()?;
        meta.modified().ok()?.elapsed().ok()
    }

    /// Records the agent of a turn, or that it is about to be spawned (`process: None`).
    pub fn set_agent_run(&self, run: &AgentRun) -> Result<()> {
        self.write_json(runner_contract::run_folder::AGENT, run)
    }

    /// The agent of the current turn, as recorded.
    pub fn agent_run(&self) -> Option<AgentRun> {
        self.read_json(runner_contract::run_folder::AGENT)
    }

    /// Records how the agent exited (`None`: by a signal).
    pub fn set_exit(&self, exit: &AgentExit) -> Result<()> {
        self.write_json(runner_contract::run_folder::EXIT, exit)
    }

    /// How the agent of the current turn exited, when its parent saw it.
    pub fn exit(&self) -> Option<AgentExit> {
        self.read_json(runner_contract::run_folder::EXIT)
    }

    /// Records the agent's program and version as probed while its turn ran, for the report.
    pub fn set_agent_probed(&self, probed: &AgentProbed) -> Result<()> {
        self.write_json(runner_contract::run_folder::AGENT_VERSION, probed)
    }

    /// The agent's program and version as probed during its last turn, if one was.
    pub fn agent_probed(&self) -> Option<AgentProbed> {
        self.read_json(runner_contract::run_folder::AGENT_VERSION)
    }

    /// Keeps the secret values given to the agent (0600), so whoever adopts the run cuts the
    /// same values out of its output. Removed when the turn ends.
    pub fn set_secrets(&self, secrets: &[String]) -> Result<()> {
        self.write_json(runner_contract::run_folder::SECRETS, &secrets)
    }

    /// The secret values given to the agent of the current turn.
    pub fn secrets(&self) -> Vec<String> {
        self.read_json(runner_contract::run_folder::SECRETS)
            .unwrap_or_default()
    }

    /// Forgets the turn once it has ended: its plan, agent, exit, secrets and raw output
    /// (the transcript and the event log keep what it printed, redacted).
    pub fn clear_turn(&self, turn: u64) {
        for name in [
            runner_contract::run_folder::AGENT,
            runner_contract::run_folder::EXIT,
            runner_contract::run_folder::SECRETS,
            runner_contract::run_folder::TURN,
            RESERVE,
        ] {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
        let _ = std::fs::remove_file(self.agent_stdout(turn));
        let _ = std::fs::remove_file(self.agent_stderr(turn));
    }

    /// Records which process supervises the run.
    pub fn set_runner(&self, who: &ProcessIdentity) -> Result<()> {
        self.write_json(runner_contract::run_folder::RUNNER, who)
    }

    /// The supervising process, if recorded.
    pub fn runner(&self) -> Option<ProcessIdentity> {
        self.read_json(runner_contract::run_folder::RUNNER)
    }

    /// The agent process, if recorded.
    pub fn agent(&self) -> Option<ProcessIdentity> {
        self.agent_run().and_then(|run| run.process)
    }

    /// Forgets the agent process (it exited).
    pub fn clear_agent(&self) {
        let _ = std::fs::remove_file(self.dir.join(runner_contract::run_folder::AGENT));
    }

    /// Forgets the supervisor (the run ended).
    pub fn clear_runner(&self) {
        let _ = std::fs::remove_file(self.dir.join(runner_contract::run_folder::RUNNER));
    }

    /// Marks that a stop was asked for, so the supervisor reports `task.stopped`.
    pub fn request_stop(&self) -> Result<()> {
        self.root.replace_file(
            &self.dir.join(runner_contract::run_folder::STOP_REQUESTED),
            b"",
        )
    }

    /// Whether a stop was asked for.
    pub fn stop_requested(&self) -> bool {
        self.dir
            .join(runner_contract::run_folder::STOP_REQUESTED)
            .exists()
    }

    /// Clears a stop request (at the start of a run, and once handled).
    pub fn clear_stop(&self) {
        let _ = std::fs::remove_file(self.dir.join(runner_contract::run_folder::STOP_REQUESTED));
    }

    fn write_json<T: Serialize + ?Sized>(&self, name: &str, value: &T) -> Result<()> {
        let json = serde_json::to_vec(value).map_err(|e| Error::internal(e.to_string()))?;
        self.root.replace_file(&self.dir.join(name), &json)
    }

    fn read_json<T: for<'de> Deserialize<'de>>(&self, name: &str) -> Option<T> {
        let bytes = read_no_follow(&self.dir.join(name)).ok()??;
        serde_json::from_slice(&bytes).ok()
    }
}

/// Now, in milliseconds since the Unix epoch: how a turn's deadline is kept across processes.
pub(crate) fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A turn of a session to run: written by start, resume (and follow-ups) before anything
/// supervises it, so whichever supervisor takes the run knows what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnPlan {
    /// The turn's number, unique in its session: one more than `seq_start`.
    pub turn: u64,
    /// What the agent is told.
    pub prompt: String,
    /// The agent's conversation to continue, for a resume.
    pub resume_from: Option<String>,
    /// Run the repo's tests in the sandbox once the agent has finished.
    pub verify: bool,
    /// The log's last seq when the turn was planned: every event of the turn comes after.
    pub seq_start: u64,
    /// The workflow phase this turn runs, when it is one (`LocalRunner::run_workflow`): its
    /// agent and model stand for the session's, and its turn requests no approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<TurnPhase>,
    /// The turn's wall-clock limit in milliseconds (`--timeout`), kept here so that a
    /// supervisor taking the turn over ends it at the same instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// When the limit runs out, in milliseconds since the Unix epoch (from the planning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

/// The phase of a workflow a turn runs, as `turn.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnPhase {
    /// The phase's name in its workflow.
    pub name: String,
    /// What it does.
    pub kind: runner_contract::workflow::PhaseKind,
    /// The agent that runs this turn (it may differ from the session's first).
    pub agent: runner_contract::agent_name::AgentName,
    /// Its model, when the workflow names one.
    #[serde(default)]
    pub model: Option<String>,
    /// Read-only tools only.
    #[serde(default)]
    pub read_only: bool,
    /// The review round the turn belongs to (1, 2 …).
    pub round: u32,
    /// The phase's own wall-clock limit in milliseconds (its `timeout`, else its
    /// workflow's); the session's `--timeout` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// The agent process of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentRun {
    /// Which turn.
    pub turn: u64,
    /// The process; `None` while it is being spawned (a supervisor that dies right then
    /// leaves this, and the next one looks for the process by its session and folder).
    pub process: Option<ProcessIdentity>,
    /// The `cat` carrying its stdout to `turn-<n>.stdout`: the output is whole once it is gone.
    #[serde(default)]
    pub relay: Option<ProcessIdentity>,
    /// The `tail -f` feeding a conversation's stdin from `turn-<n>.stdin`: ending it closes
    /// the agent's stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_relay: Option<ProcessIdentity>,
    /// The log's last seq before the agent's first event: the events after it, up to the
    /// end of the turn, follow from the agent's output alone.
    pub seq_before_agent: u64,
    /// The transcript's length when the turn started (an adopter rewrites it from there).
    pub transcript_start: u64,
}

/// The agent's program and version, probed while its turn ran (`runs/<id>/agent-version.json`):
/// what the report says ran, without the caller naming the agent's file again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentProbed {
    /// The program, as the agent's version probe names it.
    pub program: String,
    /// The version it printed; `None` when it printed none.
    pub version: Option<String>,
}

/// How an agent exited, as its parent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentExit {
    /// Which turn.
    pub turn: u64,
    /// The exit code (`None`: ended by a signal).
    pub code: Option<i32>,
}

/// The lock of a run's one supervisor (`runs/<id>/supervisor.lock`, held with `flock`): a
/// process that dies lets go of it, so the next one can adopt the run.
#[derive(Debug)]
pub struct SupervisorLock {
    _file: std::fs::File,
}

impl SupervisorLock {
    /// The lock of the run in `files` if nobody holds it now.
    pub fn try_acquire(files: &RunFiles) -> Result<Option<Self>> {
        let file = files.try_lock(
            runner_contract::run_folder::SUPERVISOR_LOCK,
            "the supervisor lock",
        )?;
        Ok(file.map(|file| Self { _file: file }))
    }

    /// Whether some supervisor holds the lock of the run in `files` now.
    pub fn is_held(files: &RunFiles) -> bool {
        let path = files
            .dir()
            .join(runner_contract::run_folder::SUPERVISOR_LOCK);
        let Ok(file) = std::fs::File::open(&path) else {
            return false;
        };
        matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
    }
}
