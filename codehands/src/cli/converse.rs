//! Talking to a session after it started: `codehands send` (a follow-up turn, or a message
//! that steers the turn in flight), `codehands answer` (a permission request) and
//! `codehands interrupt`. Each works on a session started by any codehands process.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use runner_contract::{PermissionAnswer, Result, Runner, Sent};

use super::decide::DecideArgs;
use super::output;

/// Arguments of `codehands send`.
#[derive(Debug, Args)]
pub struct SendArgs {
    /// The session: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// What to tell the agent; always text, even when it starts with `--` (put `--` before it).
    #[arg(allow_hyphen_values = true)]
    text: String,
    /// The session's isolation (`box` or `none`): refused unless it is the one the session
    /// runs with, since every turn of a session runs alike.
    #[arg(long, value_name = "box|none", value_parser = super::isolation)]
    isolation: Option<runner_contract::Isolation>,
    #[command(flatten)]
    decide: DecideArgs,
}

/// `codehands send ID TEXT`: a session awaiting approval gets a follow-up turn in the same
/// worktree, watched and decided on like `run`; a running one gets the text mid-turn.
pub async fn send(args: SendArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    let id = runner.resolve_session(&args.id).await?;
    super::check_isolation(&runner, &id, args.isolation).await?;
    match runner.send(&id, args.text).await? {
        Sent::FollowUp(events) => {
            super::logging::log_run_to(runner.home(), &id);
            tracing::info!(session = %id, "follow-up");
            super::run::watch_and_decide(&runner, id, events, &args.decide).await
        }
        Sent::Steered => {
            tracing::info!(session = %id, "steered");
            if args.decide.json {
                output::json_line(&serde_json::json!({ "sessionId": id, "steered": true }))?;
            } else {
                output::line(&format!("sent to the running turn of {id}"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// How to answer a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Decision {
    /// Let the tool run (with `--input`: with that input instead).
    Allow,
    /// Refuse it (with `--message`: telling the agent why).
    Deny,
}

/// Arguments of `codehands answer`.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The session: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// The request: the `requestId` of its `permission.requested` event.
    request: String,
    /// allow or deny.
    #[arg(value_enum)]
    decision: Decision,
    /// With deny: what the agent is told.
    #[arg(short, long)]
    message: Option<String>,
    /// With allow: the tool's input to run it with instead, as a JSON object.
    #[arg(long, value_name = "JSON")]
    input: Option<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

/// A mistake in the arguments, said the way clap says its own (exit code 2).
fn usage_error(message: String) -> ExitCode {
    let mut command = super::command();
    let command = command
        .find_subcommand_mut("answer")
        .expect("answer is a subcommand");
    let _ = command
        .clone()
        .bin_name("codehands answer")
        .error(clap::error::ErrorKind::ArgumentConflict, message)
        .print();
    ExitCode::from(2)
}

/// The answer the arguments give, or what is wrong with them.
fn answer_of(args: &AnswerArgs) -> std::result::Result<PermissionAnswer, String> {
    match args.decision {
        Decision::Allow => {
            if args.message.is_some() {
                return Err(
                    "--message goes with deny (it tells the agent why it may not): \
                     leave it out to allow"
                        .to_owned(),
                );
            }
            let updated_input = args.input.as_deref().map(input_object).transpose()?;
            Ok(PermissionAnswer::Allow { updated_input })
        }
        Decision::Deny => {
            if args.input.is_some() {
                return Err("--input goes with allow (the input to run the tool with): \
                     leave it out to deny"
                    .to_owned());
            }
            Ok(PermissionAnswer::Deny {
                message: args.message.clone(),
            })
        }
    }
}

/// `--input`: the tool's whole input, a JSON object.
fn input_object(text: &str) -> std::result::Result<serde_json::Value, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "--input is not JSON ({e}): give the tool's whole input as a JSON object, for \
             example '{{\"command\":\"ls\"}}'"
        )
    })?;
    if !value.is_object() {
        let kind = match value {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "a boolean",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Array(_) => "an array",
            serde_json::Value::Object(_) => unreachable!(),
        };
        return Err(format!(
            "--input is {kind}, not a JSON object: give the tool's whole input as an object, \
             for example '{{\"command\":\"ls\"}}'"
        ));
    }
    Ok(value)
}

/// `codehands answer ID REQUEST allow|deny`: returns once the session's log says the
/// request was answered.
pub async fn answer(args: AnswerArgs) -> Result<ExitCode> {
    let answer = match answer_of(&args) {
        Ok(answer) => answer,
        Err(message) => return Ok(usage_error(message)),
    };
    let runner = super::runner()?;
    let id = runner.resolve_session(&args.id).await?;
    runner.answer(&id, &args.request, answer).await?;
    let outcome = match args.decision {
        Decision::Allow => "allowed",
        Decision::Deny => "denied",
    };
    tracing::info!(session = %id, request = %args.request, outcome, "answered");
    if args.json {
        output::json_line(&serde_json::json!({
            "sessionId": id,
            "requestId": args.request,
            "outcome": outcome,
        }))?;
    } else {
        output::line(&format!(
            "{outcome}: request {} of session {}",
            runner_contract::present::visible(&args.request, false),
            id.short()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `codehands interrupt`.
#[derive(Debug, Args)]
pub struct InterruptArgs {
    /// The session: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// Print `{"sessionId": …, "interrupted": true}`.
    #[arg(long)]
    json: bool,
}

/// `codehands interrupt ID`: ends the running turn, not the session; it then awaits
/// approval with the change so far, and a follow-up (`send`) can redirect the agent.
pub async fn interrupt(args: InterruptArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    let id = runner.resolve_session(&args.id).await?;
    runner.interrupt(&id).await?;
    tracing::info!(session = %id, "interrupted");
    if args.json {
        output::json_line(&serde_json::json!({ "sessionId": id, "interrupted": true }))?;
    } else {
        let short = id.short();
        output::line(&format!(
            "interrupted the turn of {id}: it ends with the change so far, which then awaits \
             approval; redirect the agent with `codehands send {short} \"…\"`"
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
