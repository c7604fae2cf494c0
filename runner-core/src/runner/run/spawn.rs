//! Starting the agent for a turn: detached, in its box when the session asks for one.

use crate::redact::Redactor;
use crate::runner::control::AgentRun;
use crate::runner::disk::{self, Appender};
use crate::runner::watched::Watched;
use runner_contract::error::{ErrorKind, Result};
use runner_contract::event::{EventBody, FailureKind, TaskStopped};
use runner_contract::traits::agent::StdinClose;
use runner_process::detached::{AgentOutput, DetachedAgent};

use super::Supervisor;
use super::frames::secret_values;

impl Supervisor {
    /// Starts the agent, recording it first as being spawned and then with its pid; a stop
    /// asked for before it started ends the turn without it.
    pub(super) async fn spawn(&mut self, seq_before_agent: u64) -> Option<Watched> {
        if self.full.is_some() {
            // What the turn wrote before the agent did not fit: it does not start.
            self.fail_disk_full(None, None).await;
            return None;
        }
        if self.files.stop_requested() {
            self.emit(
                EventBody::TaskStopped(TaskStopped {
                    reason: Some("stopped before the agent started".into()),
                }),
                None,
            );
            self.end(None).await;
            return None;
        }
        match self.try_spawn(seq_before_agent).await {
            Ok(agent) => Some(Watched::Child(Box::new(agent))),
            Err(e) if disk::is_full(&e) => {
                self.saw(&e);
                self.fail_disk_full(None, None).await;
                None
            }
            Err(e) => {
                let reason = if e.kind() == ErrorKind::InvalidInput {
                    FailureKind::InvalidInput
                } else {
                    FailureKind::AgentUnavailable
                };
                self.fail(reason, e.to_string(), None, None, None).await;
                None
            }
        }
    }

    pub(super) async fn try_spawn(&mut self, seq_before_agent: u64) -> Result<DetachedAgent> {
        let invocation = self.agent.invocation(&self.request)?;
        let env = runner_process::env::agent_env(
            self.run.settings.caller_env.iter().cloned(),
            &self.agent.provider_env(),
            &self.run.settings.extra_env,
            &invocation.env,
        );
        let step = tracing::trace_span!("turn.confine");
        let invocation = self.confined(invocation, &env).await?;
        drop(step);
        let secrets = secret_values(&env, &self.agent.secret_envs());
        self.files.set_secrets(&secrets)?;
        self.redactor = Redactor::new(secrets);
        let transcript_start = self.transcript.as_ref().map_or(0, Appender::len);
        let mut run = AgentRun {
            turn: self.plan.turn,
            process: None,
            relay: None,
            input_relay: None,
            seq_before_agent,
            transcript_start,
        };
        self.files.set_agent_run(&run)?;
        let (stdout, stderr) = (
            self.files.agent_stdout(self.plan.turn),
            self.files.agent_stderr(self.plan.turn),
        );
        let stdin = crate::runner::inbox::input_file(&self.files, self.plan.turn);
        let output = AgentOutput {
            root: self.files.root(),
            stdout: &stdout,
            stderr: &stderr,
            stdin: &stdin,
        };
        let step = tracing::trace_span!("turn.exec");
        let mut agent =
            DetachedAgent::spawn(&invocation, &self.record.worktree_path, &env, &output)?;
        drop(step);
        run.process = Some(agent.identity());
        run.relay = agent.relay_identity();
        run.input_relay = agent.input_relay_identity();
        if let Err(e) = self.files.set_agent_run(&run) {
            // Without the record no other process could stop or adopt it: do not run it.
            let grace = self.run.settings.stop_grace;
            agent.end_tree(grace).await;
            agent.close_stdin();
            return Err(e);
        }
        if invocation.close_stdin == StdinClose::AfterWrite {
            agent.close_stdin();
        }
        Ok(agent)
    }

    /// The invocation in the session's box when its isolation is `box` (the program spawned,
    /// recorded, stopped and adopted is then the box's outer process), else as it is.
    pub(super) async fn confined(
        &self,
        invocation: runner_contract::Invocation,
        env: &[(String, String)],
    ) -> Result<runner_contract::Invocation> {
        if self.record.isolation == runner_contract::options::Isolation::None {
            return Ok(invocation);
        }
        crate::runner::preflight::isolation(
            self.run.adapters.confinement.as_deref(),
            self.record.isolation,
            self.record.engine,
        )?;
        let Some(confinement) = &self.run.adapters.confinement else {
            unreachable!("preflight::isolation refuses a box without a confinement");
        };
        let git = self
            .run
            .adapters.vcs
            .git_dirs(&self.record.worktree_spec())
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(session = %self.record.session_id, "the box has no git folders: {e}");
                None
            });
        // What the person's settings add (`Allowances::box_read`) is read-only, as the
        // agent's own needs are.
        let mut needs = self.agent.box_needs();
        needs
            .read_only
            .extend(self.record.allowances.box_read.iter().cloned());
        confinement.wrap(&runner_contract::ConfineRequest {
            session_id: &self.record.session_id,
            run_dir: self.files.dir(),
            worktree: &self.record.worktree_path,
            worktree_read_only: self.plan.phase.as_ref().is_some_and(|p| p.read_only),
            invocation: &invocation,
            env,
            needs: &needs,
            files: &self.request.notes_file.iter().cloned().collect::<Vec<_>>(),
            git,
            engine: self.record.engine,
            image: self.record.allowances.box_image.as_deref(),
        })
    }
}
