//! `LocalRunner`: the real runner, over the four traits.
//!
//! start() checks the input, finds the base commit, makes the worktree and
//! branch, saves the session, plans the turn and hands it to a supervisor (a task of
//! this runner, or a detached supervisor program) that spawns the agent detached through
//! [`crate::process`] and appends its events to the session's log; the caller follows
//! the log. The session record is the truth about state; everything another process needs
//! to follow, adopt or stop a run lives in `runs/<sessionId>/`.

mod api;
mod cleanup;
mod control;
mod conversation;
mod converse;
mod disk;
mod ending;
mod fingerprint;
mod follow;
mod gc;
mod heal;
mod hidden;
mod inbox;
mod journal;
mod log;
mod nested_git;
mod notes;
mod preflight;
mod recover;
mod run;
mod start;
mod task;
mod verify;
mod watched;
mod workflow;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::registry::{AgentOrigin, AgentRegistry};
use crate::store::SessionStore;
use runner_contract::agent_name::AgentName;
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::event::Event;
use runner_contract::home::Home;
use runner_contract::ids::SessionId;
use runner_contract::options::{
    ApproveOptions, ApproveResult, DEFAULT_BUDGET_USD, DiffResult, RecoveryReport, RejectResult,
    StartOptions,
};
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::traits::agent::{Agent, AgentRequest, DEFAULT_RESUME_PROMPT, ResumeFrom};
use runner_contract::traits::memory::MemoryStore;
use runner_contract::traits::runner::{EventStream, Runner};
use runner_contract::traits::sandbox::Sandbox;
use runner_contract::traits::vcs::{Vcs, WorktreeSpec};

pub use control::{RunFiles, TurnPhase, TurnPlan};
use start::{refuse_codehands_worktree, refuse_line_breaks};
pub use workflow::WorkflowProgress;

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
    /// A program that supervises one run when given its session id (the `codehands` binary's
    /// hidden `__supervise`): runs are then supervised by a detached process of their own
    /// that outlives this one. `None` (the default): by a task of this runner, and a runner
    /// built later adopts what is left running (`recover`).
    pub supervisor: Option<SupervisorCommand>,
    /// Where a start finds what the person's settings allow a session in its repository
    /// (folders the box reads, tool rules), added to its options' own; `None` (the default):
    /// only the options'.
    pub allowances: Option<runner_contract::AllowancesSource>,
}

/// How to start the supervisor of one run: `program args… <sessionId>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments before the session id.
    pub args: Vec<OsString>,
}

impl Default for RunnerSettings {
    fn default() -> Self {
        Self {
            watchdog: Watchdog::default(),
            stop_grace: Duration::from_secs(3),
            fail_fast_on_auth: true,
            extra_env: Vec::new(),
            caller_env: Vec::new(),
            supervisor: None,
            allowances: None,
        }
    }
}

