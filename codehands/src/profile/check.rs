//! The checks a profile file must pass before it becomes an agent.

use std::path::{Path, PathBuf};

use runner_contract::{AgentCapabilities, AgentName, Result};

use super::{ParserKind, Profile, ProfileFile, PromptVia, refuse};

/// The placeholders an argument may be, whole.
pub(super) const PLACEHOLDERS: &[&str] = &["{prompt}", "{model}", "{worktree}"];

pub(super) fn profile(path: &Path, file: ProfileFile, expected: Option<&str>) -> Result<Profile> {
    let name = match (file.name.as_deref(), expected) {
        (Some(inner), Some(stem)) if inner != stem => {
            return Err(refuse(
                path,
                &format!(
                    "key `name` is `{inner}` but the file is named `{stem}.toml`: make them the same"
                ),
            ));
        }
        (Some(name), _) | (None, Some(name)) => name,
        (None, None) => {
            return Err(refuse(
                path,
                "key `name` is missing: add `name = \"my-agent\"`",
            ));
        }
    };
    let name = AgentName::parse(name).map_err(|e| refuse(path, &format!("key `name`: {e}")))?;
    let program = program(path, &file.program)?;
    for (i, arg) in file.args.iter().enumerate() {
        check_arg(path, &format!("args[{i}]"), arg)?;
    }
    if let Some(version_args) = &file.version_args {
        for (i, arg) in version_args.iter().enumerate() {
            if arg.contains('{') {
                return Err(refuse(
                    path,
                    &format!(
                        "key `version-args[{i}]` holds a placeholder: the version call takes none"
                    ),
                ));
            }
        }
    }
    let (prompt, parser) = how_it_talks(path, &file)?;
    match (&file.json_lines, parser) {
        (Some(map), ParserKind::JsonLines) => map
            .check()
            .map_err(|why| refuse(path, &format!("table `json-lines` {why}")))?,
        (None, ParserKind::JsonLines) => {
            return Err(refuse(
                path,
                "`parser = \"json-lines\"` needs a `[json-lines]` table saying which field names \
                 what a line is (`kind`) and how lines map to messages, commands and the result \
                 (docs/adding-an-agent.md shows one)",
            ));
        }
        (Some(_), _) => {
            return Err(refuse(
                path,
                "table `json-lines` is read only with `parser = \"json-lines\"`: set that parser, or remove the table",
            ));
        }
        (None, _) => {}
    }
    check_prompt_placement(path, prompt, &file.args)?;
    let provider = file.provider;
    let vars = [
        ("provider.base-url-env", provider.base_url_env.as_deref()),
        ("provider.api-key-env", provider.api_key_env.as_deref()),
        (
            "provider.config-dir-env",
            provider.config_dir_env.as_deref(),
        ),
        ("provider.model-env", provider.model_env.as_deref()),
    ];
    for (key, value) in vars {
        if let Some(value) = value {
            check_var(path, key, value)?;
        }
    }
    for (i, value) in provider.pass.iter().enumerate() {
        check_var(path, &format!("provider.pass[{i}]"), value)?;
    }
    for (i, value) in file.network.allow.iter().enumerate() {
        check_host_port(path, &format!("network.allow[{i}]"), value)?;
    }
    Ok(Profile {
        name,
        description: file.description,
        path: path.to_path_buf(),
        program,
        args: file.args,
        prompt,
        parser,
        version_args: file.version_args,
        provider,
        capabilities: AgentCapabilities {
            resume: false,
            budget: file.capabilities.budget,
            ..AgentCapabilities::default()
        },
        network: file.network,
        json_lines: file.json_lines,
    })
}

