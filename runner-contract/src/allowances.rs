//! What a person's settings allow one session beyond the defaults.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the person's settings allow one session beyond the defaults: read by the facade from
/// their own config and from the repository's settings file at the checkout's HEAD (never
/// from the worktree, which the agent writes), then kept on the session's record so every
/// turn of it runs alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Allowances {
    /// Folders and files of this machine the box binds read-only at their own path
    /// (absolute: the settings' `~` is expanded when they are read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub box_read: Vec<PathBuf>,
    /// Tool rules the agent may use without asking, in the `Tool(specifier)` rule syntax
    /// (`Bash(cargo test:*)`); an agent with no such rules ignores them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_allow: Vec<String>,
    /// Tool rules the agent is refused, in the same syntax; a refusal wins over an allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_deny: Vec<String>,
    /// The image a remote box runs in (`--image`, `[box] image`): the person's own, with
    /// codehands' init added at run time (docs/remote-box.md, "The repo's own image"). `None`:
    /// the repository's `.devcontainer/devcontainer.json` when it has one, else codehands' own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub box_image: Option<String>,
}

impl Allowances {
    /// Whether nothing is allowed beyond the defaults (records leave it out).
    pub fn is_empty(&self) -> bool {
        self.box_read.is_empty()
            && self.agent_allow.is_empty()
            && self.agent_deny.is_empty()
            && self.box_image.is_none()
    }
}

impl Allowances {
    /// Both sets together, each entry once (this one's first).
    pub fn merged(mut self, other: Allowances) -> Allowances {
        fn add<T: PartialEq>(to: &mut Vec<T>, from: Vec<T>) {
            for item in from {
                if !to.contains(&item) {
                    to.push(item);
                }
            }
        }
        add(&mut self.box_read, other.box_read);
        add(&mut self.agent_allow, other.agent_allow);
        add(&mut self.agent_deny, other.agent_deny);
        self.box_image = self.box_image.or(other.box_image);
        self
    }
}

/// Where a runner finds what the settings allow a session in a repository: the facade's
/// reader of the person's config and the repository's settings file (`codehands::settings`).
/// An error refuses the start before anything is made.
#[derive(Clone)]
pub struct AllowancesSource(pub std::sync::Arc<LoadAllowances>);

/// The function behind an [`AllowancesSource`]: what the settings allow in a repository.
pub type LoadAllowances = dyn Fn(&std::path::Path) -> crate::Result<Allowances> + Send + Sync;

impl AllowancesSource {
    /// What the settings allow a session in `repo`.
    pub fn load(&self, repo: &std::path::Path) -> crate::Result<Allowances> {
        (self.0)(repo)
    }
}

impl std::fmt::Debug for AllowancesSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AllowancesSource(..)")
    }
}

/// An image reference (`Allowances::box_image`, `--image`) as the Docker CLI takes one (`node:22`,
/// `registry.example.com:5000/team/dev@sha256:…`), or why not: the engine is asked for it by
/// name, so nothing else may ride along (a flag, a space, a control character).
pub fn check_image_name(image: &str) -> std::result::Result<(), String> {
    let plain = !image.is_empty()
        && image.len() <= 255
        && !image.starts_with(['-', '.', '/', ':', '@'])
        && image
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "{image:?} is not an image name: write it as `docker pull` takes it (\"node:22\", \"registry.example.com/team/dev:3\")"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_each_entry_once_in_order() {
        let one = Allowances {
            box_read: vec!["/a".into(), "/b".into()],
            agent_allow: vec!["Bash(ls:*)".into()],
            agent_deny: Vec::new(),
            box_image: None,
        };
        let two = Allowances {
            box_read: vec!["/b".into(), "/c".into()],
            agent_allow: Vec::new(),
            agent_deny: vec!["Bash(curl:*)".into()],
            box_image: Some("node:22".into()),
        };
        let both = one.merged(two);
        assert_eq!(
            both.box_read,
            ["/a", "/b", "/c"].map(std::path::PathBuf::from)
        );
        assert_eq!(both.agent_allow, ["Bash(ls:*)"]);
        assert_eq!(both.agent_deny, ["Bash(curl:*)"]);
        assert_eq!(both.box_image.as_deref(), Some("node:22"));
        assert!(!both.is_empty());
        assert!(Allowances::default().is_empty());
    }
}
