//! After `approval.requested`: approve, reject or keep (asked when a person is at a
//! terminal, who may type a follow-up for the agent instead).

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use futures::StreamExt;
use runner_contract::{ApproveOptions, Result, Runner, SessionId};

use super::last_test::LastTest;
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
    /// Approve even when the agent's last test run failed (`--then approve`), or `--verify`
    /// found the tests failing or could not run them.
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

/// What [`after_approval`] came to.
#[derive(Debug)]
pub enum Decided {
    /// The session was approved, rejected or kept; the command ends with this code.
    Done(ExitCode),
    /// The person typed this follow-up for the agent instead of deciding.
    FollowUp(String),
}

/// Shows the diff stat, decides, and acts.
pub async fn after_approval(
    runner: &dyn Runner,
    id: SessionId,
    args: &DecideArgs,
) -> Result<Decided> {
    // The session awaits approval, so its stream is the log replayed, and ends.
    let logged: Vec<_> = runner.events(&id, 0).await?.collect().await;
    let last_test = LastTest::of(&logged);
    if !args.json {
        let diff = runner.diff(&id).await?;
        output::line(&view::stat_table(&diff.stat))?;
        output::line(&last_test.line())?;
    }
    let then = match args.then {
        Some(then) => then,
        None if !args.json && output::interactive() => match ask().await {
            Some(Answer::Then(then)) => then,
            Some(Answer::FollowUp(text)) => return Ok(Decided::FollowUp(text)),
            None => {
                eprintln!();
                output::line(&format!("kept (interrupted). {}", decide_later(&id)))?;
                return Ok(Decided::Done(ExitCode::from(INTERRUPTED)));
            }
        },
        None => Then::Keep,
    };
    tracing::info!(session = %id, decision = ?then, "decided");
    match then {
        Then::Approve => {
            if last_test.failed() && !args.force {
                return Err(runner_contract::Error::invalid_input(format!(
                    "not approved: the agent's {}; the change is kept. Approve anyway with \
                     --force (`codehands approve {} --force`), or send the agent a follow-up",
                    last_test.line(),
                    id.short()
                )));
            }
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
                output::line(&rejected_line(&rejected))?;
            }
        }
        Then::Keep => {
            if !args.json {
                output::line(&format!("kept. {}", decide_later(&id)))?;
            }
        }
    }
    Ok(Decided::Done(ExitCode::SUCCESS))
}

/// How to decide on a kept session later.
fn decide_later(id: &SessionId) -> String {
    let short = id.short();
    format!("Decide later: codehands approve {short} -m \"…\"  or  codehands reject {short}")
}

/// The question at the end of a run on a terminal.
pub const QUESTION: &str = "[a]pprove, [r]eject, [k]eep, or type a follow-up (Enter keeps): ";

/// The person's answer to [`QUESTION`].
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Then(Then),
    FollowUp(String),
}

/// A known word decides; any other text is a follow-up for the agent.
fn answer(line: &str) -> Answer {
    match line.trim().to_lowercase().as_str() {
        "a" | "approve" => Answer::Then(Then::Approve),
        "r" | "reject" => Answer::Then(Then::Reject),
        "k" | "keep" | "" => Answer::Then(Then::Keep),
        _ => Answer::FollowUp(line.trim().to_owned()),
    }
}

/// Asks once; `None` when the person presses Ctrl-C or input ends.
///
/// stdin is read by the one reader of the process (`keyboard.rs`), so Ctrl-C (which the
/// run's watch turned into a tokio signal, not the default "end the process") still ends
/// the question.
async fn ask() -> Option<Answer> {
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    super::keyboard::discard_typed_ahead();
    eprint!("{QUESTION}");
    let _ = std::io::stderr().flush();
    tokio::select! {
        line = super::keyboard::next_line() => line.map(|l| answer(&l)),
        _ = &mut ctrl_c => None,
    }
}

/// What a person reads after a reject.
pub fn rejected_line(rejected: &runner_contract::RejectResult) -> String {
    match &rejected.kept_branch {
        Some(branch) => format!(
            "rejected: the worktree is gone; branch {branch} is kept (the agent committed to it): \
             delete it with `git branch -D {branch}`"
        ),
        None => "rejected: the worktree and the branch are gone".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_word_decides_and_other_text_is_a_follow_up() {
        assert_eq!(answer("A\n"), Answer::Then(Then::Approve));
        assert_eq!(answer(" reject "), Answer::Then(Then::Reject));
        assert_eq!(answer(""), Answer::Then(Then::Keep));
        assert_eq!(answer("k"), Answer::Then(Then::Keep));
        assert_eq!(
            answer("  also fix the README\n"),
            Answer::FollowUp("also fix the README".into())
        );
    }
}
