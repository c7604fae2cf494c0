//! What a person reads of a task: its attempts side by side (`codehands task ID`) and one
//! line per attempt while they run (`--follow`). Everything the agents wrote (file names,
//! failure messages) goes through `view::visible`, so no control character of theirs
//! reaches the terminal.

use runner_contract::{AttemptReport, SessionRecord, TaskRecord, TaskReport, VerifyVerdict};

use super::output::paint;
use runner_contract::present::visible;

/// The attempts side by side: one row each (agent, model, state, time, cost, tokens, diff,
/// files, tests, verdict), the best one marked `*`; then the files × attempts view (which
/// attempt changed what), the test box's verdicts, and the ranking with why.
pub fn table(report: &TaskReport, colour: bool) -> String {
    let header = [
        "", "#", "session", "agent", "model", "state", "time", "cost", "tokens", "diff", "files",
        "tests", "verify",
    ];
    let rows: Vec<Vec<String>> = report.attempts.iter().map(row).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned()
    };
    let mut out = format!(
        "task {} ({}, from {}): {}\n",
        report.task_id,
        report.state,
        &report.base_commit[..report.base_commit.len().min(12)],
        visible(first_line(&report.prompt), false)
    );
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    out.push_str(&paint(colour, "1", &line(&header)));
    out.push('\n');
    for (attempt, cells) in report.attempts.iter().zip(&rows) {
        let text = line(cells);
        let text = if attempt.rank == 1 && attempt.passing {
            paint(colour, "32", &text)
        } else {
            text
        };
        out.push_str(&text);
        out.push('\n');
    }
    out.push_str(&files_by_attempt(report));
    for attempt in &report.attempts {
        if let Some(verdict) = &attempt.verdict {
            out.push_str(&format!(
                "  {}: the test box ran `{}`: {}\n",
                attempt.attempt,
                visible(&verdict.command, false),
                visible(&verdict.reason, false)
            ));
        }
        if attempt.refused > 0 {
            // A refused tool use may be why an attempt ran no test: say so beside it.
            out.push_str(&paint(
                colour,
                "33",
                &format!(
                    "  {}: its agent was refused {} tool use(s): `codehands report {}` lists them \
                     with the setting that allows each\n",
                    attempt.attempt,
                    attempt.refused,
                    attempt.session_id.short()
                ),
            ));
        }
        if let Some(failure) = &attempt.failure {
            out.push_str(&format!(
                "  {} failed: {}\n",
                attempt.attempt,
                visible(first_line(failure), false)
            ));
        }
    }
    if let Some(cost) = report.cost_usd {
        out.push_str(&format!("total cost ${cost:.4}\n"));
    }
    let mut ranked: Vec<&AttemptReport> = report.attempts.iter().filter(|a| a.rank > 0).collect();
    ranked.sort_by_key(|a| a.rank);
    for a in ranked {
        out.push_str(&format!(
            "{}. attempt {}: {}\n",
            a.rank,
            a.attempt,
            visible(&a.why, false)
        ));
    }
    match report
        .attempts
        .iter()
        .find(|a| Some(a.session_id) == report.best)
    {
        Some(best) => out.push_str(&format!(
            "* best: attempt {} (codehands approve {})\n",
            best.attempt,
            best.session_id.short()
        )),
        None if report.settled => {
            out.push_str("no attempt passes (none finished with passing tests)\n")
        }
        None => {}
    }
    out
}

