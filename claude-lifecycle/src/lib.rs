//! A thin lifecycle and JSONL transport layer around Claude Code: one-shot jobs and
//! persistent sessions, with no worktree, repository or agent framework around them.
//!
//! Claude Code owns agent execution, tools, permissions and memory; callers own channels,
//! scheduling and persistence. This crate owns the process (spawn, reap, shutdown), the
//! stream-json transport both ways, and the format flags.
//!
//! ```no_run
//! # async fn demo() -> claude_lifecycle::Result<()> {
//! use claude_lifecycle::{ClaudeRunner, Defaults, Job, SessionEvent, SessionOptions};
//!
//! // The program named by CLAUDE_BIN, else `claude` on PATH (the caller reads the variable).
//! let defaults = Defaults::from_claude_bin(std::env::var_os("CLAUDE_BIN"));
//! let runner = ClaudeRunner::new(defaults.args(["--model", "my-model"]));
//! let result = runner.run(&Job::new("Summarize this repository").cwd("/path/to/project")).await?;
//! println!("{} {}", result.ok, result.text);
//!
//! let session = runner.create_session(&SessionOptions::new().cwd("/path/to/project")).await?;
//! let mut events = session.subscribe();
//! session.send("user turn text").await?;
//! while let Ok(event) = events.recv().await {
//!     if let SessionEvent::Result(result) = event {
//!         println!("{}", result.text);
//!         break;
//!     }
//! }
//! session.close().await;
//! # Ok(()) }
//! ```

mod args;
mod error;
mod events;
mod job;
mod message;
mod options;
mod process;
mod session;

pub use error::{Error, Result};
pub use events::{
    AssistantMessage, ProtocolError, ReplayedInput, SessionEvent, SessionState, TurnResult,
};
pub use job::RunResult;
pub use options::{
    DEFAULT_SHUTDOWN_GRACE, Defaults, EnvOverlay, Job, ResolvedConfig, SessionOptions,
};
pub use process::ExitInfo;
pub use session::{Session, SessionStatus};
/// The uuid type of inputs and results, re-exported so callers need not depend on `uuid`.
pub use uuid::Uuid;

use args::Mode;
use options::Call;

/// Starts Claude Code jobs and sessions with a set of defaults.
#[derive(Debug, Clone, Default)]
pub struct ClaudeRunner {
    defaults: Defaults,
}

impl ClaudeRunner {
    /// A runner with these defaults.
    pub fn new(defaults: Defaults) -> Self {
        Self { defaults }
    }

    /// The defaults.
    pub fn defaults(&self) -> &Defaults {
        &self.defaults
    }

    /// Runs one job to its end: its prompt on stdin, stdin closed, the result read. A
    /// timeout ends the process (SIGTERM, then SIGKILL after the grace period) and returns
    /// `ok: false`, empty text, no raw, once it is reaped.
    ///
    /// Errors: [`Error::InvalidInput`] (nothing spawned) or [`Error::Spawn`]; everything
    /// that happens after the spawn is in the [`RunResult`].
    pub async fn run(&self, job: &Job) -> Result<RunResult> {
        options::check_text(&job.prompt, "prompt")?;
        let config = self.defaults.resolve(
            Mode::Job,
            Call {
                cwd: job.cwd.as_deref(),
                args: &job.args,
                env: &job.env,
                resume: job.resume_session_id.as_deref(),
                grace: None,
                timeout: job.timeout,
            },
        )?;
        job::run(&config, &job.prompt).await
    }

    /// Starts a session; returns once the process is spawned (`ready`: writable, not yet
    /// authenticated).
    ///
    /// Errors: [`Error::InvalidInput`] (nothing spawned) or [`Error::Spawn`].
    pub async fn create_session(&self, options: &SessionOptions) -> Result<Session> {
        let config = self.defaults.resolve(
            Mode::Session,
            Call {
                cwd: options.cwd.as_deref(),
                args: &options.args,
                env: &options.env,
                resume: options.resume_session_id.as_deref(),
                grace: options.shutdown_grace,
                timeout: None,
            },
        )?;
        Session::start(config)
    }
}