/// What every run of a `LocalRunner` shares.
struct Shared {
    home: Home,
    store: SessionStore,
    vcs: Arc<dyn Vcs>,
    memory: Arc<dyn MemoryStore>,
    sandbox: Option<Arc<dyn Sandbox>>,
    /// The box agents run in (`Isolation::Box`); `None` in a build without one.
    confinement: Option<Arc<dyn runner_contract::Confinement>>,
    agents: AgentRegistry,
    settings: RunnerSettings,
    /// The supervisor tasks of this runner, ended when it is dropped (their agents go on,
    /// for the next runner to adopt).
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

/// The real runner: agents in private worktrees, records under `$CODEHANDS_HOME`.
pub struct LocalRunner {
    shared: Arc<Shared>,
    /// Whether dropping this runner ends its supervisor tasks: false for the handle a
    /// workflow's driver keeps (`workflow/`), which is not the runner the caller holds.
    owns_tasks: bool,
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
            owns_tasks: true,
            shared: Arc::new(Shared {
                home,
                store,
                vcs,
                memory,
                sandbox: None,
                confinement: None,
                agents: AgentRegistry::new(),
                settings,
                tasks: Mutex::default(),
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

    /// Adds the box agents run in when a session's isolation is `box`.
    pub fn with_confinement(mut self, confinement: Arc<dyn runner_contract::Confinement>) -> Self {
        self.shared_mut().confinement = Some(confinement);
        self
    }

    /// Whether this runner can put an agent in a box here (`Isolation::Box`); the error says
    /// why not and what to do.
    pub fn box_available(&self) -> Result<()> {
        preflight::isolation(
            &self.shared,
            runner_contract::options::Isolation::Box,
            runner_contract::options::Engine::Local,
        )
    }

    /// Where this runner keeps its files.
    pub fn home(&self) -> &Home {
        &self.shared.home
    }

    /// Refuses `repo` with the words a start would refuse it with (a path with a line break,
    /// a codehands worktree, not a git repo with a commit), checking only: nothing is made.
    /// For a caller that takes a folder now and starts a session in it later (`codehands
    /// acp`'s `session/new`).
    pub async fn check_repo(&self, repo: &std::path::Path) -> Result<()> {
        refuse_line_breaks(&self.shared.home, repo)?;
        refuse_codehands_worktree(&self.shared, repo)?;
        self.shared.vcs.base_commit(repo).await.map(drop)
    }

    /// Approves like [`Runner::approve`], with `options`: a session whose run was verified
    /// and whose sandbox tests failed or could not run is refused
    /// ([`ErrorKind::VerifyFailed`]) unless `options.force`.
    pub(crate) async fn approve_session(
        &self,
        session_id: &SessionId,
        message: &str,
        options: ApproveOptions,
    ) -> Result<ApproveResult> {
        let shared = &self.shared;
        // The decision's lock first: nothing (a supervisor the healing launches among them)
        // can move the session between the look and the approve.
        let _lock = journal::SessionLock::acquire(shared, session_id).await?;
        self.healed(shared.store.get(session_id)?).await?;
        let record = journal::settle(shared, shared.store.get(session_id)?).await?;
        record
            .state
            .check_move(SessionState::Approving, SessionState::Approved, "approve")?;
        // A workflow's change is approved only once its last phase has run.
        workflow::check_finished(
            &RunFiles::in_home(&shared.home, session_id),
            session_id,
            record.state,
        )?;
        verify::gate(&shared.home, session_id, options.force)?;
        let message = if message.trim().is_empty() {
            default_message(&record.prompt)
        } else {
            message.to_owned()
        };
        let approved = journal::approve(shared, &record, &message)
            .await
            .map_err(|e| disk::named(shared.home.root(), e))?;
        remember_outcome(shared, &record, SessionState::Approved).await;
        Ok(approved)
    }

    /// Rejects like [`Runner::reject`] and says what became of the branch. A stopped
    /// session can be rejected too (no need to pay for the rest of its run); a branch the
    /// agent committed to is kept, as `recover` keeps a failed session's.
    pub(crate) async fn reject_and_say(&self, session_id: &SessionId) -> Result<RejectResult> {
        let shared = &self.shared;
        // The lock first, as approve takes it (`approve_with`).
        let _lock = journal::SessionLock::acquire(shared, session_id).await?;
        self.healed(shared.store.get(session_id)?).await?;
        let record = journal::settle(shared, shared.store.get(session_id)?).await?;
        record
            .state
            .check_move(SessionState::Rejecting, SessionState::Rejected, "reject")?;
        cleanup::check_kept(&record)?;
        let kept = journal::reject(shared, &record)
            .await
            .map_err(|e| disk::named(shared.home.root(), e))?;
        remember_outcome(shared, &record, SessionState::Rejected).await;
        Ok(RejectResult {
            session_id: *session_id,
            kept_branch: kept.then(|| record.branch.clone()),
        })
    }

    /// The session `text` names: a whole id, or a unique prefix of 8 or more characters
    /// (see [`SessionStore::resolve`]); an ambiguous prefix is refused, listing the matches.
    pub(crate) fn resolve_id(&self, text: &str) -> Result<SessionId> {
        self.shared.store.resolve(text)
    }

    /// The session records, and the files that could not be read (with why): record files,
    /// and the event logs of running sessions. A running session nobody supervises is healed
    /// first, so none is listed running dead; one that cannot be healed now (its log cannot
    /// be read, its disk is full) is listed as it is, and never keeps the others from the list.
    pub async fn listing(&self) -> Result<crate::store::Listing> {
        let listing = self.shared.store.list()?;
        let mut healed = false;
        let mut unhealed = Vec::new();
        for record in &listing.records {
            if matches!(record.state, SessionState::Running | SessionState::Queued) {
                match heal::heal(&self.shared, record).await {
                    Ok(done) => {
                        healed |= !matches!(done, heal::Healed::Nothing | heal::Healed::Adopted)
                    }
                    Err(e) => unhealed.push((record.session_id, e)),
                }
            }
        }
        let mut listing = if healed {
            self.shared.store.list()?
        } else {
            listing
        };
        for (id, e) in unhealed {
            if e.kind() == ErrorKind::CorruptRecord {
                let log = RunFiles::in_home(&self.shared.home, &id).events();
                listing.unreadable.push((log, e));
            } else {
                tracing::warn!(session = %id, "cannot take over the run now: {e}");
            }
        }
        Ok(listing)
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
        if let Some(model) = &options.model {
            agent.check_model(model)?;
        }
        if options.permissions.mode == runner_contract::options::PermissionMode::Ask
            && !agent.capabilities().ask_permission
        {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "the {} agent cannot ask for permission before it uses a tool: run it \
                     without asking (tools outside its allow list are then refused)",
                    options.agent
                ),
            ));
        }
        if options.permissions.mode == runner_contract::options::PermissionMode::Ask
            && options.engine != runner_contract::options::Engine::Local
        {
            return Err(remote_takes_no_input(
                options.engine,
                "use --engine local to be asked before a tool runs",
            ));
        }
        preflight::program(agent.as_ref(), &self.shared.settings.caller_env)?;
        preflight::isolation(&self.shared, options.isolation, options.engine)?;
        Ok(agent)
    }

