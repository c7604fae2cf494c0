//! Commands on existing sessions: diff, approve, reject, stop, recover.
//! Each works on a session started by any codehands process, named by its id or a unique
//! prefix of 8 or more characters of it (`sessions` is in `list.rs`).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use runner_contract::{ApproveOptions, ErrorKind, Result, Runner, SessionId, SessionState};
use runner_core::LocalRunner;

use super::output;
use super::view;

/// A session id (or a unique prefix of 8+ characters), and `--json`.
#[derive(Debug, Args)]
pub struct IdArgs {
    /// The session (for `reject`, or a task): its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// Print contract JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `codehands diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The session: its id, or the first 8 or more characters of it; or a task, whose
    /// attempts are each shown against the base commit, one after the other.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// Another session (an attempt of the same task): show how ID's change differs from
    /// that one's, file by file, instead of from the base commit.
    #[arg(long, value_name = "ID2", value_parser = super::session_ref)]
    against: Option<String>,
    /// Only the stat, not the patch.
    #[arg(long)]
    stat: bool,
    /// Print the DiffResult as JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `codehands approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The session: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// The commit message (default: the prompt's first line).
    #[arg(short, long)]
    message: Option<String>,
    /// Approve even when `--verify` found the tests failing or could not run them.
    #[arg(long)]
    force: bool,
    /// For an attempt of a task: keep the task's other attempts instead of rejecting them.
    #[arg(long)]
    keep_others: bool,
    /// Print the ApproveResult as JSON (for an attempt, with what became of the others).
    #[arg(long)]
    json: bool,
}

/// Just `--json`.
#[derive(Debug, Args)]
pub struct JsonArgs {
    /// Print contract JSON.
    #[arg(long)]
    json: bool,
}

/// The runner and the session `text` names.
async fn runner_and(text: &str) -> Result<(LocalRunner, SessionId)> {
    let runner = super::runner()?;
    let id = runner.resolve_session(text).await?;
    Ok((runner, id))
}

/// `codehands diff ID`.
pub async fn diff(args: DiffArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    if args.against.is_none()
        && let Some(task) = runner.find_task(&args.id).await?
    {
        return super::task_diff::each_attempt(&runner, &task, args.stat, args.json).await;
    }
    let id = runner.resolve_session(&args.id).await?;
    if let Some(other) = &args.against {
        let other = runner.resolve_session(other).await?;
        return super::task_diff::run(&runner, &id, &other, args.stat, args.json).await;
    }
    let diff = match runner.diff(&id).await {
        Ok(diff) => diff,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(after_the_fact(&runner, &id, e).await);
        }
        Err(e) => return Err(e),
    };
    if args.json {
        output::json_line(&diff)?;
    } else {
        if !args.stat {
            // Piped, the patch stays exact (`git apply` takes it); on a terminal, the
            // agent's file contents are shown, never obeyed.
            if std::io::stdout().is_terminal() {
                output::text(&runner_contract::present::visible(&diff.patch, true))?;
            } else {
                output::text(&diff.patch)?;
            }
        }
        output::line(&view::stat_table(&diff.stat))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The error of a diff whose worktree is gone: an approved session's change is on its
/// branch, so point there.
pub(super) async fn after_the_fact(
    runner: &dyn Runner,
    id: &SessionId,
    error: runner_contract::Error,
) -> runner_contract::Error {
    match runner.session(id).await {
        Ok(record) if record.state == SessionState::Approved => runner_contract::Error::new(
            ErrorKind::NotFound,
            format!(
                "session {id} is approved: its change is the commit {} on branch {}; see it with \
                 `git -C {} show {}`",
                record.commit.as_deref().unwrap_or("?"),
                record.branch,
                record.repo_path.display(),
                record.branch
            ),
        ),
        _ => error,
    }
}

/// `codehands approve ID -m MSG`.
pub async fn approve(args: ApproveArgs) -> Result<ExitCode> {
    let (runner, id) = runner_and(&args.id).await?;
    let pick = runner_contract::PickOptions {
        message: args.message.clone().unwrap_or_default(),
        force: args.force,
        keep_others: args.keep_others,
    };
    if let Some(code) = super::task::approve_attempt(&runner, &id, pick, args.json).await? {
        return Ok(code);
    }
    if args.keep_others {
        return Err(runner_contract::Error::invalid_input(format!(
            "session {id} is no attempt of a task: --keep-others has nothing to keep; drop it"
        )));
    }
    let options = ApproveOptions { force: args.force };
    let approved = runner
        .approve_with(&id, args.message.as_deref().unwrap_or(""), options)
        .await?;
    if args.json {
        output::json_line(&approved)?;
    } else {
        output::line(&format!(
            "approved: {} on branch {}",
            approved.commit, approved.branch
        ))?;
        let last_test = super::last_test::LastTest::of(&runner.logged_events(&id, 0)?);
        if !matches!(last_test, super::last_test::LastTest::Passed { .. }) {
            output::line(&last_test.line())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands reject ID`.
pub async fn reject(args: IdArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    if let Some(code) = super::task::reject_if_task(&runner, &args.id, args.json).await? {
        return Ok(code);
    }
    let id = runner.resolve_session(&args.id).await?;
    let rejected = runner.reject_session(&id).await?;
    if args.json {
        output::json_line(&serde_json::json!({
            "sessionId": id,
            "state": "rejected",
            "keptBranch": rejected.kept_branch,
        }))?;
    } else {
        output::line(&super::decide::rejected_line(&rejected))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands stop ID`; a session already stopped is not an error (the stop happened).
pub async fn stop(args: IdArgs) -> Result<ExitCode> {
    let (runner, id) = runner_and(&args.id).await?;
    let already = runner.session(&id).await?.state == SessionState::Stopped;
    if !already {
        runner.stop(&id).await?;
    }
    if args.json {
        output::json_line(&runner.session(&id).await?)?;
    } else {
        let was = if already {
            "already stopped"
        } else {
            "stopped"
        };
        output::line(&format!(
            "{was}. Resume with: codehands resume {}  or throw it away: codehands reject {}",
            id.short(),
            id.short()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands recover`.
pub async fn recover(args: JsonArgs) -> Result<ExitCode> {
    let report = super::runner()?.recover().await?;
    if args.json {
        output::json_line(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    output::line(&format!(
        "failed {} interrupted session(s)",
        report.failed.len()
    ))?;
    for id in &report.failed {
        output::line(&format!("  failed {id}"))?;
    }
    for branch in &report.kept_branches {
        output::line(&format!(
            "  kept branch {branch} (the agent committed to it)"
        ))?;
    }
    for path in &report.removed_worktrees {
        output::line(&format!("  removed leftover worktree {}", path.display()))?;
    }
    for id in &report.adopted {
        output::line(&format!(
            "  supervising again {id}: its agent was still running"
        ))?;
    }
    for id in &report.finished {
        output::line(&format!(
            "  finished {id} from its agent's output: it ended while nothing watched"
        ))?;
    }
    for id in &report.resumed_workflows {
        output::line(&format!(
            "  drove the workflow of {id} on to its end: its driver had died between two phases"
        ))?;
    }
    for e in report.cleanup_errors.iter().chain(&report.unreadable) {
        output::line(&format!(
            "  could not clean {}: {}",
            e.path.display(),
            e.message
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
