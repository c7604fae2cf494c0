//! The end of a turn: its one terminal event, the sandbox's verdict, the record settled.

use crate::runner::disk;
use crate::runner::ending::TurnEnd;
use crate::runner::watched::human;
use runner_contract::error::Error;
use runner_contract::event::{
    ApprovalRequested, EventBody, FailureKind, TaskFailed, TaskFinished, TaskStopped,
};
use runner_contract::sequence::EventSequence;
use runner_contract::traits::memory::RunSummary;
use runner_contract::traits::sandbox::{BoxLimits, SandboxRequest};

use super::{Held, Interruption, Supervisor};

impl Supervisor {
    /// The run's end: exactly one terminal event, and the state to match.
    pub(super) async fn conclude(
        &mut self,
        interruption: Option<Interruption>,
        held: Option<Held>,
        exit_code: Option<i32>,
        stderr: String,
    ) {
        // What the agent said on stderr about failing at its work (its own sandbox cannot
        // start, say), in its words: notes before the turn's end, which would otherwise
        // look like a clean run. Before the skip below: a replay recomputes them.
        for warning in self.agent.stderr_warnings(&stderr) {
            let text = self.redactor.redact(&warning).into_owned();
            self.note(format!("warning from the agent: {text}"));
        }
        let stderr = (!stderr.trim().is_empty()).then_some(stderr);
        let watchdog = self.run.settings.watchdog;
        if self.skip > 0 {
            // The supervisor that went away had begun to end the turn (what it said then
            // depends on more than the agent's output): go on after its last event.
            self.took_over_ending = true;
            self.skip = 0;
        }
        // Before the turn is said to be over: no `.git` of the agent's is left for the
        // person's git to enter (`nested_git.rs`).
        let turn = self.plan.turn;
        let nested = crate::runner::nested_git::take_out(
            self.run.adapters.vcs.as_ref(),
            &self.record,
            &self.files,
            turn,
        );
        if let Some(text) = nested.await {
            self.note(text);
        }
        if interruption.is_none() && self.full.is_none() && held.is_none() {
            // An agent whose own writes failed for a full disk (its edits, its output) may
            // die without a result: the disk is the reason then, not the agent.
            self.disk_looks_full();
        }
        let interruption = if self.full.is_some() {
            Some(Interruption::DiskFull)
        } else {
            interruption
        };
        match (interruption, held.map(|h| (h.body, h.raw))) {
            (Some(Interruption::DiskFull), held) => {
                let cost = held.and_then(|(body, _)| match body {
                    EventBody::TaskFinished(f) => f.cost_usd,
                    EventBody::TaskFailed(f) => f.cost_usd,
                    _ => None,
                });
                self.fail_disk_full_costing(stderr, exit_code, cost).await;
            }
            (Some(Interruption::Stop), _) => self.stopped().await,
            (Some(Interruption::AuthFailed(why)), _) => {
                self.fail(FailureKind::AuthFailed, why, stderr, exit_code, None)
                    .await;
            }
            (Some(Interruption::Idle), _) => {
                let message = format!(
                    "the agent printed nothing for {}; the watchdog (idle) ended its process tree",
                    human(watchdog.idle)
                );
                self.fail(FailureKind::Idle, message, stderr, exit_code, None)
                    .await;
            }
            (Some(Interruption::Timeout), held) => {
                let limit = std::time::Duration::from_millis(self.plan.timeout_ms.unwrap_or(0));
                let message = format!(
                    "the turn ran past its time limit of {}; it was ended, and its change is \
                     kept for inspection (`codehands diff {}`): reject it to remove it",
                    human(limit),
                    self.record.session_id
                );
                let cost = held.and_then(|(body, _)| cost_of(&body));
                self.verify_kept().await;
                self.fail(FailureKind::Timeout, message, stderr, exit_code, cost)
                    .await;
            }
            (Some(Interruption::Repeating(why)), held) => {
                let cost = held.and_then(|(body, _)| cost_of(&body));
                self.verify_kept().await;
                self.fail(FailureKind::Repeating, why, stderr, exit_code, cost)
                    .await;
            }
            (Some(Interruption::Linger), _) => {
                let message = format!(
                    "the agent did not exit within {} of its result; the watchdog (linger) ended its process tree",
                    human(watchdog.linger)
                );
                self.fail(FailureKind::Linger, message, stderr, exit_code, None)
                    .await;
            }
            (None, Some((EventBody::TaskFinished(finished), raw))) => {
                self.finished(finished, raw).await
            }
            (None, Some((EventBody::TaskFailed(mut failed), raw))) => {
                failed.stderr = failed.stderr.or(stderr);
                failed.exit_code = failed.exit_code.or(exit_code);
                self.fail_with(failed, raw).await;
            }
            (None, _) => {
                let code =
                    exit_code.map_or("no exit code".to_owned(), |c| format!("exit code {c}"));
                // An agent that cannot write its output on a full disk dies without a
                // result: then the disk is the cause to name, not its install.
                let message = if disk::looks_full(self.files.dir()) {
                    disk::full_message(
                        self.files.dir(),
                        &format!("the agent exited without a result, {code}"),
                        "run `codehands recover`",
                    )
                } else {
                    format!(
                        "the agent exited without a result ({code}): check that it is installed, on PATH and logged in; stderr says more"
                    )
                };
                self.fail(FailureKind::NoResult, message, stderr, exit_code, None)
                    .await;
            }
        }
    }

