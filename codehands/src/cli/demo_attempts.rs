//! `codehands demo --attempts N`: the demo as a task. N attempts of the fake agent fix the
//! demo's bug side by side from one base commit; the comparison is printed, and the cheapest
//! passing attempt (else the first that finished) is picked: approved, the others rejected.

use std::path::Path;
use std::process::ExitCode;

use runner_contract::{
    AgentName, AttemptSpec, Isolation, PickOptions, Result, Runner, SessionState, TaskId,
    TaskOptions,
};

use super::{output, task, task_view};

/// Runs the task, shows it, picks one.
pub async fn run(
    runner: &dyn Runner,
    repo: &Path,
    prompt: &str,
    agent: AgentName,
    isolation: Isolation,
    n: usize,
    json: bool,
) -> Result<ExitCode> {
    runner_contract::task::check_count(n)?;
    let started = runner
        .start_task(TaskOptions {
            task_id: TaskId::new_random(),
            repo_path: repo.to_path_buf(),
            prompt: prompt.to_owned(),
            attempts: vec![AttemptSpec::new(agent); n],
            budget_usd: None,
            verify: false,
            permissions: Default::default(),
            isolation,
            timeout_ms: None,
            engine: Default::default(),
        })
        .await?;
    let id = started.task_id;
    drop(started.attempts);
    if json {
        task::follow_json(runner, &id).await?;
    } else {
        println!("task {id}: {n} attempts of the fake agent at once");
        task::follow_lines(runner, &id).await?;
    }
    let report = runner.task_report(&id).await?;
    if !json {
        output::text(&task_view::table(&report, output::colour()))?;
    }
    let chosen = report
        .attempts
        .iter()
        .find(|a| a.cheapest_passing)
        .or_else(|| {
            report
                .attempts
                .iter()
                .find(|a| a.state == SessionState::AwaitingApproval)
        });
    let Some(chosen) = chosen else {
        eprintln!("no attempt finished: nothing to pick");
        return Ok(ExitCode::FAILURE);
    };
    let picked = runner
        .pick(
            &chosen.session_id,
            PickOptions {
                message: "Fix the off-by-one month in formatDate".into(),
                ..PickOptions::default()
            },
        )
        .await?;
    if json {
        output::json_line(&picked)?;
    } else {
        println!(
            "picked attempt {}: {} on branch {}; rejected {} other(s)",
            chosen.attempt,
            picked.commit,
            picked.branch,
            picked.rejected.len()
        );
        println!("look at it: git -C {} log --oneline --all", repo.display());
    }
    Ok(ExitCode::SUCCESS)
}
