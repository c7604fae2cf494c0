//! After `approval.requested`: approve, reject or keep (asked on a terminal).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use clap::ValueEnum;
use runner_core::{Result, Runner, SessionId};

use super::output;
use super::run::DecideArgs;
use super::view;

/// What to do with a finished session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Then {
    /// Commit the change on its branch.
    Approve,
    /// Throw the change away.
    Reject,
    /// Decide later (`codehands approve|reject ID`).
    Keep,
}

/// Shows the diff stat, decides, and acts.
pub async fn after_approval(
    runner: &dyn Runner,
    id: SessionId,
    args: &DecideArgs,
) -> Result<ExitCode> {
    if !args.json {
        let diff = runner.diff(&id).await?;
        output::line(&view::stat_table(&diff.stat))?;
    }
    let then = match args.then {
        Some(then) => then,
        None if !args.json && output::interactive() => ask()?,
        None => Then::Keep,
    };
    match then {
        Then::Approve => {
            let message = args.message.clone().unwrap_or_default();
            let approved = runner.approve(&id, &message).await?;
            if args.json {
                output::json_line(&approved)?;
            } else {
                output::line(&format!(
                    "approved: {} on branch {}",
                    approved.commit, approved.branch
                ))?;
            }
        }
        Then::Reject => {
            runner.reject(&id).await?;
            if !args.json {
                output::line("rejected: the worktree and the branch are gone")?;
            }
        }
        Then::Keep => {
            if !args.json {
                output::line(&format!(
                    "kept. Decide later: codehands approve {id} -m \"…\"  or  codehands reject {id}"
                ))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn ask() -> Result<Then> {
    let stdin = std::io::stdin();
    loop {
        eprint!("[a]pprove, [r]eject or [k]eep? ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        if stdin.lock().read_line(&mut answer).unwrap_or(0) == 0 {
            return Ok(Then::Keep);
        }
        match answer.trim().to_lowercase().as_str() {
            "a" | "approve" => return Ok(Then::Approve),
            "r" | "reject" => return Ok(Then::Reject),
            "k" | "keep" | "" => return Ok(Then::Keep),
            _ => eprintln!("answer a, r or k"),
        }
    }
}
