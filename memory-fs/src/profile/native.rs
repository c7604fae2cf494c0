//! Rust and Go: one test command each; an install is needed when dependencies must be
//! fetched (the test box has no network) and none are vendored.

use runner_contract::{Language, PackageManager, RepoProfile};

use super::{Repo, meaningful_lines};

/// `Cargo.toml`: `cargo test`. Needs an install when `Cargo.lock` names a package from a
/// registry or git (or, with no lockfile, `Cargo.toml` declares dependencies) and there is
/// no `vendor/` folder.
pub(super) fn rust(repo: &Repo) -> RepoProfile {
    let fetches = match repo.read("Cargo.lock") {
        Some(lock) => lock
            .lines()
            .any(|l| l.trim_start().starts_with("source = ")),
        None => repo
            .read("Cargo.toml")
            .is_some_and(|manifest| declares_cargo_dependencies(&manifest)),
    };
    RepoProfile {
        language: Language::Rust,
        package_manager: Some(PackageManager::Cargo),
        test_command: Some("cargo test".into()),
        node_version: None,
        needs_install: fetches && !repo.is_dir("vendor"),
    }
}

/// `go.mod`: `go test ./...`. Needs an install when it requires modules and there is no
/// `vendor/` folder.
pub(super) fn go(repo: &Repo) -> RepoProfile {
    // go.mod comments start with `//`, not `#`.
    let requires = repo.read("go.mod").is_some_and(|m| {
        m.lines()
            .map(|l| l.split("//").next().unwrap_or_default().trim())
            .any(|l| l.starts_with("require ") || l.starts_with("require("))
    });
    RepoProfile {
        language: Language::Go,
        package_manager: Some(PackageManager::Go),
        test_command: Some("go test ./...".into()),
        node_version: None,
        needs_install: requires && !repo.is_dir("vendor"),
    }
}

/// Whether a `[dependencies]`-like table (`[dev-dependencies]`, `[target.….dependencies]`,
/// `[workspace.dependencies]`, `[dependencies.serde]` …) has an entry.
fn declares_cargo_dependencies(manifest: &str) -> bool {
    let mut in_dependencies = false;
    for line in meaningful_lines(manifest) {
        if line.starts_with('[') {
            let table = line.trim_matches(|c| c == '[' || c == ']');
            in_dependencies = table.ends_with("dependencies") || table.contains("dependencies.");
            if in_dependencies && table.contains("dependencies.") {
                return true; // `[dependencies.serde]` is itself an entry.
            }
        } else if in_dependencies {
            return true;
        }
    }
    false
}
