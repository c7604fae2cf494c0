//! `LocalRunner`: the real runner, over the four traits.
//!
//! start() checks the input, finds the base commit, makes the worktree and
//! branch, saves the session, reads the repo's notes and profile, and hands the
//! run to a supervisor task that spawns the agent through [`crate::process`] and
//! streams its events. The session record is the truth about state; everything a
//! second process needs to stop a run lives in `runs/<sessionId>/`.

mod cleanup;
mod control;
mod gc;
mod journal;
mod notes;
mod preflight;
mod recover;
mod run;
mod verify;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use crate::agent_name::AgentName;
use crate::error::{Error, ErrorKind, Result};
use crate::home::Home;
use crate::ids::SessionId;
use crate::options::{
    ApproveOptions, ApproveResult, DEFAULT_BUDGET_USD, DiffResult, RecoveryReport, RejectResult,
    StartOptions,
};
use crate::registry::{AgentOrigin, AgentRegistry};
use crate::session::{SessionRecord, SessionState};
use crate::store::SessionStore;
use crate::traits::agent::{Agent, AgentRequest, DEFAULT_RESUME_PROMPT, ResumeFrom};
use crate::traits::memory::MemoryStore;
use crate::traits::runner::{EventStream, Runner};
use crate::traits::sandbox::Sandbox;
use crate::traits::vcs::{Vcs, WorktreeSpec};

pub use control::RunFiles;
pub use gc::{GcOptions, GcReport, RepoDisk};

/// The longest prompt accepted, in bytes.
pub const MAX_PROMPT_BYTES: usize = 8 << 20;

/// The watchdog's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watchdog {
    /// No output for this long ends the run (`task.failed` with reason `idle`).
    pub idle: Duration,
    /// A result printed but no exit within this long ends the run (reason `linger`).
    pub linger: Duration,
}

impl Default for Watchdog {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(10 * 60),
            linger: Duration::from_secs(30),
        }
    }
}

/// How a `LocalRunner` behaves; every field has a sensible default.
#[derive(Debug, Clone)]
pub struct RunnerSettings {
    /// The watchdog.
    pub watchdog: Watchdog,
    /// Between SIGTERM and SIGKILL when ending an agent's tree.
    pub stop_grace: Duration,
    /// End the run at the first sign of an authentication failure (default), rather than
    /// letting the agent retry for minutes.
    pub fail_fast_on_auth: bool,
    /// Names of caller variables the agent may also receive (for example
    /// an agent's retry setting); each by exact name, never a prefix or a copy of everything.
    pub extra_env: Vec<String>,
    /// The caller environment the agent's is built from (filtered by name); empty by
    /// default, as runner-core reads no configuration: the facade passes the process's own.
    pub caller_env: Vec<(String, String)>,
}

impl Default for RunnerSettings {
    fn default() -> Self {
        Self {
            watchdog: Watchdog::default(),
            stop_grace: Duration::from_secs(3),
            fail_fast_on_auth: true,
            extra_env: Vec::new(),
            caller_env: Vec::new(),
        }
    }
}

/// A stop request to an in-process run: answered once the session is stopped.
type StopRequest = oneshot::Sender<()>;

/// What every run of a `LocalRunner` shares.
struct Shared {
    home: Home,
    store: SessionStore,
    vcs: Arc<dyn Vcs>,
    memory: Arc<dyn MemoryStore>,
    sandbox: Option<Arc<dyn Sandbox>>,
    agents: AgentRegistry,
    settings: RunnerSettings,
    live: Mutex<HashMap<SessionId, mpsc::Sender<StopRequest>>>,
}

/// The real runner: agents in private worktrees, records under `$CODEHANDS_HOME`.
pub struct LocalRunner {
    shared: Arc<Shared>,
}

impl LocalRunner {
    /// A runner keeping everything under `home`, with these adapters. Add agents with
    /// [`LocalRunner::with_agent`] and a sandbox with [`LocalRunner::with_sandbox`].
    pub fn new(
        home: Home,
        vcs: Arc<dyn Vcs>,
        memory: Arc<dyn MemoryStore>,
        settings: RunnerSettings,
    ) -> Self {
        let store = SessionStore::in_home(&home);
        Self {
            shared: Arc::new(Shared {
                home,
                store,
                vcs,
                memory,
                sandbox: None,
                agents: AgentRegistry::new(),
                settings,
                live: Mutex::default(),
            }),
        }
    }

    fn shared_mut(&mut self) -> &mut Shared {
        Arc::get_mut(&mut self.shared).expect("configure a runner before using it")
    }

