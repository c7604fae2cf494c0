//! The command line: the format flags this crate owns, and the checks on what callers add.
//!
//! The runner is the only one that chooses how Claude reads and prints (stream-json both
//! ways) and which conversation it resumes, because the transport depends on it; a caller
//! argument naming one of those flags would change the wire format under our feet, so it
//! is refused rather than silently overridden.

use crate::error::{Error, Result};

/// The flags every invocation starts with.
const FORMAT_FLAGS: &[&str] = &[
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// Added for sessions: inputs Claude consumes come back as events, so a caller can see
/// which input (also one sent mid-turn) a turn took.
const REPLAY_FLAG: &str = "--replay-user-messages";

/// Long flags a caller may not pass: the format flags, and the ones that choose the
/// conversation (`--continue` would pick "the last one in this folder", behind the
/// caller's back of `resume_session_id`).
const OWNED_LONG: &[&str] = &[
    "--print",
    "--input-format",
    "--output-format",
    "--verbose",
    "--replay-user-messages",
    "--resume",
    "--continue",
];

/// Short forms of owned flags (`-p` print, `-r` resume, `-c` continue).
const OWNED_SHORT: &[char] = &['p', 'r', 'c'];

/// The owned flag `arg` names, if any: `--flag`, `--flag=value`, `-p`, or a cluster of
/// short flags such as `-pc`.
fn owned_flag(arg: &str) -> Option<String> {
    if let Some(long) = arg.strip_prefix("--") {
        let name = format!("--{}", long.split('=').next().unwrap_or_default());
        return OWNED_LONG.contains(&name.as_str()).then_some(name);
    }
    let cluster = arg.strip_prefix('-')?;
    if cluster.is_empty() || !cluster.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    cluster
        .chars()
        .find(|c| OWNED_SHORT.contains(c))
        .map(|c| format!("-{c}"))
}

/// Refuses caller arguments that name an owned flag or cannot reach a program.
pub(crate) fn check_caller_args(args: &[String]) -> Result<()> {
    for arg in args {
        if arg.contains('\0') {
            return Err(Error::invalid(format!(
                "the argument {arg:?} contains a NUL byte, which no program can receive"
            )));
        }
        // The one rule of the workspace this crate keeps against seed 004's pass-through:
        // codehands never bypasses Claude Code's permissions (ARCHITECTURE.md, "Security").
        if let Some(bypass) = runner_contract::bypass::find(arg) {
            return Err(Error::invalid(format!(
                "the argument {arg:?} would bypass Claude Code's permissions (`{bypass}`), which \
                 codehands never does: drop it, and allow the tools the job needs with --allowedTools"
            )));
        }
        if let Some(flag) = owned_flag(arg) {
            return Err(Error::invalid(format!(
                "the argument {arg:?} names {flag}, which the runner owns (it sets -p \
                 --input-format stream-json --output-format stream-json --verbose, \
                 --replay-user-messages for sessions, and --resume from resume_session_id): \
                 drop it; if it was the value of another flag, write that flag as \
                 --flag=value"
            )));
        }
    }
    Ok(())
}

/// Checks a resume id: Claude's session ids are UUIDs, and only a UUID can never be read
/// as a flag. Gives it back in the hyphenated form Claude prints.
pub(crate) fn check_resume_id(id: &str) -> Result<String> {
    uuid::Uuid::parse_str(id)
        .map(|uuid| uuid.hyphenated().to_string())
        .map_err(|e| {
            Error::invalid(format!(
                "the resume session id {id:?} is not a UUID ({e}): pass the session_id \
                 Claude printed (Session::session_id, or the result's session_id)"
            ))
        })
}

/// Which kind of process the arguments are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One prompt, then stdin is closed.
    Job,
    /// Inputs over time, replayed as they are consumed.
    Session,
}

/// The whole argv: owned flags first, then the caller's (already checked) arguments.
pub(crate) fn argv(mode: Mode, resume: Option<&str>, caller: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = FORMAT_FLAGS.iter().map(|s| (*s).to_owned()).collect();
    if mode == Mode::Session {
        argv.push(REPLAY_FLAG.into());
    }
    if let Some(id) = resume {
        argv.push("--resume".into());
        argv.push(id.into());
    }
    argv.extend(caller.iter().cloned());
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(arg: &str) -> bool {
        check_caller_args(&[arg.to_owned()]).is_err()
    }

    #[test]
    fn a_permission_bypass_is_refused() {
        for arg in [
            "--dangerously-skip-permissions",
            "--allow-dangerously-skip-permissions",
            "--permission-mode=bypassPermissions",
            "bypassPermissions",
        ] {
            let error = check_caller_args(&[arg.to_owned()]).unwrap_err();
            assert!(error.to_string().contains("bypass"), "{arg}: {error}");
        }
        assert!(!refused("--permission-mode=acceptEdits"));
    }

    #[test]
    fn debug_output_names_the_variables_but_never_their_values() {
        let defaults = crate::Defaults::default().env("ANTHROPIC_API_KEY", "sk-ant-secret-value");
        let text = format!("{defaults:?}");
        assert!(text.contains("ANTHROPIC_API_KEY=[redacted]"), "{text}");
        assert!(!text.contains("sk-ant-secret-value"), "{text}");
    }

    #[test]
    fn owned_flags_are_refused_in_every_spelling() {
        for arg in [
            "-p",
            "--print",
            "--input-format",
            "--input-format=text",
            "--output-format=json",
            "--verbose",
            "--replay-user-messages",
            "--resume",
            "--resume=0b7d5f1e-7a1c-4c5e-9d55-1d2c3b4a5f60",
            "-r",
            "--continue",
            "-c",
            "-pc",
        ] {
            assert!(refused(arg), "{arg} is refused");
        }
    }

    #[test]
    fn other_arguments_pass_through() {
        for arg in [
            "--model",
            "claude-sonnet-4-5",
            "--model=opus",
            "--permission-mode",
            "--max-turns=3",
            "-d",
            "-5",
            "-p is only text here",
            "--",
            "--session-id",
        ] {
            assert!(!refused(arg), "{arg} passes");
        }
    }

    #[test]
    fn a_refusal_says_what_to_do() {
        let message = check_caller_args(&["--output-format".into()])
            .unwrap_err()
            .to_string();
        assert!(message.contains("--output-format") && message.contains("drop it"));
    }

    #[test]
    fn resume_ids_must_be_uuids() {
        assert!(check_resume_id("--dangerously-skip-permissions").is_err());
        assert!(check_resume_id("").is_err());
        assert_eq!(
            check_resume_id("0B7D5F1E7A1C4C5E9D551D2C3B4A5F60").unwrap(),
            "0b7d5f1e-7a1c-4c5e-9d55-1d2c3b4a5f60"
        );
    }

    #[test]
    fn owned_flags_come_first_then_the_callers() {
        let caller = vec!["--model".to_owned(), "m".to_owned()];
        assert_eq!(
            argv(Mode::Session, Some("id"), &caller).join(" "),
            "-p --input-format stream-json --output-format stream-json --verbose \
             --replay-user-messages --resume id --model m"
        );
        assert_eq!(
            argv(Mode::Job, None, &[]).join(" "),
            "-p --input-format stream-json --output-format stream-json --verbose"
        );
    }
}
