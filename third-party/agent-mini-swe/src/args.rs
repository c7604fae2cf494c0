//! The arguments, environment and stdin of one mini-swe-agent run.
//!
//! `mini` reads its task from `-t TEXT` or from an interactive prompt, never from
//! stdin; but every `-c` it is given is a YAML file whose keys merge into its
//! config, `run.task` among them. So the run's own settings (the task, the model,
//! the cost limit) go on stdin as one YAML line, read through the install's
//! `task.yaml`, a link to `/dev/stdin`. Nothing a caller wrote reaches argv: the
//! arguments are fixed flags and the install's paths.
//!
//! The YAML line is a JSON object (JSON is YAML) in which every character outside
//! printable ASCII is escaped (`\xNN`, `\uNNNN`, `\UNNNNNNNN`): PyYAML refuses some
//! characters raw (DEL, U+2028 …) and takes them all escaped, so any prompt arrives
//! exactly as written. The task is rendered into mini's prompt template as a value,
//! so `{{ … }}` in it stays text.

use std::ffi::OsString;
use std::path::Path;

use runner_contract::{AgentRequest, Error, ErrorKind, Invocation, Result, StdinClose};
use serde_json::json;

use crate::install;

/// The variable naming mini's default model (`provider/model`), read by mini itself.
pub(crate) const MODEL_VAR: &str = "MSWEA_MODEL_NAME";

/// Variables set for every run, after the provider's.
const FIXED_ENV: &[(&str, &str)] = &[
    // mini asks for a model and keys on its first run unless told it is configured.
    ("MSWEA_CONFIGURED", "true"),
    // No version banner on stdout.
    ("MSWEA_SILENT_STARTUP", "1"),
    // A model litellm has no price for costs $0 instead of ending the run.
    ("MSWEA_COST_TRACKING", "ignore_errors"),
    // litellm fetches its price list from the network at start unless told not to.
    ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
    // Prints reach stdout in the order they were made, between the trajectory's writes.
    ("PYTHONUNBUFFERED", "1"),
    // mini's console wraps at 80 columns when stdout is not a terminal.
    ("COLUMNS", "4096"),
    // A crash prints Python's plain traceback on stderr, not a panel as wide as COLUMNS.
    ("TYPER_STANDARD_TRACEBACK", "1"),
];

/// What the task says before the repo notes, when there are notes.
const NOTES_HEADING: &str = "Notes about this repository from earlier sessions:";

/// The whole invocation of one run.
pub(crate) fn build(
    program: &Path,
    config_dir: Option<&Path>,
    request: &AgentRequest,
) -> Result<Invocation> {
    if request.resume.is_some() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "mini-swe-agent cannot continue an earlier run: start a new session instead",
        ));
    }
    request.check()?;
    let model = model(request)?;
    let config_dir = config_dir.ok_or_else(|| {
        Error::new(
            ErrorKind::AgentUnavailable,
            format!(
                "mini-swe-agent at {} has no config folder: it reads its task from stdin through \
                 a `{}` that links to /dev/stdin; run `cargo xtask agents`, or make a folder with \
                 mini-swe-agent's `{}` and that link and give it to the agent",
                program.display(),
                install::STDIN_CONFIG,
                install::DEFAULT_CONFIG,
            ),
        )
    })?;
    let default_config = config_dir.join(install::DEFAULT_CONFIG);
    let stdin_config = config_dir.join(install::STDIN_CONFIG);
    for needed in [&default_config, &stdin_config] {
        if std::fs::symlink_metadata(needed).is_err() {
            return Err(Error::new(
                ErrorKind::AgentUnavailable,
                format!(
                    "mini-swe-agent's config folder has no {}: run `cargo xtask agents` again",
                    needed.display()
                ),
            ));
        }
    }

    let mut args: Vec<OsString> = [
        // The plain agent: no prompts, no confirmation (there is no one to answer
        // them), and nothing printed but the trajectory.
        "--agent-class",
        "default",
        // Commands run in a subshell in the worktree (mini's only local mode).
        "--environment-class",
        "local",
        "--model-class",
        "litellm",
    ]
    .map(OsString::from)
    .to_vec();
    // The default config by absolute path: a relative `-c mini.yaml` is looked up
    // in the working directory first, which is the agent's worktree.
    args.push(flag_with("--config=", &default_config));
    args.push(flag_with("--config=", &stdin_config));
    // The whole trajectory after every step, on stdout, where the parser reads it.
    args.push("--output=/dev/stdout".into());

    let mut task = request.prompt.clone();
    if let Some(notes) = request.notes.as_deref().filter(|n| !n.trim().is_empty()) {
        task.push_str("\n\n");
        task.push_str(NOTES_HEADING);
        task.push('\n');
        task.push_str(notes.trim_end());
    }
    let mut config = json!({
        "run": { "task": task },
        "agent": { "cost_limit": request.budget_usd },
    });
    if let Some(model) = model {
        config["model"] = json!({ "model_name": model });
    }

    let mut env = request.provider_env.clone();
    for (key, value) in FIXED_ENV {
        env.retain(|(k, _)| k != key);
        env.push(((*key).to_owned(), (*value).to_owned()));
    }
    Ok(Invocation {
        program: program.to_path_buf(),
        args,
        env,
        stdin: vec![yaml_line(&config)],
        // mini reads its stdin config to the end before it starts.
        close_stdin: StdinClose::AfterWrite,
    })
}

/// The model for this run: the request's, else none (mini then reads
/// `MSWEA_MODEL_NAME`, when the caller passed it), else a refusal.
fn model(request: &AgentRequest) -> Result<Option<&str>> {
    match request.model.as_deref() {
        Some(model) => {
            if model.trim().is_empty() || model.chars().any(char::is_control) {
                return Err(Error::invalid_input(format!(
                    "the model name {model:?} is empty or has control characters: pass a litellm name like \"openai/gpt-5-mini\""
                )));
            }
            Ok(Some(model))
        }
        None if request.provider_env.iter().any(|(k, _)| k == MODEL_VAR) => Ok(None),
        None => Err(Error::invalid_input(format!(
            "mini-swe-agent has no default model: pass one in litellm's naming (\"openai/gpt-5-mini\", \
             \"anthropic/claude-sonnet-4-5\"), or set {MODEL_VAR}"
        ))),
    }
}

fn flag_with(flag: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(flag);
    arg.push(path.as_os_str());
    arg
}

/// `value` as one line of YAML: JSON with everything outside printable ASCII escaped.
fn yaml_line(value: &serde_json::Value) -> String {
    let json = value.to_string();
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c as u32 {
            // serde_json already escapes control characters below 0x20, and quotes.
            0x20..=0x7e => out.push(c),
            code @ 0..=0xff => out.push_str(&format!("\\x{code:02X}")),
            code @ 0x100..=0xffff => out.push_str(&format!("\\u{code:04X}")),
            code => out.push_str(&format!("\\U{code:08X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_lines_escape_everything_but_printable_ascii() {
        let line = yaml_line(&json!({ "t": "a\"b\\c\nd\u{7f}é\u{2028}😀{{ x }}" }));
        assert_eq!(line, r#"{"t":"a\"b\\c\nd\x7F\xE9\u2028\U0001F600{{ x }}"}"#);
        assert!(line.bytes().all(|b| (0x20..0x7f).contains(&b)));
    }
}
