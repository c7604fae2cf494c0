//! After `approval.requested`: approve, reject or keep (asked when a person is at a terminal).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use runner_core::{ApproveOptions, LocalRunner, Result, Runner, SessionId};

use super::output;
use super::view;

/// The exit code when the person interrupts the question (Ctrl-C or end of input): the
/// shell's code for SIGINT, so a script can tell "kept on purpose" from "interrupted".
const INTERRUPTED: u8 = 130;

/// What to do once the agent has finished.
#[derive(Debug, Args)]
pub struct DecideArgs {
    /// approve, reject or keep (default: ask when stdin and stdout are terminals, keep otherwise).
    #[arg(long, value_enum)]
    pub then: Option<Then>,
    /// The commit message when approving.
    #[arg(short, long)]
    pub message: Option<String>,
    /// Approve even when `--verify` found the tests failing or could not run them.
    #[arg(long)]
    pub force: bool,
    /// Print every event as contract JSON, one per line.
    #[arg(long)]
    pub json: bool,
}

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
    runner: &LocalRunner,
    id: SessionId,
    args: &DecideArgs,
) -> Result<ExitCode> {
    if !args.json {
        let diff = runner.diff(&id).await?;
        output::line(&view::stat_table(&diff.stat))?;
    }
    let then = match args.then {
        Some(then) => then,
        None if !args.json && output::interactive() => match ask().await {
            Some(then) => then,
            None => {
                eprintln!();
                output::line(&format!("kept (interrupted). {}", decide_later(&id)))?;
                return Ok(ExitCode::from(INTERRUPTED));
            }
        },
        None => Then::Keep,
    };
    tracing::info!(session = %id, decision = ?then, "decided");
    match then {
        Then::Approve => {
            let message = args.message.clone().unwrap_or_default();
            let options = ApproveOptions { force: args.force };
            let approved = runner.approve_with(&id, &message, options).await?;
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
            let rejected = runner.reject_session(&id).await?;
            if !args.json {
                output::line(&super::sessions::rejected_line(&rejected))?;
            }
        }
        Then::Keep => {
            if !args.json {
                output::line(&format!("kept. {}", decide_later(&id)))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How to decide on a kept session later.
fn decide_later(id: &SessionId) -> String {
    let short = id.short();
    format!("Decide later: codehands approve {short} -m \"…\"  or  codehands reject {short}")
}

/// Asks until the answer is one of ours; `None` when the person presses Ctrl-C or input ends.
///
/// stdin is read on a thread of its own, so Ctrl-C (which the run's watch turned into a
/// tokio signal, not the default "end the process") still ends the question; the thread is
/// left blocked in `read_line` and ends with the process.
async fn ask() -> Option<Then> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        loop {
            let mut answer = String::new();
            let read = stdin.lock().read_line(&mut answer).unwrap_or(0);
            let done = read == 0;
            if tx.send((read > 0).then_some(answer)).is_err() || done {
                return;
            }
        }
    });
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        eprint!("[a]pprove, [r]eject or [k]eep (Enter keeps)? ");
        let _ = std::io::stderr().flush();
        let answer = tokio::select! {
            answer = rx.recv() => answer.flatten()?,
            _ = &mut ctrl_c => return None,
        };
        match answer.trim().to_lowercase().as_str() {
            "a" | "approve" => return Some(Then::Approve),
            "r" | "reject" => return Some(Then::Reject),
            "k" | "keep" | "" => return Some(Then::Keep),
            _ => eprintln!("answer a, r or k (or press Enter to keep)"),
        }
    }
}
