//! A task's attempts side by side (`codehands task ID`): each attempt's final report
//! (`crate::report::build`, from its record and log), its verdict from the test box, and
//! the ranking (`rank.rs`): passing first, then the smaller diff, the lower cost, the
//! shorter time, each place with why.

use super::super::verify::Verdict;
use crate::report::ReportInput;
use crate::runner::parts::LocalRunner;
use runner_contract::error::{ErrorKind, Result};
use runner_contract::session::SessionState;
use runner_contract::task::{
    AttemptReport, TaskAttempt, TaskId, TaskRecord, TaskReport, VerifyVerdict,
};
use runner_contract::traits::runner::Runner;

impl LocalRunner {
    /// Task `id`'s attempts side by side: agent, model, state, duration, cost, tokens, diff
    /// stat, files, tests and verdict; whether each passes, and the cheapest that does.
    pub(crate) async fn report_task(&self, id: &TaskId) -> Result<TaskReport> {
        let task = self.settled_task(id).await?;
        let mut attempts = Vec::with_capacity(task.attempts.len());
        for (i, attempt) in task.attempts.iter().enumerate() {
            attempts.push(self.attempt_report(i + 1, attempt).await?);
        }
        super::rank::mark_cheapest(&mut attempts);
        super::rank::rank(&mut attempts);
        self.keep_verdicts(&task, &attempts);
        Ok(assemble(&task, attempts))
    }

    /// Fills in the task record's verdicts its attempts' supervisors could not write (a
    /// pick held the task's lock then), unless another command holds the lock now.
    fn keep_verdicts(&self, task: &TaskRecord, attempts: &[AttemptReport]) {
        let missing = task
            .attempts
            .iter()
            .zip(attempts)
            .any(|(kept, report)| kept.verdict.is_none() && report.verdict.is_some());
        if !missing {
            return;
        }
        let store = self.task_store();
        if let Ok(Some(_lock)) = store.try_lock(&task.task_id) {
            let _ = store.update(&task.task_id, |t| {
                for (kept, report) in t.attempts.iter_mut().zip(attempts) {
                    kept.verdict = kept.verdict.take().or(report.verdict.clone());
                }
                Ok(())
            });
        }
    }

    async fn attempt_report(&self, n: usize, attempt: &TaskAttempt) -> Result<AttemptReport> {
        let id = attempt.session_id;
        let record = match self.session(&id).await {
            Ok(record) => record,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(never_started(n, attempt)),
            Err(e) => return Err(e),
        };
        let events = self.logged_events(&id, 0)?;
        let report = crate::report::build(ReportInput {
            record: &record,
            events: &events,
            agent_program: None,
            agent_version: None,
        });
        let verdict = Verdict::load(&self.records().home, &id)?
            .map(|v| super::verdicts::attempt_verdict(&v))
            .or(attempt.verdict.clone());
        let verify = verdict.as_ref().map(|v| v.outcome);
        let (cost_usd, cost_estimated) = match (report.cost_usd, report.tokens) {
            (Some(cost), _) => (Some(cost), false),
            (None, Some(tokens)) => {
                let model = attempt.model.as_deref().or(report.model.as_deref());
                let price = self
                    .agents()
                    .get(&record.agent)
                    .ok()
                    .and_then(|agent| agent.token_price(model));
                (price.map(|p| p.cost(tokens)), price.is_some())
            }
            (None, None) => (None, false),
        };
        let finished = matches!(
            record.state,
            SessionState::AwaitingApproval | SessionState::Approving | SessionState::Approved
        );
        let tests_pass = match verify {
            Some(verdict) => verdict == VerifyVerdict::Passed,
            None => report.tests.last().is_some_and(|t| t.passed),
        };
        // A failed attempt whose change was kept has no `task.finished` with its diff: the
        // worktree says what it changed.
        let diff_stat = match report.diff_stat.clone() {
            None if record.kept && record.worktree_path.exists() => self
                .adapters()
                .vcs
                .diff(&record.worktree_spec())
                .await
                .ok()
                .map(|d| d.stat),
            stat => stat,
        };
        let mut files_changed: Vec<String> = match &diff_stat {
            Some(stat) => stat.files.iter().map(|f| f.path.clone()).collect(),
            None => report
                .files_changed
                .iter()
                .map(|f| f.path.clone())
                .collect(),
        };
        files_changed.sort();
        Ok(AttemptReport {
            attempt: n,
            session_id: id,
            agent: record.agent.clone(),
            model: attempt.model.clone().or(report.model.clone()),
            state: record.state,
            branch: record.branch.clone(),
            duration_ms: report.duration_ms,
            cost_usd,
            cost_estimated,
            tokens: report.tokens,
            diff_stat,
            files_changed,
            tests: report.tests,
            verify,
            verdict,
            passing: finished && tests_pass,
            cheapest_passing: false,
            rank: 0,
            why: String::new(),
            failure: record.failure.clone(),
            refused: report.denied_tools.len(),
        })
    }
}

/// An attempt whose session never got its record (a crash while the task started).
fn never_started(n: usize, attempt: &TaskAttempt) -> AttemptReport {
    AttemptReport {
        attempt: n,
        session_id: attempt.session_id,
        agent: attempt.agent.clone(),
        model: attempt.model.clone(),
        state: SessionState::Failed,
        branch: String::new(),
        duration_ms: None,
        cost_usd: None,
        tokens: None,
        diff_stat: None,
        files_changed: Vec::new(),
        tests: Vec::new(),
        verify: None,
        verdict: attempt.verdict.clone(),
        cost_estimated: false,
        passing: false,
        cheapest_passing: false,
        rank: 0,
        why: String::new(),
        failure: Some("the attempt never started (its start was cut short)".into()),
        refused: 0,
    }
}

fn assemble(task: &TaskRecord, attempts: Vec<AttemptReport>) -> TaskReport {
    let costs: Vec<f64> = attempts.iter().filter_map(|a| a.cost_usd).collect();
    TaskReport {
        task_id: task.task_id,
        state: task.state,
        repo_path: task.repo_path.clone(),
        base_commit: task.base_commit.clone(),
        prompt: task.prompt.clone(),
        picked: task.picked,
        settled: attempts
            .iter()
            .all(|a| !matches!(a.state, SessionState::Queued | SessionState::Running)),
        cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
        best: attempts
            .iter()
            .find(|a| a.rank == 1 && a.passing)
            .map(|a| a.session_id),
        attempts,
    }
}

#[cfg(test)]
pub(super) fn never_started_for_tests(n: usize, attempt: &TaskAttempt) -> AttemptReport {
    never_started(n, attempt)
}
