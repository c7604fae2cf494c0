//! What a recording is made from.

use std::path::Path;

use model_server::Script;

/// One scenario: a repo, a request and the model's script. An agent crate lists its own in
/// `tests/it/scenarios.rs`; its fixture `tests/fixtures/<name>.jsonl` is what the real
/// program printed when run on it, so it can always be made again from the same definition.
#[derive(Clone)]
pub struct Scenario {
    /// The fixture's name: `tests/fixtures/<name>.jsonl`.
    pub name: &'static str,
    /// What it shows.
    pub about: &'static str,
    /// The prompt.
    pub prompt: &'static str,
    /// Files of the repo's first commit.
    pub files: &'static [(&'static str, &'static str)],
    /// The repo's test command, which the agent may run.
    pub test_command: Option<&'static str>,
    /// The model, in the agent's naming.
    pub model: Option<&'static str>,
    /// Repo notes.
    pub notes: Option<&'static str>,
    /// The run's budget, US dollars.
    pub budget_usd: f64,
    /// Variables for this scenario only (for example a retry count that keeps error runs
    /// short), set before the invocation's own.
    pub extra_env: &'static [(&'static str, &'static str)],
    /// Whether it needs `npm` on PATH.
    pub needs_npm: bool,
    /// How the agent's permission requests are answered, in order (`true` allows); one past
    /// the list is denied, as a run that does not ask denies it. A scenario with answers
    /// runs with `PermissionMode::Ask`.
    pub answers: &'static [bool],
    /// The model's script, given the repo's absolute path.
    pub script: fn(&Path) -> Script,
}

/// Whether `npm` runs here (scenarios with [`Scenario::needs_npm`] record nothing useful
/// without it).
pub fn npm_available() -> bool {
    std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
