//! The arguments, environment and stdin of one Claude Code run (ARCHITECTURE.md, "Security": no permission bypass, nothing secret on argv).

use std::ffi::OsString;
use std::path::PathBuf;

use runner_contract::{
    AgentRequest, Error, Invocation, PermissionMode, Result, SessionId, StdinClose,
};

use crate::{input, rules};

/// Flags codehands sets itself (the stream-json format flags and the safety flags
/// ARCHITECTURE.md's "Security" lists), or that would widen what the agent may do or take the run out of the
/// process codehands supervises. A caller's argument naming one of them is refused.
const OWNED_FLAGS: &[&str] = &[
    "-p",
    "--print",
    "--output-format",
    "--input-format",
    "--verbose",
    "--include-partial-messages",
    "--replay-user-messages",
    "-r",
    "--resume",
    "-c",
    "--continue",
    "--fork-session",
    "--session-id",
    "--permission-mode",
    "--permission-prompts",
    "--permission-prompt-tool",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--max-budget-usd",
    "--strict-mcp-config",
    "--mcp-config",
    "--settings",
    "--setting-sources",
    "--add-dir",
    "--append-system-prompt",
    "--append-system-prompt-file",
    "--model",
    // Plugins and background or remote modes run code or leave the process we supervise.
    "--plugin-dir",
    "--plugin-url",
    "--bg",
    "--background",
    "--remote-control",
    "--cloud",
    "--teleport",
    "--desktop",
    "-w",
    "--worktree",
    // Resume needs the session on disk.
    "--no-session-persistence",
];

/// Checks a caller's extra arguments: each must be a flag (or the value right after
/// one) that codehands does not own.
pub(crate) fn check_extra_args(args: &[OsString]) -> Result<()> {
    for arg in args {
        let Some(text) = arg.to_str() else {
            return Err(Error::invalid_input(format!(
                "the Claude Code argument {arg:?} is not UTF-8: pass plain text arguments"
            )));
        };
        if let Some(bypass) = runner_contract::bypass::find(text) {
            return Err(Error::invalid_input(format!(
                "the Claude Code argument {text:?} would bypass permissions (`{bypass}`), which \
                 codehands never does: remove it, and allow the tools the task needs instead"
            )));
        }
        let name = text.split('=').next().unwrap_or(text);
        if OWNED_FLAGS.contains(&name) {
            return Err(Error::invalid_input(format!(
                "the Claude Code argument {text:?} conflicts with what codehands sets itself \
                 (output format, session, permissions, budget, model, notes): remove it and use \
                 the run's options instead"
            )));
        }
    }
    Ok(())
}

/// The whole invocation of one run.
pub(crate) fn build(
    program: PathBuf,
    extra_args: &[OsString],
    request: &AgentRequest,
) -> Result<Invocation> {
    request.check()?;
    let budget = request.budget_usd;
    let mut args: Vec<OsString> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        // Stdin is a conversation (ARCHITECTURE.md, "agent-claude"): the prompt is the first
        // user message, never on argv, where it could be read as a flag or overflow the
        // argument limit; messages written later steer the turn in flight, and each one
        // Claude Code takes in comes back on stdout, so the runner knows when every input
        // has been answered and stdin may close. (It costs about 10 ms from the answer to
        // the result line against plain-text input.)
        "--input-format",
        "stream-json",
        "--replay-user-messages",
        "--permission-mode",
        // A read-only turn (a workflow's plan or review) runs in Claude Code's plan mode,
        // which edits nothing, with only the reading tools allowed (below).
        if request.read_only {
            "plan"
        } else {
            "acceptEdits"
        },
        "--strict-mcp-config",
    ]
    .map(OsString::from)
    .to_vec();
    match request.permissions {
        // A tool that needs approval is refused and reported (`permission_denied`), so a
        // run never waits for a person who is not there.
        PermissionMode::Deny => args.extend(["--permission-prompts", "none"].map(OsString::from)),
        // It asks over stdin with a `can_use_tool` control request, which the runner turns
        // into `permission.requested` and answers with the caller's decision.
        PermissionMode::Ask => {
            args.extend(["--permission-prompt-tool", "stdio"].map(OsString::from))
        }
    }
    match &request.resume {
        Some(from) => {
            // Ours is a UUID; checking keeps an id that looks like a flag off argv.
            SessionId::parse(&from.agent_session_id).map_err(|_| {
                Error::invalid_input(format!(
                    "cannot resume Claude Code session {:?}: it is not a UUID",
                    from.agent_session_id
                ))
            })?;
            args.push("--resume".into());
            args.push(from.agent_session_id.clone().into());
        }
        None => {
            args.push("--session-id".into());
            args.push(request.session_id.to_string().into());
        }
    }
    // Boxed, any command; unboxed, the test command and the settings' rules (rules.rs).
    args.push("--allowedTools".into());
    args.push(rules::allowed(request)?.join(",").into());
    let denied = rules::denied(request)?;
    if !denied.is_empty() {
        args.push("--disallowedTools".into());
        args.push(denied.join(",").into());
    }
    // `--flag=value` keeps a value that starts with `-` from being read as a flag.
    args.push(format!("--max-budget-usd={}", budget).into());
    if let Some(model) = &request.model {
        if model.is_empty() || model.chars().any(char::is_control) {
            return Err(Error::invalid_input(format!(
                "the model name {model:?} is empty or has control characters: pass a name like \"sonnet\""
            )));
        }
        args.push(format!("--model={model}").into());
    }
    // The notes hold earlier prompts: never on argv, which every local user can read.
    // They go in through the runner's private file, or else ahead of the prompt on stdin.
    let notes = request.notes.as_deref().filter(|n| !n.trim().is_empty());
    let mut notes_on_stdin = None;
    match (&request.notes_file, notes) {
        (Some(file), _) => {
            let mut arg = OsString::from("--append-system-prompt-file=");
            arg.push(file);
            args.push(arg);
        }
        (None, Some(notes)) => notes_on_stdin = Some(notes),
        (None, None) => {}
    }
    args.extend(extra_args.iter().cloned());

    let prompt = request.prompt.as_str();

    let mut env: Vec<(String, String)> = vec![
        // No update checks, telemetry or error reports from an agent run.
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
    ];
    env.extend(request.provider_env.iter().cloned());

    let text = match notes_on_stdin {
        Some(notes) => format!("{notes}\n\n{prompt}"),
        None => prompt.to_owned(),
    };
    let mut stdin = Vec::new();
    if request.permissions == PermissionMode::Ask {
        // Without it first, Claude Code never asks over stdin.
        stdin.push(input::initialize());
    }
    // A fresh id: Claude Code keeps each message's id in the session's history, and a
    // follow-up's prompt must not carry the first one's.
    stdin.push(input::user_message(
        &uuid::Uuid::new_v4().to_string(),
        &text,
    ));
    Ok(Invocation {
        program,
        args,
        env,
        stdin,
        close_stdin: StdinClose::Conversation,
    })
}
