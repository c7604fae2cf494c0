//! Claude Code's tool rules (`Bash`, `Bash(cargo test:*)`, `WebFetch`): the allow and deny
//! lists of a turn (ARCHITECTURE.md, "agent-claude"), and, for a refusal, the rule that would
//! allow it and where a person writes it.
//!
//! Boxed, the box is the boundary: every Bash command is allowed, as Claude Code's own
//! sandbox mode does. Unboxed, the seed's rule holds: the repo's test command (with any
//! arguments) and what the settings allow, nothing else.

use runner_contract::{AgentRequest, Error, Result};

/// The file tools every writing turn may use without asking.
const FILE_TOOLS: [&str; 5] = ["Read", "Edit", "Write", "Glob", "Grep"];

/// The allow list of a read-only turn (`AgentRequest::read_only`): reading tools only.
const READ_ONLY_TOOLS: [&str; 3] = ["Read", "Glob", "Grep"];

/// Where a person writes a tool rule: the settings files codehands reads (README.md,
/// "Settings"). The repository's file counts as committed at HEAD, never as the agent left it.
pub(crate) const SETTINGS_FILES: &str =
    "$CODEHANDS_HOME/config.toml or the repo's committed .codehands.toml";

/// Programs whose first argument is a subcommand: a refusal of `cargo build --offline`
/// suggests `Bash(cargo build:*)`, one of `curl -s URL` suggests `Bash(curl:*)`.
const WITH_SUBCOMMANDS: &[&str] = &[
    "cargo", "git", "go", "npm", "pnpm", "yarn", "bun", "npx", "make", "uv", "poetry", "pip",
    "docker", "dotnet", "mvn", "gradle", "bundle", "mix", "swift",
];

/// The `--allowedTools` list of a turn, one rule per entry.
pub(crate) fn allowed(request: &AgentRequest) -> Result<Vec<String>> {
    if request.read_only {
        return Ok(READ_ONLY_TOOLS.map(str::to_owned).to_vec());
    }
    let mut rules: Vec<String> = FILE_TOOLS.map(str::to_owned).to_vec();
    if request.tools.boxed {
        // Any command: it runs in the box, which holds whatever it does.
        rules.push("Bash".into());
    } else if let Some(command) = request
        .test_command
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        check_specifier(command).map_err(|bad| {
            Error::invalid_input(format!(
                "the test command {command:?} has {bad:?} (a parenthesis, comma or control \
                 character), which cannot go into Claude Code's allow list: use a plain command \
                 like \"npm test\""
            ))
        })?;
        // With its arguments: `cargo test two`, `npm test -- --watch=false`.
        rules.push(format!("Bash({command}:*)"));
    }
    for rule in &request.tools.allow {
        check(rule, "allow")?;
        if !rules.contains(rule) {
            rules.push(rule.clone());
        }
    }
    Ok(rules)
}

/// The `--disallowedTools` list of a turn: the settings' deny rules, boxed or not.
pub(crate) fn denied(request: &AgentRequest) -> Result<Vec<String>> {
    for rule in &request.tools.deny {
        check(rule, "deny")?;
    }
    Ok(request.tools.deny.clone())
}

/// Refuses a rule that could end early and start another (the settings check the same when
/// they are read; a library caller may build a request by hand).
fn check(rule: &str, key: &str) -> Result<()> {
    let refuse = |why: String| {
        Error::invalid_input(format!(
            "the [agent] {key} rule {rule:?} {why}: write one rule per entry, like \"Bash(cargo test:*)\""
        ))
    };
    let (tool, specifier) = match rule.split_once('(') {
        Some((tool, rest)) => (
            tool,
            Some(rest.strip_suffix(')').ok_or_else(|| {
                refuse("opens a parenthesis it does not close at its end".into())
            })?),
        ),
        None => (rule, None),
    };
    let tool_ok = tool.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !tool_ok {
        return Err(refuse("does not start with a tool name".into()));
    }
    if let Some(Err(bad)) = specifier.map(check_specifier) {
        return Err(refuse(format!("holds {bad:?} inside its parentheses")));
    }
    Ok(())
}

/// The first character that cannot stand inside a rule's parentheses, if any.
fn check_specifier(text: &str) -> std::result::Result<(), char> {
    match text
        .chars()
        .find(|c| matches!(c, '(' | ')' | ',') || c.is_control())
    {
        Some(bad) => Err(bad),
        None => Ok(()),
    }
}

