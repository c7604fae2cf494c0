//! The agent's environment, built from scratch from an allowlist (README's list, ARCHITECTURE.md "Security"): never a copy of the caller's.

/// Caller variables every agent receives, when set and not empty.
pub const PASSTHROUGH: &[&str] = &[
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "HOME",
];

/// Hygiene variables set for every agent: no self-update, no telemetry, no error reports,
/// in the conventions many agent CLIs honour. An agent adds its own program's spellings
/// of the same in [`runner_contract::traits::agent::Invocation::env`].
pub const HYGIENE: &[(&str, &str)] = &[
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
];

/// Builds the environment of an agent process from `caller` (the runner's own
/// environment, passed in so tests can give any):
/// [`PASSTHROUGH`], then the agent's provider variables and the extra names
/// configured by the caller (each by exact name), then [`HYGIENE`], then the
/// agent's own additions. Nothing else of `caller` gets through.
pub fn agent_env<'a>(
    caller: impl IntoIterator<Item = (String, String)>,
    provider: &[String],
    extra_names: &[String],
    additions: impl IntoIterator<Item = &'a (String, String)>,
) -> Vec<(String, String)> {
    let caller: std::collections::HashMap<String, String> = caller.into_iter().collect();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut set = |key: &str, value: String| {
        env.retain(|(k, _)| k != key);
        env.push((key.to_owned(), value));
    };
    let allowed = PASSTHROUGH
        .iter()
        .copied()
        .chain(provider.iter().map(String::as_str))
        .chain(extra_names.iter().map(String::as_str));
    for key in allowed {
        if let Some(value) = caller.get(key).filter(|v| !v.is_empty()) {
            set(key, value.clone());
        }
    }
    for (key, value) in HYGIENE {
        set(key, (*value).to_owned());
    }
    for (key, value) in additions {
        set(key, value.clone());
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller() -> Vec<(String, String)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("AWS_SECRET_ACCESS_KEY", "canary-aws"),
            ("GITHUB_TOKEN", "canary-gh"),
            ("PROVIDER_A_API_KEY", "sk-a"),
            ("PROVIDER_B_API_KEY", "sk-b"),
            ("AGENT_MAX_RETRIES", "1"),
            ("LANG", ""),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn only_the_allowlist_and_the_agents_own_provider_get_through() {
        let env = agent_env(caller(), &["PROVIDER_A_API_KEY".into()], &[], &[]);
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert!(
            keys.contains(&"PATH")
                && keys.contains(&"HOME")
                && keys.contains(&"PROVIDER_A_API_KEY")
        );
        for secret in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "PROVIDER_B_API_KEY",
            "AGENT_MAX_RETRIES",
        ] {
            assert!(!keys.contains(&secret), "{secret} leaked");
        }
        assert!(!keys.contains(&"LANG"), "empty values are not copied");
        assert!(env.contains(&("DISABLE_TELEMETRY".into(), "1".into())));
    }

    #[test]
    fn extra_variables_only_by_explicit_name() {
        let env = agent_env(caller(), &[], &["AGENT_MAX_RETRIES".into()], &[]);
        assert!(env.contains(&("AGENT_MAX_RETRIES".into(), "1".into())));
        assert!(!env.iter().any(|(k, _)| k == "PROVIDER_A_API_KEY"));
    }

    #[test]
    fn the_agents_additions_win() {
        let add = [("HOME".to_string(), "/tmp/agent-home".to_string())];
        let env = agent_env(caller(), &[], &[], &add);
        assert_eq!(env.iter().filter(|(k, _)| k == "HOME").count(), 1);
        assert!(env.contains(&("HOME".into(), "/tmp/agent-home".into())));
    }
}
