//! Node: package manager, test command, Node version and whether to install, from
//! `package.json`, lockfiles, `.nvmrc` and `.node-version`.
//!
//! - Package manager: the `packageManager` field (`"pnpm@9.1.0"`) when it names npm, pnpm
//!   or yarn; else the lockfile (`pnpm-lock.yaml` or `pnpm-workspace.yaml`, then
//!   `yarn.lock`, then `package-lock.json` or `npm-shrinkwrap.json`); else npm.
//! - Test command: `<manager> test` when `scripts.test` is set, except npm's placeholder
//!   (`echo "Error: no test specified" && exit 1`, which only fails), which means none.
//! - Node version: `.nvmrc`, then `.node-version`, then `engines.node` (a range, as written).
//!   A leading `v` is dropped (`v20.11.0` → `20.11.0`); a value with characters no version
//!   or range has is ignored, because the sandbox picks an image from it.
//! - Needs install: `dependencies`, `devDependencies` or `optionalDependencies` is not
//!   empty and there is no `node_modules` folder.
//!
//! A broken `package.json` (not JSON, not an object, unreadable) still makes a Node repo,
//! with the package manager from the lockfiles, the version from `.nvmrc`, no test command
//! and no install (nothing can be installed from a manifest npm cannot read).

use runner_contract::{Language, PackageManager, RepoProfile};
use serde_json::{Map, Value};

use super::{Repo, meaningful_lines};

/// What npm init writes as the test script; it only prints an error and fails.
const NPM_PLACEHOLDER: &str = "Error: no test specified";

pub(super) fn detect(repo: &Repo) -> RepoProfile {
    let manifest = repo
        .read("package.json")
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|value| match value {
            Value::Object(map) => Some(map),
            _ => None,
        });
    let manifest = manifest.as_ref();
    let manager = manifest
        .and_then(declared_manager)
        .or_else(|| manager_from_lockfile(repo))
        .unwrap_or(PackageManager::Npm);
    RepoProfile {
        language: Language::Node,
        package_manager: Some(manager),
        test_command: manifest
            .and_then(test_script)
            .map(|_| format!("{} test", command_of(manager))),
        node_version: version_file(repo, ".nvmrc")
            .or_else(|| version_file(repo, ".node-version"))
            .or_else(|| manifest.and_then(engines_node)),
        needs_install: manifest.is_some_and(has_dependencies) && !repo.is_dir("node_modules"),
    }
}

fn declared_manager(manifest: &Map<String, Value>) -> Option<PackageManager> {
    let field = manifest.get("packageManager")?.as_str()?;
    match field.split('@').next()?.trim() {
        "npm" => Some(PackageManager::Npm),
        "pnpm" => Some(PackageManager::Pnpm),
        "yarn" => Some(PackageManager::Yarn),
        _ => None,
    }
}

fn manager_from_lockfile(repo: &Repo) -> Option<PackageManager> {
    let has = |names: &[&str]| names.iter().any(|n| repo.is_file(n));
    if has(&["pnpm-lock.yaml", "pnpm-workspace.yaml"]) {
        Some(PackageManager::Pnpm)
    } else if has(&["yarn.lock"]) {
        Some(PackageManager::Yarn)
    } else if has(&["package-lock.json", "npm-shrinkwrap.json"]) {
        Some(PackageManager::Npm)
    } else {
        None
    }
}

fn command_of(manager: PackageManager) -> &'static str {
    match manager {
        PackageManager::Pnpm => "pnpm",
        PackageManager::Yarn => "yarn",
        _ => "npm",
    }
}

fn test_script(manifest: &Map<String, Value>) -> Option<&str> {
    let script = manifest.get("scripts")?.get("test")?.as_str()?.trim();
    (!script.is_empty() && !script.contains(NPM_PLACEHOLDER)).then_some(script)
}

fn engines_node(manifest: &Map<String, Value>) -> Option<String> {
    clean_version(manifest.get("engines")?.get("node")?.as_str()?)
}

fn version_file(repo: &Repo, name: &str) -> Option<String> {
    let text = repo.read(name)?;
    clean_version(meaningful_lines(&text).next()?)
}

fn clean_version(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let raw = match raw.strip_prefix('v') {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest,
        _ => raw,
    };
    let plausible = !raw.is_empty()
        && raw.len() <= 64
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " .-_/*<>=^~|+".contains(c));
    plausible.then(|| raw.to_owned())
}

fn has_dependencies(manifest: &Map<String, Value>) -> bool {
    ["dependencies", "devDependencies", "optionalDependencies"]
        .iter()
        .any(|key| {
            manifest
                .get(*key)
                .and_then(Value::as_object)
                .is_some_and(|deps| !deps.is_empty())
        })
}