    pub(super) async fn finished(&mut self, mut finished: TaskFinished, raw: Option<String>) {
        let step = tracing::trace_span!("turn.diff");
        let diff = match self
            .run
            .adapters
            .vcs
            .diff(&self.record.worktree_spec())
            .await
        {
            Ok(diff) => diff,
            Err(e) => {
                let message = format!("the agent finished but its change could not be read: {e}");
                return self
                    .fail(FailureKind::Vcs, message, None, None, finished.cost_usd)
                    .await;
            }
        };
        if self.plan.verify && !self.took_over_ending {
            self.verify_in_sandbox().await;
        }
        let summary = RunSummary {
            session_id: self.record.session_id,
            prompt: self.redactor.redact_string(self.request.prompt.clone()),
            branch: self.record.branch.clone(),
            result: finished
                .result
                .as_deref()
                .map(|r| self.redactor.redact_string(r.to_owned())),
            diff_stat: diff.stat.clone(),
            finished_at: runner_contract::now_rfc3339(),
        };
        if let Err(e) = self
            .run
            .adapters
            .memory
            .record_run(&self.record.repo_key, &summary)
            .await
        {
            self.note(format!("repo memory: cannot add this run's note: {e}"));
        }
        drop(step);
        finished.diff_stat = Some(diff.stat.clone());
        self.emit(EventBody::TaskFinished(finished), raw);
        // A workflow's phase asks for no approval: its driver does, once the last phase
        // passed (`workflow/`).
        if self.plan.phase.is_none() {
            self.emit(
                EventBody::ApprovalRequested(ApprovalRequested {
                    branch: self.record.branch.clone(),
                    diff_stat: diff.stat,
                }),
                None,
            );
        }
        self.end(None).await;
    }

    /// A change kept for inspection gets its verdict too, when the turn was to be verified:
    /// the person compares it with the others' (`task/verdicts.rs`).
    async fn verify_kept(&mut self) {
        if self.plan.verify && !self.took_over_ending {
            self.verify_in_sandbox().await;
        }
    }

