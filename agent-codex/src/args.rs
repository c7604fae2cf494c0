//! The arguments, environment and stdin of one Codex run (`codex exec --json`).
//!
//! Every value that comes from a caller (the base URL, the model) goes into
//! `-c key=value` overrides only as a TOML string this file quotes itself, so no
//! caller text can add a key of its own. The notes and the prompt go on stdin (`-`).

use std::ffi::OsString;
use std::path::PathBuf;

use runner_contract::{AgentRequest, Error, Invocation, Result, StdinClose};

/// The model provider the adapter defines when the run names its own base URL.
const PROVIDER_NAME: &str = "codehands";

/// The variable holding the provider's base URL and the one holding its key.
pub(crate) const BASE_URL_VAR: &str = "OPENAI_BASE_URL";
pub(crate) const API_KEY_VAR: &str = "OPENAI_API_KEY";

/// The whole invocation of one run.
pub(crate) fn build(program: PathBuf, request: &AgentRequest) -> Result<Invocation> {
    request.check()?;
    let prompt = request.prompt.as_str();

    let mut args: Vec<OsString> = vec!["exec".into()];
    let thread = match &request.resume {
        Some(from) => {
            let id = check_thread_id(&from.agent_session_id)?;
            args.push("resume".into());
            Some(id)
        }
        None => None,
    };
    args.push("--json".into());
    // The folder is codehands' own worktree, which on a remote box holds no `.git` (only the
    // files travel): Codex's check that it runs in a repository guards a person's random
    // folder, not this one.
    args.push("--skip-git-repo-check".into());
    // A read-only turn (a workflow's plan or review) runs in Codex's read-only sandbox:
    // its commands may read, and nothing writes the worktree.
    let sandbox = if request.read_only {
        "read-only"
    } else {
        "workspace-write"
    };
    if thread.is_none() {
        // `exec resume` has no `--sandbox`; the config key below says the same there.
        args.extend(["--sandbox", sandbox].map(OsString::from));
    }
    let mut config: Vec<(String, String)> = vec![
        ("sandbox_mode".into(), toml_string(sandbox)),
        // No one answers a prompt in a headless run: a command that needs more than
        // the sandbox allows fails instead of waiting.
        ("approval_policy".into(), toml_string("never")),
    ];
    if let Some(model) = &request.model {
        if model.trim().is_empty() || model.chars().any(char::is_control) {
            return Err(Error::invalid_input(format!(
                "the model name {model:?} is empty or has control characters: pass a name like \"gpt-5.1-codex\""
            )));
        }
        // `--flag=value` keeps a name that starts with `-` from being read as a flag.
        args.push(format!("--model={model}").into());
    }
    if let Some((_, url)) = request.provider_env.iter().find(|(k, _)| k == BASE_URL_VAR) {
        let url = check_base_url(url)?;
        let key = |field: &str| format!("model_providers.{PROVIDER_NAME}.{field}");
        config.extend([
            ("model_provider".into(), toml_string(PROVIDER_NAME)),
            (key("name"), toml_string(PROVIDER_NAME)),
            (key("base_url"), toml_string(url)),
            (key("wire_api"), toml_string("responses")),
            (key("env_key"), toml_string(API_KEY_VAR)),
        ]);
    }
    for (key, value) in config {
        args.push("-c".into());
        args.push(format!("{key}={value}").into());
    }
    // Everything after `--` is positional: the thread id and `-` (read the prompt from stdin).
    args.push("--".into());
    if let Some(id) = thread {
        args.push(id.into());
    }
    args.push("-".into());

    Ok(Invocation {
        program,
        args,
        env: request.provider_env.clone(),
        // Codex reads stdin to its end: the notes (framed as data by the runner; never on
        // argv, which every local user can read), then the prompt's lines, then stdin closes.
        stdin: stdin_text(request.notes.as_deref(), prompt)
            .split('\n')
            .map(str::to_owned)
            .collect(),
        close_stdin: StdinClose::AfterWrite,
    })
}

/// What Codex reads on stdin: the notes, if any, a blank line, then the prompt.
fn stdin_text(notes: Option<&str>, prompt: &str) -> String {
    match notes.filter(|n| !n.trim().is_empty()) {
        Some(notes) => format!("{notes}\n\n{prompt}"),
        None => prompt.to_owned(),
    }
}

/// A TOML basic string: quotes, backslashes and control characters escaped, so the
/// value parses back as exactly `text` and can never end the string early.
pub(crate) fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A thread id Codex printed is a UUID; anything else (a path, a flag) is refused.
fn check_thread_id(id: &str) -> Result<&str> {
    let hex_groups = [8, 4, 4, 4, 12];
    let parts: Vec<&str> = id.split('-').collect();
    let ok = parts.len() == hex_groups.len()
        && parts
            .iter()
            .zip(hex_groups)
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(id)
    } else {
        Err(Error::invalid_input(format!(
            "cannot resume Codex thread {id:?}: it is not a thread id (a UUID) as Codex prints in thread.started"
        )))
    }
}

/// The provider's base URL must be an http(s) URL without spaces or control characters.
fn check_base_url(url: &str) -> Result<&str> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    if !scheme_ok || url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(Error::invalid_input(format!(
            "{BASE_URL_VAR} is {url:?}, which is not an http(s) URL: set it like \"http://127.0.0.1:8080/v1\" or unset it to use Codex's own settings"
        )));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_strings_escape_what_could_end_them() {
        assert_eq!(toml_string("plain"), "\"plain\"");
        assert_eq!(toml_string("a\"b\\c\nd\u{7}"), "\"a\\\"b\\\\c\\nd\\u0007\"");
        assert_eq!(
            toml_string("x\" \nmodel_provider=\"evil"),
            "\"x\\\" \\nmodel_provider=\\\"evil\""
        );
    }

    #[test]
    fn thread_ids_are_uuids() {
        assert!(check_thread_id("019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b").is_ok());
        for bad in [
            "",
            "--last",
            "../x",
            "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5",
            "a b",
        ] {
            assert!(check_thread_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn base_urls_are_http() {
        assert!(check_base_url("http://127.0.0.1:1/v1").is_ok());
        for bad in ["ftp://x", "http://a b", "http://x\n", "127.0.0.1:1"] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
    }
}