/// Which attempt changed what: one row per file any attempt changed, one column per
/// attempt (`+added -removed`, or `·` for a file it left alone).
fn files_by_attempt(report: &TaskReport) -> String {
    let mut files: Vec<&str> = report
        .attempts
        .iter()
        .flat_map(|a| a.files_changed.iter().map(String::as_str))
        .collect();
    files.sort_unstable();
    files.dedup();
    if files.is_empty() {
        return String::new();
    }
    let cell = |a: &AttemptReport, file: &str| -> String {
        let stat = a
            .diff_stat
            .as_ref()
            .and_then(|d| d.files.iter().find(|f| f.path == file));
        match stat {
            Some(f) if f.binary => "binary".to_owned(),
            Some(f) => format!("+{} -{}", f.insertions, f.deletions),
            None if a.files_changed.iter().any(|f| f == file) => "changed".to_owned(),
            None => "·".to_owned(),
        }
    };
    let names: Vec<String> = files
        .iter()
        .map(|f| visible(f, false).into_owned())
        .collect();
    let first = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let columns: Vec<String> = report
        .attempts
        .iter()
        .map(|a| a.attempt.to_string())
        .collect();
    let cells: Vec<Vec<String>> = files
        .iter()
        .map(|f| report.attempts.iter().map(|a| cell(a, f)).collect())
        .collect();
    let width = cells
        .iter()
        .flatten()
        .chain(&columns)
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(1);
    let mut out = format!("{:<first$}", "file");
    for c in &columns {
        out.push_str(&format!("  {c:>width$}"));
    }
    out = out.trim_end().to_owned() + "\n";
    for (name, row) in names.iter().zip(&cells) {
        let mut line = format!("{name:<first$}");
        for c in row {
            line.push_str(&format!("  {c:>width$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One line per attempt while they run: number, agent and model, state, time, cost, diff.
pub fn live_lines(report: &TaskReport) -> Vec<String> {
    report
        .attempts
        .iter()
        .map(|a| {
            let r = row(a);
            format!(
                "{:>2} {} {:<20} {:<17} {:>6} {:>9} {}",
                r[1],
                r[2],
                format!("{} {}", r[3], r[4]),
                r[5],
                r[6],
                r[7],
                r[9]
            )
        })
        .collect()
}

fn row(a: &AttemptReport) -> Vec<String> {
    let dash = || "-".to_owned();
    let tests = if a.tests.is_empty() {
        dash()
    } else {
        let passed = a.tests.iter().filter(|t| t.passed).count();
        format!("{passed}/{} passed", a.tests.len())
    };
    vec![
        if a.rank == 1 && a.passing { "*" } else { "" }.to_owned(),
        a.attempt.to_string(),
        a.session_id.short(),
        a.agent.to_string(),
        a.model.as_deref().map_or_else(
            || "(default)".to_owned(),
            |m| visible(m, false).into_owned(),
        ),
        a.state.to_string(),
        a.duration_ms.map_or_else(dash, seconds),
        a.cost_usd.map_or_else(dash, |c| {
            // `~`: worked out from the tokens at the model's list price.
            let about = if a.cost_estimated { "~" } else { "" };
            format!("{about}${c:.4}")
        }),
        a.tokens
            .map_or_else(dash, |t| format!("{}/{}", t.input, t.output)),
        a.diff_stat
            .as_ref()
            .map_or_else(dash, |s| format!("+{} -{}", s.insertions, s.deletions)),
        a.files_changed.len().to_string(),
        tests,
        match a.verify {
            Some(VerifyVerdict::Passed) => "passed".to_owned(),
            Some(VerifyVerdict::Failed) => "failed".to_owned(),
            Some(VerifyVerdict::CouldNotRun) => "could not run".to_owned(),
            None => dash(),
        },
    ]
}

fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// One line per task with an attempt among `listed` (`codehands sessions`): its state, how many
/// attempts, and what they cost together (the sum of its sessions' costs and tokens).
pub fn task_totals(tasks: &[TaskRecord], listed: &[&SessionRecord]) -> Vec<String> {
    tasks
        .iter()
        .filter_map(|task| {
            let mine: Vec<&SessionRecord> = listed
                .iter()
                .copied()
                .filter(|r| task.attempt_of(&r.session_id).is_some())
                .collect();
            if mine.is_empty() {
                return None;
            }
            let cost: f64 = mine.iter().filter_map(|r| r.cost_usd).sum();
            let tokens = mine
                .iter()
                .filter_map(|r| r.tokens)
                .fold(runner_contract::TokenCounts::default(), |a, b| a + b);
            Some(format!(
                "task {} ({}): {} attempts, ${cost:.4}, {} in / {} out tokens",
                task.task_id.short(),
                task.state,
                task.attempts.len(),
                tokens.input,
                tokens.output
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::{AgentName, SessionId, SessionState, TaskId, TaskState};

    fn attempt(n: usize, refused: usize) -> AttemptReport {
        AttemptReport {
            attempt: n,
            session_id: SessionId::new_random(),
            agent: AgentName::parse("claude-code").unwrap(),
            model: None,
            state: SessionState::AwaitingApproval,
            branch: "codehands/x".into(),
            duration_ms: None,
            cost_usd: None,
            tokens: None,
            diff_stat: None,
            files_changed: Vec::new(),
            tests: Vec::new(),
            verify: None,
            verdict: None,
            cost_estimated: false,
            passing: false,
            cheapest_passing: false,
            rank: 0,
            why: String::new(),
            failure: None,
            refused,
        }
    }

    #[test]
    fn an_attempts_refused_tool_uses_are_counted_beside_it() {
        let report = TaskReport {
            task_id: TaskId::new_random(),
            state: TaskState::Open,
            repo_path: "/repo".into(),
            base_commit: "0123456789abcdef".into(),
            prompt: "fix it".into(),
            picked: None,
            attempts: vec![attempt(1, 0), attempt(2, 3)],
            cost_usd: None,
            settled: true,
            best: None,
        };
        let text = table(&report, false);
        let second = report.attempts[1].session_id.short();
        assert!(
            text.contains(&format!(
                "  2: its agent was refused 3 tool use(s): `codehands report {second}` lists them"
            )),
            "{text}"
        );
        assert!(!text.contains("  1: its agent was refused"), "{text}");
    }

    #[test]
    fn the_files_view_says_which_attempt_changed_what() {
        let stat = |files: &[(&str, u64)]| runner_contract::DiffStat {
            files_changed: files.len() as u64,
            insertions: files.iter().map(|f| f.1).sum(),
            deletions: 0,
            files: files
                .iter()
                .map(|(path, n)| runner_contract::FileStat {
                    path: (*path).into(),
                    old_path: None,
                    insertions: *n,
                    deletions: 0,
                    binary: false,
                    too_large: false,
                })
                .collect(),
        };
        let mut one = attempt(1, 0);
        one.diff_stat = Some(stat(&[("src/a.js", 2)]));
        one.files_changed = vec!["src/a.js".into()];
        let mut two = attempt(2, 0);
        two.diff_stat = Some(stat(&[("src/a.js", 1), ("src/b.js", 5)]));
        two.files_changed = vec!["src/a.js".into(), "src/b.js".into()];
        let report = TaskReport {
            task_id: TaskId::new_random(),
            state: TaskState::Open,
            repo_path: "/repo".into(),
            base_commit: "0123456789abcdef".into(),
            prompt: "fix it".into(),
            picked: None,
            attempts: vec![one, two],
            cost_usd: None,
            settled: true,
            best: None,
        };
        let view = files_by_attempt(&report);
        let lines: Vec<&str> = view.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["file", "1", "2"]
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["src/a.js", "+2", "-0", "+1", "-0"]
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["src/b.js", "·", "+5", "-0"]
        );
    }
}
