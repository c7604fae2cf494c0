//! Commands on existing sessions: diff, approve, reject, stop, sessions, recover.
//! Each works on a session started by any codehands process.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use runner_core::{Result, Runner, SessionId};

use super::output;
use super::view;

/// A session id, and `--json`.
#[derive(Debug, Args)]
pub struct IdArgs {
    /// The session.
    #[arg(value_parser = super::session_id)]
    id: SessionId,
    /// Print contract JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `codehands diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The session.
    #[arg(value_parser = super::session_id)]
    id: SessionId,
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
    /// The session.
    #[arg(value_parser = super::session_id)]
    id: SessionId,
    /// The commit message (default: the prompt's first line).
    #[arg(short, long)]
    message: Option<String>,
    /// Print the ApproveResult as JSON.
    #[arg(long)]
    json: bool,
}

/// Just `--json`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print contract JSON.
    #[arg(long)]
    json: bool,
}

/// `codehands diff ID`.
pub async fn diff(args: DiffArgs) -> Result<ExitCode> {
    let diff = super::runner()?.diff(&args.id).await?;
    if args.json {
        output::json_line(&diff)?;
    } else {
        if !args.stat {
            // Piped, the patch stays exact (`git apply` takes it); on a terminal, the
            // agent's file contents are shown, never obeyed.
            if std::io::stdout().is_terminal() {
                print!("{}", view::visible(&diff.patch, true));
            } else {
                print!("{}", diff.patch);
            }
        }
        output::line(&view::stat_table(&diff.stat))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands approve ID -m MSG`.
pub async fn approve(args: ApproveArgs) -> Result<ExitCode> {
    let approved = super::runner()?
        .approve(&args.id, args.message.as_deref().unwrap_or(""))
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

/// `codehands reject ID`.
pub async fn reject(args: IdArgs) -> Result<ExitCode> {
    super::runner()?.reject(&args.id).await?;
    if args.json {
        output::json_line(&serde_json::json!({ "sessionId": args.id, "state": "rejected" }))?;
    } else {
        output::line("rejected: the worktree and the branch are gone")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands stop ID`.
pub async fn stop(args: IdArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    runner.stop(&args.id).await?;
    if args.json {
        output::json_line(&runner.session(&args.id).await?)?;
    } else {
        output::line(&format!(
            "stopped. Resume with: codehands resume {}",
            args.id
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands sessions`.
pub async fn list(args: ListArgs) -> Result<ExitCode> {
    let sessions = super::runner()?.sessions().await?;
    if args.json {
        output::json_line(&sessions)?;
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        output::line("no sessions")?;
    }
    for s in sessions {
        output::line(&format!(
            "{}  {:<17}  {:<11}  {}  {}",
            s.session_id, s.state, s.agent, s.created_at, s.branch
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `codehands recover`.
pub async fn recover(args: ListArgs) -> Result<ExitCode> {
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
