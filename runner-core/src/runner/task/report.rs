//! A task's attempts side by side (`codehands task ID`): each attempt's final report
//! (`crate::report::build`, from its record and log), its verdict, and which passing attempt
//! is the cheapest.

use super::super::LocalRunner;
use super::super::verify::{Outcome, Verdict};
use crate::error::{ErrorKind, Result};
use crate::report::ReportInput;
use crate::session::SessionState;
use crate::task::{AttemptReport, TaskAttempt, TaskId, TaskRecord, TaskReport, VerifyVerdict};
use crate::traits::runner::Runner;

impl LocalRunner {
    /// Task `id`'s attempts side by side: agent, model, state, duration, cost, tokens, diff
    /// stat, files, tests and verdict; whether each passes, and the cheapest that does.
    pub async fn task_report(&self, id: &TaskId) -> Result<TaskReport> {
        let task = self.task(id).await?;
        let mut attempts = Vec::with_capacity(task.attempts.len());
        for (i, attempt) in task.attempts.iter().enumerate() {
            attempts.push(self.attempt_report(i + 1, attempt).await?);
        }
        mark_cheapest(&mut attempts);
        Ok(assemble(&task, attempts))
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
        let verify = Verdict::load(&self.shared.home, &id)?.map(|v| match v.outcome {
            Outcome::Passed => VerifyVerdict::Passed,
            Outcome::TestsFailed => VerifyVerdict::Failed,
            Outcome::CouldNotRun => VerifyVerdict::CouldNotRun,
        });
        let finished = matches!(
            record.state,
            SessionState::AwaitingApproval | SessionState::Approving | SessionState::Approved
        );
        let tests_pass = match verify {
            Some(verdict) => verdict == VerifyVerdict::Passed,
            None => report.tests.last().is_some_and(|t| t.passed),
        };
        let mut files_changed: Vec<String> = match &report.diff_stat {
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
            cost_usd: report.cost_usd,
            tokens: report.tokens,
            diff_stat: report.diff_stat,
            files_changed,
            tests: report.tests,
            verify,
            passing: finished && tests_pass,
            cheapest_passing: false,
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
        passing: false,
        cheapest_passing: false,
        failure: Some("the attempt never started (its start was cut short)".into()),
        refused: 0,
    }
}

/// Marks the cheapest passing attempt (an unknown cost counts as dearer than any known one;
/// the first wins a tie).
fn mark_cheapest(attempts: &mut [AttemptReport]) {
    let cost = |a: &AttemptReport| a.cost_usd.unwrap_or(f64::INFINITY);
    let best = attempts
        .iter()
        .enumerate()
        .filter(|(_, a)| a.passing)
        .min_by(|(i, a), (j, b)| cost(a).total_cmp(&cost(b)).then(i.cmp(j)))
        .map(|(i, _)| i);
    if let Some(i) = best {
        attempts[i].cheapest_passing = true;
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
        attempts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(n: usize, passing: bool, cost: Option<f64>) -> AttemptReport {
        let mut a = never_started(
            n,
            &TaskAttempt {
                agent: crate::AgentName::parse("fake").unwrap(),
                model: None,
                session_id: crate::SessionId::new_random(),
            },
        );
        a.passing = passing;
        a.cost_usd = cost;
        a
    }

    #[test]
    fn the_cheapest_passing_attempt_is_marked_once() {
        let mut all = vec![
            attempt(1, true, Some(0.3)),
            attempt(2, false, Some(0.01)),
            attempt(3, true, Some(0.1)),
            attempt(4, true, Some(0.1)),
            attempt(5, true, None),
        ];
        mark_cheapest(&mut all);
        let marked: Vec<usize> = all
            .iter()
            .filter(|a| a.cheapest_passing)
            .map(|a| a.attempt)
            .collect();
        assert_eq!(marked, vec![3]);
        let mut none = vec![attempt(1, false, Some(0.1))];
        mark_cheapest(&mut none);
        assert!(!none[0].cheapest_passing);
    }
}
