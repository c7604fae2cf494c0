//! Tasks: one prompt, several attempts (agents, models) from one base commit, each a session
//! on its own worktree and branch, run at once; then one picked and the others rejected.
//!
//! The task record (`tasks/<taskId>.json`, [`store`]) knows its sessions; the sessions know
//! nothing of it, so every session command works on an attempt as on any session. A pick and
//! a reject of the whole task are journaled like approve and reject (`journal.rs`): the record
//! says `picking` (with the attempt) or `rejecting` before anything is done, under the task's
//! lock, and [`LocalRunner::settle_task`] (run by the next command on the task and by
//! `recover`) finishes it or takes it back from what the sessions' records say:
//!
//! - `picking` whose attempt is approved (its own approve settled first): the others are
//!   rejected (unless the pick keeps them) and the task is `picked`;
//! - `picking` whose attempt is not approved: nothing was published and no other attempt was
//!   touched (the others are rejected only after the approve), so the task is `open` again;
//! - `rejecting`: every attempt not yet decided is rejected, and the task is `rejected`.

mod rank;
mod report;
pub(crate) mod store;
mod verdicts;

use futures::future::join_all;

use super::parts::LocalRunner;
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::ids::SessionId;
use runner_contract::options::{ApproveOptions, RecoveryReport, StartOptions};
use runner_contract::session::SessionState;
use runner_contract::task::{
    PickOptions, PickResult, StartedTask, TaskAttempt, TaskId, TaskOptions, TaskRecord, TaskState,
};
use runner_contract::traits::runner::Runner;

use store::TaskStore;
pub(crate) use verdicts::{TestBoxSlot, record_verdict};

impl LocalRunner {
    fn task_store(&self) -> TaskStore {
        TaskStore::in_home(&self.records().home)
    }

