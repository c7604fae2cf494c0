//! Which image runs a repo's tests: picked from the repo profile through a configurable map.

use runner_contract::{Language, RepoProfile};
use serde::{Deserialize, Serialize};

/// The image `cargo xtask images` builds for Node, Python and Rust repos:
/// Debian bookworm with nodejs, npm, python3 (venv, pytest) and cargo.
pub const LOCAL_DEBIAN_IMAGE: &str = "codehands/sandbox-debian:3";
/// The image `cargo xtask images` builds for the fast cases: `FROM scratch`
/// with a static busybox.
pub const LOCAL_BUSYBOX_IMAGE: &str = "codehands/sandbox-busybox:1";

/// Which image each kind of repo gets. `{major}` in [`ImageMap::node`] is
/// replaced by the Node major version from `.nvmrc` or `engines.node`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageMap {
    /// Node repos (npm, pnpm, yarn); may contain `{major}`.
    pub node: String,
    /// The Node major version when the repo names none.
    pub node_default_major: String,
    /// Python repos (pytest).
    pub python: String,
    /// Rust repos (cargo test).
    pub rust: String,
    /// Go repos (go test).
    pub go: String,
}

impl Default for ImageMap {
    /// The official images on Docker Hub, pulled on first use when the engine can.
    fn default() -> Self {
        Self {
            node: "node:{major}-bookworm-slim".into(),
            node_default_major: "22".into(),
            python: "python:3.12-slim-bookworm".into(),
            rust: "rust:1-slim-bookworm".into(),
            go: "golang:1-bookworm".into(),
        }
    }
}

impl ImageMap {
    /// The images `cargo xtask images` builds on this machine (for engines that
    /// cannot pull). Node, Python and Rust share the Debian image, whose Node and
    /// Rust versions are Debian's (Node 18, Rust 1.63), whatever the repo asks
    /// for; Go keeps the official image, which is not built locally.
    pub fn local() -> Self {
        Self {
            node: LOCAL_DEBIAN_IMAGE.into(),
            python: LOCAL_DEBIAN_IMAGE.into(),
            rust: LOCAL_DEBIAN_IMAGE.into(),
            ..Self::default()
        }
    }

    /// The image for a profile, or `None` for a language the sandbox cannot test.
    pub fn pick(&self, profile: &RepoProfile) -> Option<String> {
        match profile.language {
            Language::Node => {
                let major = profile
                    .node_version
                    .as_deref()
                    .and_then(node_major)
                    .unwrap_or_else(|| self.node_default_major.clone());
                Some(self.node.replace("{major}", &major))
            }
            Language::Python => Some(self.python.clone()),
            Language::Rust => Some(self.rust.clone()),
            Language::Go => Some(self.go.clone()),
            Language::Unknown => None,
        }
    }
}

/// The major version in `.nvmrc` / `engines.node` text: `v20.11.1`, `>=18`,
/// `^20.0.0` and `20.x` give the first number; `lts/*` or `node` give none.
pub fn node_major(text: &str) -> Option<String> {
    let digits: String = text
        .trim()
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty()).then_some(digits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::PackageManager;

    fn node(version: Option<&str>) -> RepoProfile {
        RepoProfile {
            language: Language::Node,
            package_manager: Some(PackageManager::Npm),
            node_version: version.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn node_image_follows_the_version() {
        let map = ImageMap::default();
        assert_eq!(
            map.pick(&node(Some("v20.11.1"))).unwrap(),
            "node:20-bookworm-slim"
        );
        assert_eq!(
            map.pick(&node(Some(">=18"))).unwrap(),
            "node:18-bookworm-slim"
        );
        assert_eq!(
            map.pick(&node(Some("lts/*"))).unwrap(),
            "node:22-bookworm-slim"
        );
        assert_eq!(map.pick(&node(None)).unwrap(), "node:22-bookworm-slim");
    }

    #[test]
    fn other_languages_and_unknown() {
        let map = ImageMap::local();
        let python = RepoProfile {
            language: Language::Python,
            ..Default::default()
        };
        assert_eq!(map.pick(&python).unwrap(), LOCAL_DEBIAN_IMAGE);
        assert_eq!(map.pick(&node(Some("20"))).unwrap(), LOCAL_DEBIAN_IMAGE);
        assert_eq!(map.pick(&RepoProfile::default()), None);
    }

    #[test]
    fn the_map_is_configurable_as_json() {
        let map: ImageMap = serde_json::from_str(
            r#"{"node":"my/node:{major}","nodeDefaultMajor":"20","python":"p","rust":"r","go":"g"}"#,
        )
        .unwrap();
        assert_eq!(map.pick(&node(Some("18.2"))).unwrap(), "my/node:18");
    }
}