/// `host:port`: a host name or address (IPv6 in brackets) and a port number.
fn check_host_port(path: &Path, key: &str, value: &str) -> Result<()> {
    let (host, port) = match value.strip_prefix('[') {
        Some(rest) => rest.split_once("]:").unwrap_or(("", "")),
        None => value.rsplit_once(':').unwrap_or(("", "")),
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    if host_ok && port.parse::<u16>().is_ok_and(|p| p > 0) {
        return Ok(());
    }
    Err(refuse(
        path,
        &format!(
            "key `{key}` is {value:?}, which is not host:port: write it like \"api.example.com:443\""
        ),
    ))
}

/// How the program gets its prompt and which parser reads it: a parser of its lines, or a
/// protocol, never both.
fn how_it_talks(path: &Path, file: &ProfileFile) -> Result<(PromptVia, ParserKind)> {
    match (file.protocol, file.parser) {
        (Some(super::ProtocolKind::Acp), None) => {
            if file.prompt.is_some() {
                return Err(refuse(
                    path,
                    "key `prompt`: the prompt reaches an ACP agent through the protocol: remove `prompt`",
                ));
            }
            if file.args.iter().any(|a| a == "{prompt}") {
                return Err(refuse(
                    path,
                    "key `args` holds {prompt}: the prompt reaches an ACP agent through the protocol: remove it",
                ));
            }
            if file.capabilities.budget {
                return Err(refuse(
                    path,
                    "key `capabilities.budget`: the Agent Client Protocol has no budget: remove it",
                ));
            }
            Ok((PromptVia::Stdin, ParserKind::Acp))
        }
        (Some(_), Some(_)) => Err(refuse(
            path,
            "keys `protocol` and `parser` together: an agent that speaks a protocol needs no parser: remove `parser`",
        )),
        (None, Some(parser)) => Ok((file.prompt.unwrap_or_default(), parser)),
        (None, None) => Err(refuse(
            path,
            "key `parser` is missing: add `parser = \"text\"` (or \"json-lines\", \"claude-stream-json\", \"codex-jsonl\"), \
             or `protocol = \"acp\"` for an agent that speaks the Agent Client Protocol",
        )),
    }
}

/// A bare name (looked up on PATH) or an absolute path: never a relative path, which would
/// be read from the worktree the agent writes.
fn program(path: &Path, program: &str) -> Result<PathBuf> {
    if program.trim().is_empty() {
        return Err(refuse(
            path,
            "key `program` is empty: name the agent's program",
        ));
    }
    if program.contains('{') {
        return Err(refuse(
            path,
            "key `program` holds a placeholder: name a fixed program",
        ));
    }
    let program = PathBuf::from(program);
    if program.components().count() > 1 && !program.is_absolute() {
        return Err(refuse(
            path,
            &format!(
                "key `program` is the relative path `{}`: give an absolute path, or a bare name looked up on PATH",
                program.display()
            ),
        ));
    }
    Ok(program)
}

fn check_arg(path: &Path, key: &str, arg: &str) -> Result<()> {
    // The workspace's one list (runner_contract::bypass), compared without case.
    if let Some(flag) = runner_contract::bypass::find(arg) {
        return Err(refuse(
            path,
            &format!(
                "key `{key}` is `{arg}`, which turns off the agent's permission checks (`{flag}`): \
                 remove it; codehands isolates the run in a worktree but never runs an agent unchecked"
            ),
        ));
    }
    if PLACEHOLDERS.contains(&arg) {
        return Ok(());
    }
    if let Some(placeholder) = PLACEHOLDERS.iter().find(|p| arg.contains(*p)) {
        return Err(refuse(
            path,
            &format!(
                "key `{key}` is `{arg}`: {placeholder} is replaced only when it is a whole element; \
                 give it as an element of its own (for example [\"--flag\", \"{placeholder}\"])"
            ),
        ));
    }
    if let (Some(open), Some(close)) = (arg.find('{'), arg.rfind('}'))
        && open < close
        && arg[open + 1..close]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(refuse(
            path,
            &format!(
                "key `{key}` is `{arg}`, an unknown placeholder: the placeholders are {}",
                PLACEHOLDERS.join(", ")
            ),
        ));
    }
    Ok(())
}

/// The prompt goes where the profile says, once, and never where it could be read as a flag.
fn check_prompt_placement(path: &Path, via: PromptVia, args: &[String]) -> Result<()> {
    let at: Vec<usize> = (0..args.len()).filter(|&i| args[i] == "{prompt}").collect();
    match (via, at.as_slice()) {
        (PromptVia::Stdin, []) => Ok(()),
        (PromptVia::Stdin, _) => Err(refuse(
            path,
            "key `args` holds {prompt} but `prompt` is \"stdin\": set `prompt = \"argument\"`, or remove {prompt}",
        )),
        (PromptVia::Argument, []) => Err(refuse(
            path,
            "key `prompt` is \"argument\" but `args` has no element {prompt}: add one",
        )),
        (PromptVia::Argument, [i]) => {
            let before = i.checked_sub(1).map(|j| args[j].as_str());
            if before.is_some_and(|b| b.starts_with('-')) {
                Ok(())
            } else {
                Err(refuse(
                    path,
                    "key `args`: put `--` or the flag that takes the prompt right before {prompt}, \
                     so a prompt that starts with `-` is never read as a flag",
                ))
            }
        }
        (PromptVia::Argument, _) => Err(refuse(
            path,
            "key `args` holds {prompt} more than once: keep one",
        )),
    }
}

fn check_var(path: &Path, key: &str, name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        return Err(refuse(
            path,
            &format!("key `{key}` is `{name}`, not a variable name: use capitals, digits and `_`"),
        ));
    }
    if runner_process::env::PASSTHROUGH.contains(&name) {
        return Err(refuse(
            path,
            &format!("key `{key}` is `{name}`, which every agent already receives: remove it"),
        ));
    }
    Ok(())
}

/// Whether `kind` can be read by this build; the error says which feature to enable.
pub(super) fn parser_in_build(kind: ParserKind) -> Result<()> {
    let (built, feature) = match kind {
        ParserKind::ClaudeStreamJson => (cfg!(feature = "claude"), "claude"),
        ParserKind::CodexJsonl => (cfg!(feature = "codex"), "codex"),
        ParserKind::Text | ParserKind::JsonLines => (true, ""),
        ParserKind::Acp => (cfg!(feature = "acp"), "acp"),
    };
    if built {
        Ok(())
    } else {
        Err(runner_contract::Error::not_in_build(
            &format!("the {kind:?} parser"),
            feature,
        ))
    }
}