    /// Starts one session per attempt of `options`, all from the same base commit and at
    /// once, each on its own worktree and branch. Every attempt is checked first (its agent
    /// is known and its program found, its model is one the agent takes, the prompt, the
    /// budget, the isolation): one that is refused refuses the task with nothing made. An
    /// attempt that cannot start after that takes the others back (stopped and rejected) and
    /// the task with them.
    pub(crate) async fn start_attempts(&self, options: TaskOptions) -> Result<StartedTask> {
        runner_contract::task::check_count(options.attempts.len())?;
        let store = self.task_store();
        if store.find(&options.task_id.to_string())?.is_some() {
            return Err(Error::invalid_input(format!(
                "task {} already exists: pick a new task id",
                options.task_id
            )));
        }
        let n = options.attempts.len();
        let mut named: Vec<SessionId> = options
            .attempts
            .iter()
            .filter_map(|a| a.session_id)
            .collect();
        named.sort();
        if named.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::invalid_input(
                "two attempts name the same session id: give each its own, or none",
            ));
        }
        let budget = options.budget_usd.map(|total| total / n as f64);
        let mut starts = Vec::with_capacity(n);
        for (i, attempt) in options.attempts.iter().enumerate() {
            let mut start = StartOptions::new(
                attempt.session_id.unwrap_or_else(SessionId::new_random),
                &options.repo_path,
                &options.prompt,
                attempt.agent.clone(),
            );
            start.model = attempt.model.clone();
            start.budget_usd = budget;
            start.verify = options.verify;
            start.permissions = options.permissions;
            start.isolation = options.isolation;
            start.timeout_ms = options.timeout_ms;
            start.task_id = Some(options.task_id);
            start.engine = options.engine;
            let agent = self.check(&start).await.map_err(|e| {
                Error::new(
                    e.kind(),
                    format!("attempt {} ({attempt}) is refused: {}", i + 1, e.message()),
                )
            })?;
            agent.preflight(&options.repo_path)?;
            starts.push(start);
        }
        super::start::refuse_line_breaks(&self.records().home, &options.repo_path)?;
        super::start::refuse_codehands_worktree(self.records(), &options.repo_path)?;
        let base = self.adapters().vcs.base_commit(&options.repo_path).await?;
        let repo_path = std::path::absolute(&options.repo_path).map_err(|e| {
            Error::io(
                format!("cannot resolve {}", options.repo_path.display()),
                &e,
            )
        })?;
        let now = runner_contract::now_rfc3339();
        let record = TaskRecord {
            task_id: options.task_id,
            state: TaskState::Open,
            repo_path,
            base_commit: base.clone(),
            prompt: options.prompt.clone(),
            attempts: starts
                .iter()
                .map(|s| TaskAttempt {
                    agent: s.agent.clone(),
                    model: s.model.clone(),
                    session_id: s.session_id,
                    verdict: None,
                })
                .collect(),
            budget_usd: options.budget_usd,
            picked: None,
            keep_others: false,
            created_at: now.clone(),
            updated_at: now,
        };
        // The record first: a crash while the attempts start leaves a task that knows them
        // (an attempt that never got its record reads as failed), never attempts without one.
        store.create(&record)?;
        let ids: Vec<SessionId> = starts.iter().map(|s| s.session_id).collect();
        let started = join_all(
            starts
                .into_iter()
                .map(|start| self.start_session(start, Some(base.clone()))),
        )
        .await;
        let mut attempts = Vec::with_capacity(n);
        let mut first_error = None;
        for (id, started) in ids.into_iter().zip(started) {
            match started {
                Ok(stream) => attempts.push((id, stream)),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(error) = first_error {
            // The streams are not `Sync`: hold only the ids across the awaits.
            let started: Vec<SessionId> = attempts.into_iter().map(|(id, _)| id).collect();
            for id in &started {
                let _ = self.stop(id).await;
                if let Err(e) = self.reject_and_say(id).await {
                    tracing::warn!(session = %id, "cannot take back an attempt: {e}");
                }
            }
            let _ = store.remove(&options.task_id);
            return Err(error);
        }
        Ok(StartedTask {
            task_id: options.task_id,
            attempts,
        })
    }

    /// The task `text` names (a whole id or a unique prefix of 8+ characters), `None` when no
    /// task's id starts with it.
    pub(crate) fn find_task_id(&self, text: &str) -> Result<Option<TaskId>> {
        self.task_store().find(text)
    }

    /// The task session `id` is an attempt of, if any.
    pub(crate) fn task_of_session(&self, id: &SessionId) -> Result<Option<TaskRecord>> {
        self.task_store().of_session(id)
    }

    /// The record of task `id`, a half-done pick or reject settled first.
    pub(crate) async fn settled_task(&self, id: &TaskId) -> Result<TaskRecord> {
        let record = self.task_store().get(id)?;
        if matches!(record.state, TaskState::Picking | TaskState::Rejecting) {
            let _lock = self.task_store().lock(id).await?;
            return self.settle_task(self.task_store().get(id)?).await;
        }
        Ok(record)
    }

    /// The task records, oldest first.
    pub(crate) fn task_records(&self) -> Result<Vec<TaskRecord>> {
        Ok(self.task_store().list()?.records)
    }

    /// Picks attempt `session` of its task: approves it (one commit on its branch) and then
    /// rejects the task's other attempts, stopping any still running, unless
    /// `options.keep_others`. Journaled: the task says `picking` first, so a crash at any
    /// point is settled by the next command on the task or `recover` (see the module's
    /// doc). A session that is no task's attempt is refused (approve it as it is).
    pub(crate) async fn pick_attempt(
        &self,
        session: &SessionId,
        options: PickOptions,
    ) -> Result<PickResult> {
        let Some(task) = self.task_of_session(session)? else {
            return Err(Error::not_found(format!(
                "session {session} is no attempt of a task: `codehands approve` approves it alone"
            )));
        };
        let store = self.task_store();
        let id = task.task_id;
        let _lock = store.lock(&id).await?;
        let task = self.settle_task(store.get(&id)?).await?;
        let approve = ApproveOptions {
            force: options.force,
        };
        if task.state == TaskState::Picked && task.keep_others {
            // An attempt the pick kept: approved alone, the task stays picked.
            let approved = self
                .approve_session(session, &options.message, approve)
                .await?;
            return Ok(PickResult {
                task_id: id,
                session_id: *session,
                branch: approved.branch,
                commit: approved.commit,
                rejected: Vec::new(),
                kept: others(&task, session),
            });
        }
        // The attempt's lock before anything can heal it (and so launch its supervisor).
        let (session_lock, record) = self
            .locked_for(
                session,
                SessionState::Approving,
                SessionState::Approved,
                "pick",
            )
            .await?;
        store.update(&id, |t| {
            t.move_to(TaskState::Picking, "pick an attempt")?;
            t.picked = Some(*session);
            t.keep_others = options.keep_others;
            Ok(())
        })?;
        let approved = match self
            .approve_locked(session_lock, record, &options.message, approve)
            .await
        {
            Ok(approved) => approved,
            Err(e) => {
                // Settled from what the session says: back to open unless it was approved
                // after all (a worktree that could not be removed, say).
                let _ = self.settle_task(store.get(&id)?).await;
                return Err(e);
            }
        };
        let (rejected, kept) = self.finish_pick(&store.get(&id)?).await?;
        Ok(PickResult {
            task_id: id,
            session_id: *session,
            branch: approved.branch,
            commit: approved.commit,
            rejected,
            kept,
        })
    }

    /// Rejects every attempt of task `id` not decided yet (a running one is stopped first).
    /// A picked task that kept its other attempts has them rejected now; the approved one
    /// stays. Journaled like a pick.
    pub(crate) async fn reject_whole_task(&self, id: &TaskId) -> Result<Vec<SessionId>> {
        let store = self.task_store();
        let _lock = store.lock(id).await?;
        let task = self.settle_task(store.get(id)?).await?;
        match task.state {
            TaskState::Open => {
                let task = store.move_to(id, TaskState::Rejecting, "reject the task")?;
                let rejected = self.reject_attempts(&task, None).await?;
                store.move_to(id, TaskState::Rejected, "reject the task")?;
                Ok(rejected)
            }
            TaskState::Picked => self.reject_attempts(&task, task.picked.as_ref()).await,
            state => Err(Error::new(
                ErrorKind::IllegalMove,
                format!("task {id} is {state}: there is nothing left to reject"),
            )),
        }
    }

    /// Finishes or takes back a half-done pick or reject of `task` (its lock held).
    async fn settle_task(&self, task: TaskRecord) -> Result<TaskRecord> {
        match task.state {
            TaskState::Picking => {
                let Some(picked) = task.picked else {
                    return self.task_store().update(&task.task_id, |t| {
                        t.move_to(TaskState::Open, "take back a pick")
                    });
                };
                // The attempt's own approve may be half done too: settled first.
                let state = match self.settled_session(&picked).await {
                    Ok(state) => state,
                    Err(e) if e.kind() == ErrorKind::NotFound => SessionState::Failed,
                    Err(e) => return Err(e),
                };
                if state == SessionState::Approved {
                    self.finish_pick(&task).await?;
                } else {
                    self.task_store().update(&task.task_id, |t| {
                        t.picked = None;
                        t.keep_others = false;
                        t.move_to(TaskState::Open, "take back an unfinished pick")
                    })?;
                }
                self.task_store().get(&task.task_id)
            }
            TaskState::Rejecting => {
                self.reject_attempts(&task, None).await?;
                self.task_store()
                    .move_to(&task.task_id, TaskState::Rejected, "reject the task")
            }
            _ => Ok(task),
        }
    }

    /// The picked attempt is approved: reject the others unless kept, then `picked`.
    async fn finish_pick(&self, task: &TaskRecord) -> Result<(Vec<SessionId>, Vec<SessionId>)> {
        let (rejected, kept) = if task.keep_others {
            (
                Vec::new(),
                others(task, &task.picked.unwrap_or(task.attempts[0].session_id)),
            )
        } else {
            let rejected = self.reject_attempts(task, task.picked.as_ref()).await?;
            let kept = others(task, &task.picked.unwrap_or(task.attempts[0].session_id))
                .into_iter()
                .filter(|id| !rejected.contains(id))
                .collect();
            (rejected, kept)
        };
        self.task_store()
            .move_to(&task.task_id, TaskState::Picked, "pick an attempt")?;
        Ok((rejected, kept))
    }

    /// Rejects every attempt of `task` but `except` that is not decided yet; the ones it
    /// rejected. A running attempt is stopped first. The first error is returned after
    /// every attempt was tried, so the journal's next settle goes on from there.
    async fn reject_attempts(
        &self,
        task: &TaskRecord,
        except: Option<&SessionId>,
    ) -> Result<Vec<SessionId>> {
        let mut rejected = Vec::new();
        let mut first_error = None;
        for attempt in &task.attempts {
            let id = attempt.session_id;
            if Some(&id) == except {
                continue;
            }
            match self.reject_attempt(&id).await {
                Ok(true) => rejected.push(id),
                Ok(false) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(rejected),
        }
    }

    /// Rejects one attempt if it is not decided; true when this call rejected it.
    async fn reject_attempt(&self, id: &SessionId) -> Result<bool> {
        let state = match self.settled_session(id).await {
            Ok(state) => state,
            // An attempt that never got its record (a crash while the task started).
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        match state {
            SessionState::Queued | SessionState::Running => {
                match self.stop(id).await {
                    Ok(()) => {}
                    // It ended meanwhile (awaiting approval, failed): decided below.
                    Err(e) if e.kind() == ErrorKind::IllegalMove => {}
                    Err(e) => return Err(e),
                }
                if self.session(id).await?.state.is_final() {
                    return Ok(false);
                }
                self.reject_and_say(id).await.map(|_| true)
            }
            SessionState::AwaitingApproval | SessionState::Stopped => {
                self.reject_and_say(id).await.map(|_| true)
            }
            // A failed attempt whose change was kept for inspection goes with the others.
            SessionState::Failed if self.session(id).await?.kept => {
                self.reject_and_say(id).await.map(|_| true)
            }
            _ => Ok(false),
        }
    }

    /// The state of session `id` once a half-done approve or reject of it is settled.
    async fn settled_session(&self, id: &SessionId) -> Result<SessionState> {
        let (records, adapters) = (self.records(), self.adapters());
        let record = self.session(id).await?;
        if !matches!(
            record.state,
            SessionState::Approving | SessionState::Rejecting
        ) {
            return Ok(record.state);
        }
        let _lock = super::journal::SessionLock::acquire(&records.home, id).await?;
        let record = super::journal::settle(records, adapters, records.store.get(id)?).await?;
        Ok(record.state)
    }

    /// Settles every task whose pick or reject was cut short (`recover`), unless another
    /// process holds its lock (it is at it now); what could not be settled is reported.
    pub(super) async fn settle_tasks(&self, report: &mut RecoveryReport) {
        let store = self.task_store();
        let listing = match store.list() {
            Ok(listing) => listing,
            Err(e) => {
                report
                    .cleanup_errors
                    .push(runner_contract::options::CleanupError {
                        session_id: None,
                        path: self.records().home.tasks_dir(),
                        message: e.to_string(),
                    });
                return;
            }
        };
        for (path, e) in listing.unreadable {
            report
                .unreadable
                .push(runner_contract::options::CleanupError {
                    session_id: None,
                    path,
                    message: e.to_string(),
                });
        }
        for task in listing.records {
            if !matches!(task.state, TaskState::Picking | TaskState::Rejecting) {
                continue;
            }
            let settled = match store.try_lock(&task.task_id) {
                // Another process is at it now: it settles the task itself.
                Ok(None) => continue,
                Ok(Some(_lock)) => match store.get(&task.task_id) {
                    Ok(now) => self.settle_task(now).await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            match settled {
                Ok(_) => report.settled_tasks.push(task.task_id),
                Err(e) => report
                    .cleanup_errors
                    .push(runner_contract::options::CleanupError {
                        session_id: task.picked,
                        path: self.records().home.tasks_dir(),
                        message: format!("task {}: {e}", task.task_id),
                    }),
            }
        }
    }
}

/// The attempts of `task` other than `session`.
fn others(task: &TaskRecord, session: &SessionId) -> Vec<SessionId> {
    task.attempts
        .iter()
        .map(|a| a.session_id)
        .filter(|id| id != session)
        .collect()
}