    /// Adds an agent the caller brings (replacing one of the same name).
    pub fn with_agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.shared_mut()
            .agents
            .replace(agent, AgentOrigin::Registered);
        self
    }

    /// Uses `agents` as this runner's agents (replacing any added before).
    pub fn with_agents(mut self, agents: AgentRegistry) -> Self {
        self.shared_mut().agents = agents;
        self
    }

    /// The agents this runner knows.
    pub fn agents(&self) -> &AgentRegistry {
        &self.shared.agents
    }

    /// Adds the sandbox used by `verify`.
    pub fn with_sandbox(mut self, sandbox: Arc<dyn Sandbox>) -> Self {
        self.shared_mut().sandbox = Some(sandbox);
        self
    }

    /// Where this runner keeps its files.
    pub fn home(&self) -> &Home {
        &self.shared.home
    }

    /// Approves like [`Runner::approve`], with `options`: a session whose run was verified
    /// and whose sandbox tests failed or could not run is refused
    /// ([`ErrorKind::VerifyFailed`]) unless `options.force`.
    pub async fn approve_with(
        &self,
        session_id: &SessionId,
        message: &str,
        options: ApproveOptions,
    ) -> Result<ApproveResult> {
        let shared = &self.shared;
        shared.store.get(session_id)?;
        let _lock = journal::SessionLock::acquire(shared, session_id).await?;
        let record = journal::settle(shared, shared.store.get(session_id)?).await?;
        if !record.state.can_move_to(SessionState::Approving) {
            return Err(Error::illegal_move(
                record.state,
                SessionState::Approved,
                "approve",
            ));
        }
        verify::gate(&shared.home, session_id, options.force)?;
        let message = if message.trim().is_empty() {
            default_message(&record.prompt)
        } else {
            message.to_owned()
        };
        let approved = journal::approve(shared, &record, &message).await?;
        remember_outcome(shared, &record, SessionState::Approved).await;
        Ok(approved)
    }

    /// Rejects like [`Runner::reject`] and says what became of the branch. A stopped
    /// session can be rejected too (no need to pay for the rest of its run); a branch the
    /// agent committed to is kept, as `recover` keeps a failed session's.
    pub async fn reject_session(&self, session_id: &SessionId) -> Result<RejectResult> {
        let shared = &self.shared;
        shared.store.get(session_id)?;
        let _lock = journal::SessionLock::acquire(shared, session_id).await?;
        let record = journal::settle(shared, shared.store.get(session_id)?).await?;
        if !record.state.can_move_to(SessionState::Rejecting) {
            return Err(Error::illegal_move(
                record.state,
                SessionState::Rejected,
                "reject",
            ));
        }
        let kept = journal::reject(shared, &record).await?;
        remember_outcome(shared, &record, SessionState::Rejected).await;
        Ok(RejectResult {
            session_id: *session_id,
            kept_branch: kept.then(|| record.branch.clone()),
        })
    }

    /// The session `text` names: a whole id, or a unique prefix of 8 or more characters
    /// (see [`SessionStore::resolve`]); an ambiguous prefix is refused, listing the matches.
    pub fn resolve_session(&self, text: &str) -> Result<SessionId> {
        self.shared.store.resolve(text)
    }

    /// The session records, and the record files that could not be read (with why).
    pub fn listing(&self) -> Result<crate::store::Listing> {
        self.shared.store.list()
    }

    fn agent(&self, name: &AgentName) -> Result<Arc<dyn Agent>> {
        self.shared.agents.get(name)
    }

    async fn check(&self, options: &StartOptions) -> Result<Arc<dyn Agent>> {
        AgentRequest::check_prompt(&options.prompt)?;
        if options.prompt.len() > MAX_PROMPT_BYTES {
            return Err(Error::invalid_input(format!(
                "the prompt is {} bytes, over the limit of {MAX_PROMPT_BYTES}: shorten it",
                options.prompt.len()
            )));
        }
        if let Some(budget) = options.budget_usd {
            AgentRequest::check_budget(budget)?;
        }
        if options.verify && self.shared.sandbox.is_none() {
            return Err(Error::not_in_build("verify (the Docker sandbox)", "docker"));
        }
        let agent = self.agent(&options.agent)?;
        preflight::program(agent.as_ref(), &self.shared.settings.caller_env)?;
        Ok(agent)
    }

    fn spawn_run(
        &self,
        record: SessionRecord,
        request: AgentRequest,
        agent: Arc<dyn Agent>,
        verify: bool,
    ) -> EventStream {
        let (events_tx, events_rx) = mpsc::channel(256);
        let (stop_tx, stop_rx) = mpsc::channel(1);
        self.shared
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(record.session_id, stop_tx);
        let supervisor = run::Supervisor::new(
            self.shared.clone(),
            record,
            agent,
            request,
            verify,
            events_tx,
            stop_rx,
        );
        tokio::spawn(supervisor.run());
        Box::pin(futures::stream::unfold(events_rx, |mut rx| async move {
            rx.recv().await.map(|e| (e, rx))
        }))
    }

    fn request_for(
        &self,
        record: &SessionRecord,
        prompt: String,
        resume: Option<ResumeFrom>,
    ) -> AgentRequest {
        AgentRequest {
            session_id: record.session_id,
            worktree: record.worktree_path.clone(),
            prompt,
            model: record.model.clone(),
            budget_usd: record.budget_usd.unwrap_or(DEFAULT_BUDGET_USD),
            notes: None,
            notes_file: None,
            test_command: None,
            resume,
            provider_env: Vec::new(),
        }
    }
}

