//! The ranking of a task's attempts: passing first (the test box's verdict when the task was
//! verified, else the agent's own last test run), then the smaller diff, then the lower cost
//! (an unknown cost is dearer than any known one), then the shorter time, then the order
//! they were asked in. Each attempt gets its place and why, in words.

use std::cmp::Ordering;

use runner_contract::task::{AttemptReport, VerifyVerdict};

/// Marks the cheapest passing attempt (an unknown cost counts as dearer than any known one;
/// the first wins a tie).
pub(super) fn mark_cheapest(attempts: &mut [AttemptReport]) {
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

/// Sets every attempt's `rank` (1 is the best) and `why`.
pub(super) fn rank(attempts: &mut [AttemptReport]) {
    let mut order: Vec<usize> = (0..attempts.len()).collect();
    order.sort_by(|&i, &j| compare(&attempts[i], &attempts[j]).then(i.cmp(&j)));
    let mut why = Vec::with_capacity(order.len());
    for (place, &i) in order.iter().enumerate() {
        let before = place.checked_sub(1).map(|p| &attempts[order[p]]);
        why.push((i, place + 1, explain(&attempts[i], before)));
    }
    for (i, rank, text) in why {
        attempts[i].rank = rank;
        attempts[i].why = text;
    }
}

fn lines(a: &AttemptReport) -> u64 {
    a.diff_stat
        .as_ref()
        .map_or(u64::MAX, |d| d.insertions + d.deletions)
}

fn cost(a: &AttemptReport) -> f64 {
    a.cost_usd.unwrap_or(f64::INFINITY)
}

fn time(a: &AttemptReport) -> u64 {
    a.duration_ms.unwrap_or(u64::MAX)
}

fn compare(a: &AttemptReport, b: &AttemptReport) -> Ordering {
    b.passing
        .cmp(&a.passing)
        .then(lines(a).cmp(&lines(b)))
        .then(cost(a).total_cmp(&cost(b)))
        .then(time(a).cmp(&time(b)))
}

/// Why `a` is where it is, after `before` (the attempt ranked just above it).
fn explain(a: &AttemptReport, before: Option<&AttemptReport>) -> String {
    let pass = passes(a);
    let Some(before) = before else {
        let lead = if a.passing {
            "the best:"
        } else {
            "none passes;"
        };
        return format!("{lead} {pass}, {}", facts(a));
    };
    if before.passing && !a.passing {
        return format!("{pass}, and attempt {} passes", before.attempt);
    }
    let than = format!("attempt {}", before.attempt);
    let reason = if lines(a) != lines(before) {
        format!(
            "a larger diff ({} lines against {} of {than})",
            shown(lines(a)),
            shown(lines(before))
        )
    } else if cost(a) != cost(before) {
        format!(
            "the same diff size as {than}, and dearer ({} against {})",
            dollars(a.cost_usd),
            dollars(before.cost_usd)
        )
    } else if time(a) != time(before) {
        format!("as small and as cheap as {than}, and slower")
    } else {
        format!("alike to {than}, which was asked for first")
    };
    format!("{pass}; {reason}")
}

/// Whether it passes, and by whose word.
fn passes(a: &AttemptReport) -> String {
    match (a.verdict.as_ref(), a.passing) {
        (Some(v), true) => format!("passes in the test box (`{}`)", v.command),
        (Some(v), false) if v.outcome == VerifyVerdict::Passed => {
            format!("did not finish ({})", a.state)
        }
        (Some(v), false) => format!("fails in the test box: {}", v.reason),
        (None, true) => "its own last test run passed".to_owned(),
        (None, false) if a.state != runner_contract::session::SessionState::AwaitingApproval => {
            format!("did not finish ({})", a.state)
        }
        (None, false) if a.tests.is_empty() => "ran no test".to_owned(),
        (None, false) => "its own last test run failed".to_owned(),
    }
}

fn facts(a: &AttemptReport) -> String {
    format!("{} lines changed, {}", shown(lines(a)), dollars(a.cost_usd))
}

fn shown(lines: u64) -> String {
    match lines {
        u64::MAX => "unknown".to_owned(),
        n => n.to_string(),
    }
}

fn dollars(cost: Option<f64>) -> String {
    cost.map_or("cost unknown".to_owned(), |c| format!("${c:.4}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::options::DiffStat;
    use runner_contract::task::{AttemptVerdict, TaskAttempt};

    fn attempt(n: usize, passing: bool, lines: u64, cost: Option<f64>) -> AttemptReport {
        let mut a = super::super::report::never_started_for_tests(
            n,
            &TaskAttempt {
                agent: runner_contract::AgentName::parse("some-agent").unwrap(),
                model: None,
                session_id: runner_contract::SessionId::new_random(),
                verdict: None,
            },
        );
        a.passing = passing;
        a.cost_usd = cost;
        a.state = runner_contract::session::SessionState::AwaitingApproval;
        a.diff_stat = Some(DiffStat {
            files_changed: 1,
            insertions: lines,
            deletions: 0,
            files: Vec::new(),
        });
        a
    }

    #[test]
    fn the_cheapest_passing_attempt_is_marked_once() {
        let mut all = vec![
            attempt(1, true, 1, Some(0.3)),
            attempt(2, false, 1, Some(0.01)),
            attempt(3, true, 1, Some(0.1)),
            attempt(4, true, 1, Some(0.1)),
            attempt(5, true, 1, None),
        ];
        mark_cheapest(&mut all);
        let marked: Vec<usize> = all
            .iter()
            .filter(|a| a.cheapest_passing)
            .map(|a| a.attempt)
            .collect();
        assert_eq!(marked, vec![3]);
        let mut none = vec![attempt(1, false, 1, Some(0.1))];
        mark_cheapest(&mut none);
        assert!(!none[0].cheapest_passing);
    }

    #[test]
    fn passing_comes_first_then_the_smaller_diff_then_the_lower_cost() {
        let mut failing = attempt(1, false, 1, Some(0.01));
        failing.verdict = Some(AttemptVerdict {
            outcome: VerifyVerdict::Failed,
            command: "npm test".into(),
            reason: "the tests failed (exit code 1)".into(),
        });
        let mut all = vec![
            failing,
            attempt(2, true, 40, Some(0.01)),
            attempt(3, true, 4, Some(0.30)),
            attempt(4, true, 4, None),
        ];
        rank(&mut all);
        let ranks: Vec<usize> = all.iter().map(|a| a.rank).collect();
        assert_eq!(ranks, vec![4, 3, 1, 2]);
        assert!(all[2].why.starts_with("the best"), "{}", all[2].why);
        assert!(all[3].why.contains("dearer"), "{}", all[3].why);
        assert!(
            all[1].why.contains("larger diff (40 lines"),
            "{}",
            all[1].why
        );
        assert!(
            all[0]
                .why
                .contains("fails in the test box: the tests failed"),
            "{}",
            all[0].why
        );
    }
}
