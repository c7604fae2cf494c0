//! Starting a workflow: every check before anything is made, then the first phase's turn
//! and the driver for the rest.

use std::collections::BTreeMap;

use super::Driver;
use super::state::{self, DriverLock, WorkflowState};
use crate::runner::control::RunFiles;
use crate::runner::parts::{LocalRunner, MAX_PROMPT_BYTES};
use crate::runner::preflight;
use runner_contract::error::{Error, Result};
use runner_contract::options::{DEFAULT_BUDGET_USD, Permissions, StartOptions};
use runner_contract::traits::agent::AgentRequest;
use runner_contract::traits::runner::EventStream;
use runner_contract::workflow::WorkflowOptions;

impl LocalRunner {
    /// Runs `options.workflow` on `options.repo_path` as one session: refuses, with nothing
    /// made, a workflow that breaks a rule, a phase whose agent is unknown or cannot run
    /// here, a model an agent cannot take, a blank prompt or a bad budget; then starts the
    /// first phase and returns the events of every phase as they come (the session's own
    /// events, with `phase.started`, `phase.finished` and `review.finding`), ending after
    /// `approval.requested`, `task.failed` or `task.stopped`.
    pub(crate) async fn start_workflow(&self, options: WorkflowOptions) -> Result<EventStream> {
        let workflow = options.workflow.clone();
        workflow.check(&format!("{:?}", workflow.name))?;
        AgentRequest::check_prompt(&options.prompt)?;
        if options.prompt.len() > MAX_PROMPT_BYTES {
            return Err(Error::invalid_input(format!(
                "the prompt is {} bytes, over the limit of {MAX_PROMPT_BYTES}: shorten it",
                options.prompt.len()
            )));
        }
        let turns = workflow.max_turns();
        let budget = match options.budget_usd {
            Some(total) => {
                AgentRequest::check_budget(total)?;
                total / f64::from(turns)
            }
            None => DEFAULT_BUDGET_USD,
        };
        for phase in &workflow.phases {
            let agent = self.agent(&phase.agent).map_err(|e| {
                Error::new(
                    e.kind(),
                    format!("the workflow's phase {:?}: {}", phase.name, e.message()),
                )
            })?;
            if let Some(model) = &phase.model {
                agent.check_model(model)?;
            }
            if phase.gate.is_some_and(|g| g.verify) && self.adapters().sandbox.is_none() {
                return Err(Error::not_in_build("verify (the Docker sandbox)", "docker"));
            }
            preflight::program(agent.as_ref(), &self.settings().caller_env)?;
        }
        preflight::isolation(
            self.adapters().confinement.as_deref(),
            options.isolation,
            runner_contract::options::Engine::Local,
        )?;

        let first = &workflow.phases[0];
        let mut start = StartOptions::new(
            options.session_id,
            options.repo_path.clone(),
            options.prompt.clone(),
            first.agent.clone(),
        );
        start.model = first.model.clone();
        start.budget_usd = Some(budget);
        start.verify = first.gate.is_some_and(|g| g.verify);
        start.permissions = Permissions::default();
        start.isolation = options.isolation;
        start.timeout_ms = options.timeout_ms;
        let id = options.session_id;
        if self.records().store.get(&id).is_ok() {
            return Err(Error::invalid_input(format!(
                "session {id} already exists: pick a new session id"
            )));
        }
        // The driver's state and lock exist before the session does: a session of this
        // workflow is never without them.
        let files = RunFiles::in_home(&self.records().home, &id);
        files.prepare()?;
        let lock = DriverLock::try_acquire(&files)?.ok_or_else(|| {
            Error::new(
                runner_contract::error::ErrorKind::Locked,
                format!("another process drives the workflow of session {id}"),
            )
        })?;
        let driver = Driver {
            runner: LocalRunner::driver(self.launcher()),
            id,
            files,
            _lock: lock,
            state: WorkflowState {
                workflow,
                task: options.prompt,
                index: 0,
                round: 1,
                logged_before: 0,
                texts: BTreeMap::new(),
                findings: Vec::new(),
                conversations: BTreeMap::new(),
                done: false,
            },
            trouble: None,
        };
        driver.state.save(&driver.files)?;
        let prompt = driver.prompt_of(0).await;
        let stream = match self
            .start_session_with(start, None, Some((prompt, driver.turn_phase(0, 1))))
            .await
        {
            Ok(stream) => stream,
            Err(e) => {
                // No session: nothing of the workflow stays either.
                if self.records().store.get(&id).is_err() {
                    state::forget(&driver.files);
                }
                return Err(e);
            }
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            driver.drive(stream, tx).await;
        });
        {
            let mut tasks = self
                .launcher()
                .tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            tasks.retain(|t| !t.is_finished());
            tasks.push(task.abort_handle());
        }
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (event, rx))
        })))
    }
}