#[async_trait]
impl Runner for LocalRunner {
    async fn start(&self, options: StartOptions) -> Result<EventStream> {
        let agent = self.check(&options).await?;
        let shared = &self.shared;
        let id = options.session_id;
        if shared.store.get(&id).is_ok() {
            return Err(Error::invalid_input(format!(
                "session {id} already exists: pick a new session id"
            )));
        }
        refuse_codehands_worktree(shared, &options.repo_path)?;
        let base = shared.vcs.base_commit(&options.repo_path).await?;
        agent.preflight(&options.repo_path)?; // preflight.rs: before anything is made
        let repo_key = shared.vcs.repo_key(&options.repo_path).await?;
        let repo_path = std::path::absolute(&options.repo_path).map_err(|e| {
            Error::io(
                format!("cannot resolve {}", options.repo_path.display()),
                &e,
            )
        })?;
        let worktree = shared.home.worktree_path(&repo_key, &id)?;
        // The folders the run writes in are made private now, and a link planted where
        // one of them goes is refused before anything is made. The worktree itself keeps
        // the modes git gives it (the sandbox's non-root user reads it through a bind
        // mount); the private folders above it keep other users out.
        let private = shared.home.private();
        if let Some(parent) = worktree.parent() {
            private.ensure_dir(parent)?;
        }
        let run_files = RunFiles::in_home(&shared.home, &id);
        run_files.prepare()?;
        let branch = shared.vcs.branch_name(&options.prompt, &id);
        let now = crate::now_rfc3339();
        let record = SessionRecord {
            session_id: id,
            state: SessionState::Queued,
            agent: options.agent.clone(),
            repo_path: repo_path.clone(),
            repo_key,
            worktree_path: worktree.clone(),
            branch: branch.clone(),
            base_commit: base.clone(),
            prompt: options.prompt.clone(),
            model: options.model.clone(),
            budget_usd: Some(options.budget_usd.unwrap_or(DEFAULT_BUDGET_USD)),
            agent_session_id: None,
            last_seq: 0,
            failure: None,
            commit: None,
            cost_usd: None,
            tokens: None,
            created_at: now.clone(),
            updated_at: now,
        };
        shared.store.create(&record)?;
        // Claimed before the worktree is made, so a recover in another process leaves a start
        // under way alone (and takes over one whose process died).
        if let Some(me) = crate::process::tree::ProcessIdentity::current() {
            let _ = run_files.set_runner(&me);
        }
        let spec = WorktreeSpec {
            repo: repo_path,
            base,
            branch,
            path: worktree.clone(),
        };
        if let Err(e) = shared.vcs.create_worktree(&spec).await {
            // Nothing was started: leave no record (or empty run folder) behind either.
            let _ = shared.store.remove(&id);
            run_files.clear_runner();
            let _ = std::fs::remove_dir(run_files.dir());
            return Err(e);
        }
        let record = shared
            .store
            .move_to(&id, SessionState::Running, "start the session")?;
        let request = self.request_for(&record, options.prompt, None);
        Ok(self.spawn_run(record, request, agent, options.verify))
    }