    /// Supervises session `id`'s current turn here until it ends (what the `codehands`
    /// binary's `__supervise` does); returns at once when another supervisor has it.
    pub async fn supervise(&self, id: &SessionId) -> Result<()> {
        let planned = RunFiles::in_home(&self.shared.home, id).turn().is_some();
        run::supervise(self.shared.clone(), *id).await?;
        if planned {
            return Ok(());
        }
        // Launched with no turn to run: to go on with a stalled workflow (`workflow/stall.rs`).
        self.drive_if_stalled(id).await
    }

    /// The events of session `id` after seq `after` that its log holds now (no following).
    pub fn logged_events(&self, id: &SessionId, after: u64) -> Result<Vec<Event>> {
        self.shared.store.get(id)?;
        let files = RunFiles::in_home(&self.shared.home, id);
        Ok(log::read_all(&files.events())?
            .into_iter()
            .filter(|e| e.seq > after)
            .collect())
    }

    /// After a stream of session `id`'s events ended: `Ok` when the session is no longer
    /// running (the stream ended as it should), else why it could not be followed to its end
    /// (its log cannot be read, or its run cannot go on now: a disk that stays full).
    pub async fn after_stream(&self, id: &SessionId) -> Result<()> {
        let record = self.healed(self.shared.store.get(id)?).await?;
        if !matches!(record.state, SessionState::Running | SessionState::Queued) {
            return Ok(());
        }
        let files = RunFiles::in_home(&self.shared.home, id);
        log::scan(&files.events(), u64::MAX, |_| false)?;
        if disk::looks_full(files.dir()) {
            return Err(disk::full(
                self.shared.home.root(),
                "",
                "run `codehands recover`",
            ));
        }
        Err(Error::new(
            ErrorKind::Io,
            format!(
                "the events of session {id} ended before its turn did: \
                 `codehands events {id} --follow` follows it again"
            ),
        ))
    }

    /// Waits until the agent of session `id`'s current turn has been spawned (or the turn has
    /// ended), at most `limit`; returns the record then.
    pub async fn wait_for_agent(&self, id: &SessionId, limit: Duration) -> Result<SessionRecord> {
        let files = RunFiles::in_home(&self.shared.home, id);
        let deadline = Instant::now() + limit;
        loop {
            let record = self.shared.store.get(id)?;
            let spawned = files.agent_run().is_some_and(|run| {
                run.process.is_some() && files.turn().is_some_and(|t| t.turn == run.turn)
            });
            if spawned || record.state != SessionState::Running || Instant::now() >= deadline {
                return Ok(record);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Heals `record` when it says running but nobody supervises it; returns it as it is then.
    async fn healed(&self, record: SessionRecord) -> Result<SessionRecord> {
        match heal::heal(&self.shared, &record).await? {
            heal::Healed::Nothing | heal::Healed::Adopted => Ok(record),
            heal::Healed::Finished | heal::Healed::Failed => {
                self.shared.store.get(&record.session_id)
            }
        }
    }
}

impl Drop for LocalRunner {
    /// A runner that goes away takes its supervisor tasks with it, as a process that ends
    /// would; the agents go on, and the next runner adopts them.
    fn drop(&mut self) {
        if !self.owns_tasks {
            return;
        }
        for task in self
            .shared
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}

/// What the agent of a turn is asked to do, built once from the record and the plan.
pub(super) fn request_for(record: &SessionRecord, plan: &TurnPlan) -> AgentRequest {
    AgentRequest {
        session_id: record.session_id,
        worktree: record.worktree_path.clone(),
        prompt: plan.prompt.clone(),
        model: match &plan.phase {
            Some(phase) => phase.model.clone(),
            None => record.model.clone(),
        },
        budget_usd: record.budget_usd.unwrap_or(DEFAULT_BUDGET_USD),
        notes: None,
        notes_file: None,
        test_command: None,
        permissions: record.permissions.mode,
        resume: plan
            .resume_from
            .clone()
            .map(|agent_session_id| ResumeFrom { agent_session_id }),
        provider_env: Vec::new(),
        read_only: plan.phase.as_ref().is_some_and(|p| p.read_only),
        // Boxed, the box is the boundary and the agent may run any command in it; unboxed,
        // its program's own allow list is (ARCHITECTURE.md, "Adding an agent").
        tools: runner_contract::ToolPolicy {
            boxed: record.isolation == runner_contract::options::Isolation::Box,
            allow: record.allowances.agent_allow.clone(),
            deny: record.allowances.agent_deny.clone(),
        },
    }
}

/// The agent that runs a turn: its phase's, else the session's.
pub(super) fn agent_of<'a>(record: &'a SessionRecord, plan: &'a TurnPlan) -> &'a AgentName {
    plan.phase.as_ref().map_or(&record.agent, |p| &p.agent)
}

/// The refusal of input for a running turn whose box is on a remote engine: a swarm's task
/// has no stdin, so the turn takes its prompt and nothing after it (README.md, "Where runs
/// run").
pub(super) fn remote_takes_no_input(
    engine: runner_contract::options::Engine,
    what_to_do: &str,
) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "a box on the {engine} engine takes no input while its turn runs (a permission \
             answer, a message, an interrupt): {what_to_do}"
        ),
    )
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