/// The rule that would allow `tool` with `command` (a Bash command line, else empty):
/// `Bash(curl:*)`, `Bash(cargo build:*)`, `WebFetch`. `None` when no rule can be written
/// for it (a command whose program holds characters a rule cannot).
pub(crate) fn allow_rule_for(tool: &str, command: Option<&str>) -> Option<String> {
    let Some(command) = command.filter(|c| !c.trim().is_empty()) else {
        return Some(tool.to_owned()).filter(|t| check(t, "allow").is_ok());
    };
    // Leading variable assignments (`RUST_LOG=debug cargo test`) are not the program.
    let mut words = command
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'));
    let program = words.next()?;
    let mut prefix = program.to_owned();
    if WITH_SUBCOMMANDS.contains(&program)
        && let Some(sub) = words.next().filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                && !w.starts_with('-')
        })
    {
        prefix.push(' ');
        prefix.push_str(sub);
    }
    let rule = format!("{tool}({prefix}:*)");
    check(&rule, "allow").ok().map(|()| rule)
}

/// The deny rule among `deny` that refuses `tool` with `command`, as Claude Code matches
/// them: a bare tool name refuses every use, `Tool(prefix:*)` a command that starts with
/// the prefix, `Tool(text)` that exact command.
pub(crate) fn deny_rule_for<'a>(
    deny: &'a [String],
    tool: &str,
    command: Option<&str>,
) -> Option<&'a str> {
    let command = command.map(str::trim).unwrap_or_default();
    deny.iter()
        .map(String::as_str)
        .find(|rule| match rule.split_once('(') {
            None => *rule == tool,
            Some((name, rest)) => {
                let specifier = rest.strip_suffix(')').unwrap_or(rest);
                name == tool
                    && match specifier.strip_suffix(":*") {
                        Some(prefix) => command.starts_with(prefix.trim()),
                        None => command == specifier.trim(),
                    }
            }
        })
}

/// What a person can do about a refusal of `tool` with `command`: the deny rule to remove,
/// or the allow rule to add, and where.
pub(crate) fn advice(deny: &[String], tool: &str, command: Option<&str>) -> String {
    if let Some(rule) = deny_rule_for(deny, tool, command) {
        return format!(
            "[agent] deny = [\"{rule}\"] refuses it: remove that rule from {SETTINGS_FILES} to allow it"
        );
    }
    match allow_rule_for(tool, command) {
        Some(rule) => format!("to allow it, add [agent] allow = [\"{rule}\"] to {SETTINGS_FILES}"),
        None => format!("to allow it, add an [agent] allow rule for it to {SETTINGS_FILES}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_command_suggests_its_program_or_subcommand() {
        let rule = |c: &str| allow_rule_for("Bash", Some(c));
        assert_eq!(rule("curl -s http://x/").as_deref(), Some("Bash(curl:*)"));
        assert_eq!(
            rule("cargo build --offline").as_deref(),
            Some("Bash(cargo build:*)")
        );
        assert_eq!(rule("cargo --version").as_deref(), Some("Bash(cargo:*)"));
        assert_eq!(
            rule("RUST_LOG=1 make lint").as_deref(),
            Some("Bash(make lint:*)")
        );
        assert_eq!(rule("ls -la").as_deref(), Some("Bash(ls:*)"));
        assert_eq!(rule("f(x),y"), None);
        assert_eq!(
            allow_rule_for("WebFetch", None).as_deref(),
            Some("WebFetch")
        );
    }

    #[test]
    fn a_deny_rule_is_named_when_it_is_the_one_that_refused() {
        let deny = vec!["Bash(curl:*)".to_owned(), "WebFetch".to_owned()];
        assert_eq!(
            deny_rule_for(&deny, "Bash", Some("curl -s x")),
            Some("Bash(curl:*)")
        );
        assert_eq!(deny_rule_for(&deny, "Bash", Some("wget x")), None);
        assert_eq!(deny_rule_for(&deny, "WebFetch", None), Some("WebFetch"));
        assert!(advice(&deny, "Bash", Some("curl x")).contains("remove that rule"));
        assert!(
            advice(&deny, "Bash", Some("wget x")).contains("[agent] allow = [\"Bash(wget:*)\"]")
        );
    }

    #[test]
    fn rules_that_smuggle_in_another_are_refused() {
        for bad in [
            "Bash(ls),Bash(curl:*)",
            "Bash(ls:*",
            "1Bash",
            "",
            "Bash(a\nb)",
        ] {
            assert!(check(bad, "allow").is_err(), "{bad:?}");
        }
        for good in [
            "Bash",
            "Bash(cargo test:*)",
            "mcp__srv__tool",
            "Read(src/**)",
        ] {
            assert!(check(good, "allow").is_ok(), "{good:?}");
        }
    }
}