    async fn diff(&self, session_id: &SessionId) -> Result<DiffResult> {
        let record = self.shared.store.get(session_id)?;
        if !record.worktree_path.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "session {session_id} is {} and its worktree is gone: there is nothing to diff",
                    record.state
                ),
            ));
        }
        self.shared.vcs.diff(&record.worktree_spec()).await
    }

    async fn approve(&self, session_id: &SessionId, message: &str) -> Result<ApproveResult> {
        self.approve_with(session_id, message, ApproveOptions::default())
            .await
    }

    async fn reject(&self, session_id: &SessionId) -> Result<()> {
        self.reject_session(session_id).await.map(drop)
    }

    async fn stop(&self, session_id: &SessionId) -> Result<()> {
        let record = self.shared.store.get(session_id)?;
        if !record.state.can_move_to(SessionState::Stopped) {
            return Err(Error::illegal_move(
                record.state,
                SessionState::Stopped,
                "stop",
            ));
        }
        let control = self
            .shared
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session_id)
            .cloned();
        if let Some(control) = control {
            let (ack_tx, ack_rx) = oneshot::channel();
            if control.send(ack_tx).await.is_ok() && ack_rx.await.is_ok() {
                return Ok(());
            }
            let now = self.shared.store.get(session_id)?.state;
            return Err(Error::illegal_move(now, SessionState::Stopped, "stop"));
        }
        run::stop_from_elsewhere(&self.shared, &record).await
    }

    async fn resume(&self, session_id: &SessionId, prompt: Option<String>) -> Result<EventStream> {
        let shared = &self.shared;
        let record = shared.store.get(session_id)?;
        if record.state != SessionState::Stopped {
            return Err(Error::illegal_move(
                record.state,
                SessionState::Running,
                "resume",
            ));
        }
        let agent = self.agent(&record.agent)?;
        if !agent.capabilities().resume {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("the {} agent cannot resume a session", record.agent),
            ));
        }
        if !record.worktree_path.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("the worktree of session {session_id} is gone: it cannot be resumed"),
            ));
        }
        RunFiles::in_home(&shared.home, session_id).prepare()?;
        let record = shared
            .store
            .move_to(session_id, SessionState::Running, "resume")?;
        let resume = ResumeFrom {
            agent_session_id: record
                .agent_session_id
                .clone()
                .unwrap_or_else(|| session_id.to_string()),
        };
        let prompt = prompt
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_RESUME_PROMPT.into());
        let request = self.request_for(&record, prompt, Some(resume));
        Ok(self.spawn_run(record, request, agent, false))
    }

    async fn recover(&self) -> Result<RecoveryReport> {
        let live: Vec<SessionId> = self
            .shared
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        recover::recover(&self.shared, &live).await
    }

    async fn session(&self, session_id: &SessionId) -> Result<SessionRecord> {
        self.shared.store.get(session_id)
    }

    async fn sessions(&self) -> Result<Vec<SessionRecord>> {
        Ok(self.shared.store.list()?.records)
    }
}

/// Tells the repo's memory how a decided session ended, so the next run's notes say it;
/// a memory error never fails the decision.
async fn remember_outcome(shared: &Shared, record: &SessionRecord, outcome: SessionState) {
    if let Err(e) = shared
        .memory
        .record_outcome(&record.repo_key, &record.branch, outcome)
        .await
    {
        tracing::warn!(session = %record.session_id, "repo memory: cannot record how the session ended: {e}");
    }
}

/// Refuses a repo that is, or is inside, a worktree under this home: a session inside
/// another session's worktree would lose its branch and worktree when the outer one is
/// rejected.
fn refuse_codehands_worktree(shared: &Shared, repo: &std::path::Path) -> Result<()> {
    let worktrees = shared.home.worktrees_dir();
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let (repo, worktrees) = (real(repo), real(&worktrees));
    let Ok(inside) = repo.strip_prefix(&worktrees) else {
        return Ok(());
    };
    let mut parts = inside.components();
    let (Some(key), Some(short)) = (parts.next(), parts.next()) else {
        return Ok(());
    };
    let path = worktrees.join(key).join(short);
    let owner = shared.store.list().ok().and_then(|listing| {
        listing
            .records
            .into_iter()
            .find(|r| real(&r.worktree_path) == path)
    });
    let whose = owner.map_or_else(
        || "a codehands session".to_owned(),
        |r| format!("session {} ({})", r.session_id, r.state),
    );
    Err(Error::invalid_input(format!(
        "{} is a codehands worktree, of {whose}: run on the repository it was made from \
         (or on a clone of it) instead; approve or reject that session first if its change \
         should be the starting point",
        repo.display()
    )))
}

/// The commit message when approve is given none: the prompt's first line, shortened.
fn default_message(prompt: &str) -> String {
    let first = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("codehands change")
        .trim();
    let short: String = first.chars().take(72).collect();
    if short.len() < first.len() {
        format!("{}…", short.trim_end())
    } else {
        short
    }
}