    pub(super) async fn verify_in_sandbox(&mut self) {
        let Some(sandbox) = self.run.adapters.sandbox.clone() else {
            return;
        };
        let request = SandboxRequest {
            session_id: self.record.session_id,
            worktree: self.record.worktree_path.clone(),
            profile: self.profile.clone(),
            test_command: None,
            // A remote session's own image (`--image`, `[box] image`) tests its change too:
            // the toolchain the agent had (docs/remote-box.md, "The repo's own image").
            image: (self.record.engine != runner_contract::Engine::Local)
                .then(|| self.record.allowances.box_image.clone())
                .flatten(),
            timezone: None,
            limits: BoxLimits::default(),
        };
        // A bounded number of test boxes at once, whatever process runs them (task/verdicts.rs).
        let slot = crate::runner::task::TestBoxSlot::acquire(&self.run.records.home).await;
        let result = sandbox.run_tests(&request).await;
        drop(slot);
        if let Some(error) = &result.error {
            self.note(format!("sandbox: {}", error.message));
        }
        // The verify gate (verify.rs): approve reads this verdict, from any process.
        let verdict = crate::runner::verify::Verdict::of(&result);
        if let Err(e) = verdict.save(&self.run.records.home, &self.record.session_id) {
            self.note(format!("sandbox: cannot keep the verdict: {e}"));
        }
        let task =
            crate::runner::task::record_verdict(&self.run.records.home, &self.record, &verdict);
        if let Err(e) = task.await {
            tracing::warn!(session = %self.record.session_id, "the task's record: {e}");
        }
        let body = crate::runner::verify::test_result(&result);
        self.emit(body, None);
        self.flush_events();
    }

    pub(super) async fn stopped(&mut self) {
        self.emit(EventBody::TaskStopped(TaskStopped::default()), None);
        self.end(None).await;
    }

    pub(super) async fn fail(
        &mut self,
        reason: FailureKind,
        message: String,
        stderr: Option<String>,
        exit_code: Option<i32>,
        cost_usd: Option<f64>,
    ) {
        self.fail_with(
            TaskFailed {
                reason,
                message,
                stderr,
                exit_code,
                cost_usd,
            },
            None,
        )
        .await;
    }

    pub(super) async fn fail_with(&mut self, failed: TaskFailed, raw: Option<String>) {
        let message = failed.message.clone();
        self.emit(EventBody::TaskFailed(failed), raw);
        self.end(Some(message)).await;
    }

    /// Writes the turn's last events, then settles the record from them. On a full disk
    /// they are written in the room the turn's reserve leaves; a `task.failed` that still
    /// does not fit is written alone (the events before it that did not fit are dropped,
    /// seq going on from the log's last); when nothing fits the turn's end stays unsaid
    /// ([`Supervisor::run`] says why) and the next command settles it.
    pub(super) async fn end(&mut self, failure: Option<String>) {
        self.flush_events();
        // A box ended by a stop's or a watchdog's SIGKILL could not clean up after itself.
        if let Some(confinement) = &self.run.adapters.confinement
            && self.record.isolation == runner_contract::options::Isolation::Box
        {
            confinement.cleanup(self.files.dir());
        }
        if !self.pending.is_empty() && self.files.release_reserve() {
            self.flush_events();
        }
        if self.pending.len() > 1
            && matches!(
                self.pending.last().map(|e| &e.body),
                Some(EventBody::TaskFailed(_))
            )
            && let Some(last) = self.pending.pop()
        {
            let written = self.seq.last_seq() - self.pending.len() as u64 - 1;
            self.pending.clear();
            self.seq = EventSequence::continuing(self.record.session_id, written);
            self.emit_own(last.body, last.raw);
            self.flush_events();
        }
        if !self.pending.is_empty() {
            let error = match self.full {
                Some(_) => self.full_error(),
                None => {
                    Error::internal("the end of the turn could not be written to the event log")
                }
            };
            tracing::error!(session = %self.record.session_id, "cannot write the end of the run: {error}");
            self.unsaid = Some(error);
            return;
        }
        let mut ending = TurnEnd::new(&self.record, &self.plan);
        ending.failed = failure;
        ending.agent_session_id = self.record.agent_session_id.clone();
        let (run, files) = (self.run.clone(), self.files.clone());
        if let Err(e) = ending
            .settle(&run.records, &run.adapters, &files, &mut self.log)
            .await
        {
            tracing::error!(session = %self.record.session_id, "cannot save the end of the run: {e}");
            self.unsaid = Some(e);
        }
    }
}

/// What a turn's held terminal event says it cost.
fn cost_of(body: &EventBody) -> Option<f64> {
    match body {
        EventBody::TaskFinished(f) => f.cost_usd,
        EventBody::TaskFailed(f) => f.cost_usd,
        _ => None,
    }
}
