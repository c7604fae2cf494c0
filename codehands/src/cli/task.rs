//! Tasks on the command line: `run --attempts` starts one, `task ID` shows its attempts side
//! by side (live with `--follow`), `approve` of an attempt picks it, `reject TASK` rejects
//! every attempt. The library does the work (`LocalRunner::start_task`, `task_report`,
//! `pick`, `reject_task`); this is what a person reads.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use futures::StreamExt;
use runner_contract::PickOptions;
use runner_contract::{
    AgentName, AttemptSpec, Result, Runner, SessionId, SessionState, TaskId, TaskOptions,
};
use runner_core::LocalRunner;
use serde::Serialize;

use super::output;
use super::run::RunArgs;
use super::task_view;

/// Arguments of `codehands task`.
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// The task: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// Go on while attempts run: one line per attempt, updated (with `--json`: every
    /// attempt's events as they come, each tagged with its attempt), then the comparison.
    #[arg(long, short)]
    follow: bool,
    /// Print the task's report as JSON (with `--follow`, events first).
    #[arg(long)]
    json: bool,
}

/// `codehands run --attempts LIST|N`: starts the task and prints its id.
pub async fn start(args: RunArgs, attempts: &str) -> Result<ExitCode> {
    if args.image.is_some() {
        return Err(runner_contract::Error::invalid_input(
            "--image is for one run: for attempts, name the image in `[box] image` (README.md, \
             \"Settings\") or in the repo's .devcontainer/devcontainer.json",
        ));
    }
    let attempts = attempts_of(attempts, &args.agent, args.model.as_deref())?;
    let names: Vec<AgentName> = attempts.iter().map(|a| a.agent.clone()).collect();
    let runner = runner_for_all(&names)?;
    let prompt = args.prompt_or_default();
    let options = TaskOptions {
        task_id: TaskId::new_random(),
        repo_path: args.repo,
        prompt,
        attempts,
        budget_usd: args.budget_usd,
        verify: args.verify,
        permissions: runner_contract::Permissions::default(),
        isolation: args.isolation,
        timeout_ms: args.timeout,
        engine: args.engine,
    };
    if let Some(note) = super::run::dirty_note(&options.repo_path) {
        eprintln!("{note}");
    }
    let started = runner.start_task(options).await?;
    let task = runner.task(&started.task_id).await?;
    // The runs go on in their own supervisors; wait only until each agent runs, so an
    // attempt that fails before it could run is said now.
    for (id, _) in &started.attempts {
        runner.wait_for_agent(id, Duration::from_secs(60)).await?;
    }
    if args.decide.json {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Started<'a> {
            task_id: TaskId,
            base_commit: &'a str,
            attempts: &'a [runner_contract::TaskAttempt],
        }
        output::json_line(&Started {
            task_id: task.task_id,
            base_commit: &task.base_commit,
            attempts: &task.attempts,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    output::line(&task.task_id.to_string())?;
    let short = task.task_id.short();
    eprintln!(
        "{} attempts from {}:",
        task.attempts.len(),
        &task.base_commit[..task.base_commit.len().min(12)]
    );
    for (i, attempt) in task.attempts.iter().enumerate() {
        let model = attempt.model.as_deref().unwrap_or("(default)");
        eprintln!(
            "  {}  {} {}  session {}",
            i + 1,
            attempt.agent,
            model,
            attempt.session_id.short()
        );
    }
    eprintln!(
        "Watch them: codehands task {short} --follow; pick one: codehands approve SESSION; \
         or codehands reject {short}"
    );
    Ok(ExitCode::SUCCESS)
}

/// `--attempts`: a number of the `--agent` (with `--model`), or a list `AGENT[:MODEL],…`
/// (an entry without a model takes `--model`).
fn attempts_of(text: &str, agent: &AgentName, model: Option<&str>) -> Result<Vec<AttemptSpec>> {
    if let Ok(n) = text.trim().parse::<usize>() {
        runner_contract::task::check_count(n)?;
        return Ok(vec![
            AttemptSpec {
                model: model.map(str::to_owned),
                ..AttemptSpec::new(agent.clone())
            };
            n
        ]);
    }
    let mut attempts = AttemptSpec::parse_list(text)?;
    for attempt in &mut attempts {
        if attempt.model.is_none() {
            attempt.model = model.map(str::to_owned);
        }
    }
    Ok(attempts)
}

/// The runner, once every agent named is known to it; the error names the first that is not
/// (a broken profile of that name, a built-in left out of this build, or the names known).
fn runner_for_all(agents: &[AgentName]) -> Result<LocalRunner> {
    let mut setup = codehands::Setup::from_env()?;
    setup.settings.supervisor = Some(super::supervisor_command()?);
    let (registry, problems) = super::builder_with_sources(setup.clone())?.agents()?;
    for agent in agents {
        if !registry.contains(agent) {
            return Err(codehands::unknown_agent(&registry, &problems, agent));
        }
    }
    codehands::RunnerBuilder::runner(setup, registry)
}

/// The runner and the task `text` names.
async fn runner_and_task(text: &str) -> Result<(LocalRunner, TaskId)> {
    let runner = super::runner()?;
    let id = runner.find_task(text).await?.ok_or_else(|| {
        runner_contract::Error::not_found(format!(
            "no task id starts with {text}: `codehands run --attempts` starts one and prints its id"
        ))
    })?;
    Ok((runner, id))
}

/// `codehands task ID [--follow] [--json]`.
pub async fn run(args: TaskArgs) -> Result<ExitCode> {
    let (runner, id) = runner_and_task(&args.id).await?;
    if args.follow && args.json {
        follow_json(&runner, &id).await?;
    } else if args.follow {
        follow_lines(&runner, &id).await?;
    }
    let report = runner.task_report(&id).await?;
    if args.json {
        output::json_line(&report)?;
    } else {
        output::text(&task_view::table(&report, output::colour()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One line of `task --follow --json`: an attempt's event, tagged with the attempt.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tagged<'a> {
    attempt: usize,
    session_id: SessionId,
    agent: &'a AgentName,
    model: Option<&'a str>,
    event: runner_contract::Event,
}

/// Every attempt's events, merged as they come, until every attempt's run has ended.
pub(super) async fn follow_json(runner: &dyn Runner, id: &TaskId) -> Result<()> {
    let task = runner.task(id).await?;
    let mut streams = Vec::new();
    for (i, attempt) in task.attempts.iter().enumerate() {
        let events = match runner.events(&attempt.session_id, 0).await {
            Ok(events) => events,
            Err(e) if e.kind() == runner_contract::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        streams.push(events.map(move |event| (i, event)).boxed());
    }
    let mut merged = futures::stream::select_all(streams);
    while let Some((i, event)) = merged.next().await {
        let attempt = &task.attempts[i];
        output::json_line(&Tagged {
            attempt: i + 1,
            session_id: attempt.session_id,
            agent: &attempt.agent,
            model: attempt.model.as_deref(),
            event,
        })?;
    }
    Ok(())
}

/// One line per attempt, updated in place on a terminal (printed again when it changes
/// elsewhere), until every attempt's run has ended.
pub(super) async fn follow_lines(runner: &dyn Runner, id: &TaskId) -> Result<()> {
    let live = output::colour();
    let mut shown: Vec<String> = Vec::new();
    loop {
        let report = runner.task_report(id).await?;
        let lines = task_view::live_lines(&report);
        if live {
            if !shown.is_empty() {
                // Back up over the lines shown and write them again.
                output::text(&format!("\x1b[{}A", shown.len()))?;
            }
            for line in &lines {
                output::text(&format!("\x1b[2K{line}\n"))?;
            }
        } else {
            for (i, line) in lines.iter().enumerate() {
                if shown.get(i) != Some(line) {
                    output::line(line)?;
                }
            }
        }
        shown = lines;
        if report.settled {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// `codehands approve ID` of a task's attempt: says what the pick does, then picks. `None`
/// when the session is no attempt of an open task (a plain approve then).
pub async fn approve_attempt(
    runner: &dyn Runner,
    id: &SessionId,
    options: PickOptions,
    json: bool,
) -> Result<Option<ExitCode>> {
    let Some(task) = runner.task_of(id).await? else {
        return Ok(None);
    };
    let task = runner.task(&task.task_id).await?;
    let n = task.attempt_of(id).unwrap_or(0);
    let mut others = Vec::new();
    for attempt in task.attempts.iter().filter(|a| a.session_id != *id) {
        let state = runner.session(&attempt.session_id).await.map(|r| r.state);
        if matches!(
            state,
            Ok(SessionState::Queued
                | SessionState::Running
                | SessionState::AwaitingApproval
                | SessionState::Stopped)
        ) {
            others.push(attempt.session_id.short());
        }
    }
    if !others.is_empty() && task.state == runner_contract::TaskState::Open {
        let what = if options.keep_others {
            "keeps"
        } else {
            "rejects"
        };
        eprintln!(
            "approving attempt {n} of task {}: this {what} the other attempts ({}){}",
            task.task_id.short(),
            others.join(", "),
            if options.keep_others {
                ""
            } else {
                "; --keep-others keeps them"
            }
        );
    }
    let picked = runner.pick(id, options).await?;
    if json {
        output::json_line(&picked)?;
    } else {
        output::line(&format!(
            "approved: {} on branch {}",
            picked.commit, picked.branch
        ))?;
        for other in &picked.rejected {
            output::line(&format!("  rejected attempt {}", other.short()))?;
        }
        for other in &picked.kept {
            output::line(&format!("  kept attempt {}", other.short()))?;
        }
    }
    Ok(Some(ExitCode::SUCCESS))
}

/// `codehands reject ID` when ID names a task: every attempt not decided is rejected.
/// `None` when no task's id starts with it (a session's then).
pub async fn reject_if_task(
    runner: &dyn Runner,
    text: &str,
    json: bool,
) -> Result<Option<ExitCode>> {
    let Some(id) = runner.find_task(text).await? else {
        return Ok(None);
    };
    let rejected = runner.reject_task(&id).await?;
    if json {
        output::json_line(&serde_json::json!({
            "taskId": id,
            "state": "rejected",
            "rejected": rejected,
        }))?;
    } else {
        output::line(&format!(
            "rejected task {}: {} attempt(s) thrown away (worktrees and branches)",
            id.short(),
            rejected.len()
        ))?;
    }
    Ok(Some(ExitCode::SUCCESS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_repeats_the_agent_and_a_list_names_each() {
        let fake = AgentName::parse("fake").unwrap();
        let three = attempts_of("3", &fake, Some("m")).unwrap();
        assert_eq!(three.len(), 3);
        assert!(
            three
                .iter()
                .all(|a| a.agent == fake && a.model.as_deref() == Some("m"))
        );
        let list = attempts_of("claude-code,codex:gpt-5", &fake, None).unwrap();
        assert_eq!(list[0].model, None);
        assert_eq!(list[1].model.as_deref(), Some("gpt-5"));
        assert!(attempts_of("0", &fake, None).is_err());
        assert!(attempts_of("a,,b", &fake, None).is_err());
    }
}
