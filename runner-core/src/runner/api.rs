//! [`Runner`] for [`LocalRunner`]: each call of the trait, in the words of the runner's parts.

use std::time::Duration;

use async_trait::async_trait;

use super::control::RunFiles;
use super::parts::LocalRunner;
use super::workflow::WorkflowProgress;
use super::{control, follow, recover, run, watched};
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::ids::SessionId;
use runner_contract::options::{
    ApproveOptions, ApproveResult, DiffResult, RecoveryReport, RejectResult, StartOptions,
};
use runner_contract::options::{GcOptions, GcReport};
use runner_contract::report::RunEnding;
use runner_contract::session::{SessionRecord, SessionState};
use runner_contract::task::{
    PickOptions, PickResult, StartedTask, TaskId, TaskOptions, TaskRecord, TaskReport,
};
use runner_contract::traits::agent::DEFAULT_RESUME_PROMPT;
use runner_contract::traits::runner::{EventStream, Runner};
use runner_contract::workflow::WorkflowOptions;
use tokio::time::Instant;

#[async_trait]
impl Runner for LocalRunner {
    async fn start(&self, options: StartOptions) -> Result<EventStream> {
        self.start_session(options, None).await
    }

    async fn diff(&self, session_id: &SessionId) -> Result<DiffResult> {
        let record = self.healed(self.records().store.get(session_id)?).await?;
        if !record.worktree_path.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "session {session_id} is {} and its worktree is gone: there is nothing to diff",
                    record.state
                ),
            ));
        }
        self.adapters().vcs.diff(&record.worktree_spec()).await
    }

    async fn approve(&self, session_id: &SessionId, message: &str) -> Result<ApproveResult> {
        self.approve_session(session_id, message, ApproveOptions::default())
            .await
    }

    async fn reject(&self, session_id: &SessionId) -> Result<()> {
        self.reject_and_say(session_id).await.map(drop)
    }

    async fn stop(&self, session_id: &SessionId) -> Result<()> {
        let records = self.records();
        let record = records.store.get(session_id)?;
        record
            .state
            .check_move(SessionState::Stopped, SessionState::Stopped, "stop")?;
        let files = RunFiles::in_home(&records.home, session_id);
        files.request_stop()?;
        let grace = self.settings().stop_grace;
        if let Some(agent) = files.agent() {
            runner_process::tree::end_group(&agent, grace).await;
        }
        // Whoever supervises the run sees the agent exit and the request, and saves
        // `stopped`; with nobody at it, the turn is ended here.
        if !control::SupervisorLock::is_held(&files) {
            run::supervise(self.supervision().clone(), *session_id).await?;
        }
        let deadline = Instant::now() + grace + run::SETTLE_WAIT;
        loop {
            let state = records.store.get(session_id)?.state;
            match state {
                SessionState::Running if Instant::now() < deadline => {}
                SessionState::Stopped => return Ok(()),
                SessionState::Running => {
                    return Err(Error::internal(format!(
                        "session {session_id} did not stop within {}: its supervisor may hang; try again or run `codehands recover`",
                        watched::human(grace + run::SETTLE_WAIT)
                    )));
                }
                other => return Err(Error::illegal_move(other, SessionState::Stopped, "stop")),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn resume(&self, session_id: &SessionId, prompt: Option<String>) -> Result<EventStream> {
        let records = self.records();
        let record = records.store.get(session_id)?;
        // Running is reachable from queued too; resume is only for a stopped session.
        if record.state != SessionState::Stopped {
            return Err(Error::illegal_move(
                record.state,
                SessionState::Running,
                "resume",
            ));
        }
        let prompt = prompt
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_RESUME_PROMPT.into());
        self.next_turn(&record, prompt, false, "resume").await
    }

    async fn recover(&self) -> Result<RecoveryReport> {
        let mut report = recover::recover(self.launcher()).await?;
        // After the sessions: a pick cut short reads its attempt's settled approve.
        self.settle_tasks(&mut report).await;
        Ok(report)
    }

    async fn session(&self, session_id: &SessionId) -> Result<SessionRecord> {
        self.healed(self.records().store.get(session_id)?).await
    }

    async fn sessions(&self) -> Result<Vec<SessionRecord>> {
        Ok(self.listing().await?.records)
    }

    async fn report(&self, session_id: &SessionId) -> Result<runner_contract::report::RunReport> {
        let record = self.healed(self.records().store.get(session_id)?).await?;
        let events = self.logged_events(session_id, 0)?;
        // What ran, as probed at the session's start; else the program this runner knows by
        // the agent's name, its version unknown: never run again here, outside the session
        // (`process/probe.rs` says why a probe is run with care).
        let (program, version) =
            match RunFiles::in_home(&self.records().home, session_id).agent_probed() {
                Some(probed) => (Some(probed.program), probed.version),
                None => {
                    let probe = self
                        .agent(&record.agent)
                        .ok()
                        .and_then(|a| a.version_probe());
                    (probe.map(|p| p.program.display().to_string()), None)
                }
            };
        let mut report = crate::report::build(crate::report::ReportInput {
            record: &record,
            events: &events,
            agent_program: program.as_deref(),
            agent_version: version.as_deref(),
        });
        // A workflow between two phases has not finished: driven, or stalled.
        match self.workflow_progress(&record) {
            WorkflowProgress::Settled => {}
            WorkflowProgress::Driven { .. } => report.ended = RunEnding::Running,
            WorkflowProgress::Stalled { phase } => report.ended = RunEnding::Stalled { phase },
        }
        Ok(report)
    }

    async fn send(&self, session_id: &SessionId, text: String) -> Result<runner_contract::Sent> {
        self.send_text(session_id, text).await
    }

    async fn answer(
        &self,
        session_id: &SessionId,
        request_id: &str,
        answer: runner_contract::options::PermissionAnswer,
    ) -> Result<()> {
        self.answer_request(session_id, request_id, answer).await
    }

    async fn interrupt(&self, session_id: &SessionId) -> Result<()> {
        self.interrupt_turn(session_id).await
    }

    async fn events(&self, session_id: &SessionId, after_seq: u64) -> Result<EventStream> {
        let record = self.records().store.get(session_id)?;
        self.healed(record).await?;
        Ok(follow::follow_through(
            self.launcher().clone(),
            *session_id,
            after_seq,
        ))
    }

    async fn resolve_session(&self, text: &str) -> Result<SessionId> {
        self.resolve_id(text)
    }

    async fn approve_with(
        &self,
        session_id: &SessionId,
        message: &str,
        options: ApproveOptions,
    ) -> Result<ApproveResult> {
        self.approve_session(session_id, message, options).await
    }

    async fn reject_session(&self, session_id: &SessionId) -> Result<RejectResult> {
        self.reject_and_say(session_id).await
    }

    async fn start_task(&self, options: TaskOptions) -> Result<StartedTask> {
        self.start_attempts(options).await
    }

    async fn task(&self, id: &TaskId) -> Result<TaskRecord> {
        self.settled_task(id).await
    }

    async fn tasks(&self) -> Result<Vec<TaskRecord>> {
        self.task_records()
    }

    async fn find_task(&self, text: &str) -> Result<Option<TaskId>> {
        self.find_task_id(text)
    }

    async fn task_of(&self, session: &SessionId) -> Result<Option<TaskRecord>> {
        self.task_of_session(session)
    }

    async fn pick(&self, session: &SessionId, options: PickOptions) -> Result<PickResult> {
        self.pick_attempt(session, options).await
    }

    async fn reject_task(&self, id: &TaskId) -> Result<Vec<SessionId>> {
        self.reject_whole_task(id).await
    }

    async fn task_report(&self, id: &TaskId) -> Result<TaskReport> {
        self.report_task(id).await
    }

    async fn run_workflow(&self, options: WorkflowOptions) -> Result<EventStream> {
        self.start_workflow(options).await
    }

    async fn gc(&self, options: GcOptions) -> Result<GcReport> {
        self.collect_garbage(options).await
    }
}
