//! Commands on existing sessions: diff, approve, reject, stop, recover.
//! Each works on a session started by any codehands process, named by its id or a unique
//! prefix of 8 or more characters of it (`sessions` is in `list.rs`).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use runner_core::{
    ApproveOptions, ErrorKind, LocalRunner, RejectResult, Result, Runner, SessionId, SessionState,
};

use super::output;
use super::view;

/// A session id (or a unique prefix of 8+ characters), and `--json`.
#[derive(Debug, Args)]
pub struct IdArgs {
    /// The session: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// Print contract JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `codehands diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The session: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
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
    /// Print the ApproveResult as JSON.
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
fn runner_and(text: &str) -> Result<(LocalRunner, SessionId)> {
    let runner = super::runner()?;
    let id = runner.resolve_session(text)?;
    Ok((runner, id))
}

/// `codehands diff ID`.
pub async fn diff(args: DiffArgs) -> Result<ExitCode> {
    let (runner, id) = runner_and(&args.id)?;
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
                output::text(&view::visible(&diff.patch, true))?;
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
async fn after_the_fact(
    runner: &LocalRunner,
    id: &SessionId,
    error: runner_core::Error,
) -> runner_core::Error {
    match runner.session(id).await {
        Ok(record) if record.state == SessionState::Approved => runner_core::Error::new(
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
    let (runner, id) = runner_and(&args.id)?;
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
    }
    Ok(ExitCode::SUCCESS)
}

/// What a person reads after a reject.
pub fn rejected_line(rejected: &RejectResult) -> String {
    match &rejected.kept_branch {
        Some(branch) => format!(
            "rejected: the worktree is gone; branch {branch} is kept (the agent committed to it): \
             delete it with `git branch -D {branch}`"
        ),
        None => "rejected: the worktree and the branch are gone".to_owned(),
    }
}

/// `codehands reject ID`.
pub async fn reject(args: IdArgs) -> Result<ExitCode> {
    let (runner, id) = runner_and(&args.id)?;
    let rejected = runner.reject_session(&id).await?;
    if args.json {
        output::json_line(&serde_json::json!({
            "sessionId": id,
            "state": "rejected",
            "keptBranch": rejected.kept_branch,
        }))?;
    } else {
        output::line(&rejected_line(&rejected))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands stop ID`; a session already stopped is not an error (the stop happened).
pub async fn stop(args: IdArgs) -> Result<ExitCode> {
    let (runner, id) = runner_and(&args.id)?;
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
    for e in report.cleanup_errors.iter().chain(&report.unreadable) {
        output::line(&format!(
            "  could not clean {}: {}",
            e.path.display(),
            e.message
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
