//! Python: package manager, pytest, and whether to install.
//!
//! - Package manager: `uv.lock` → uv; `poetry.lock` or a `[tool.poetry]` table → Poetry;
//!   else pip.
//! - Test command: `python -m pytest` when the repo uses pytest: a `pytest.ini` or
//!   `conftest.py`, or `pytest` named in `pyproject.toml`, `setup.cfg`, `tox.ini`, `Pipfile`
//!   or a requirements file. `python -m pytest` rather than `pytest`, because it works
//!   wherever the interpreter has pytest installed (no script on `PATH` needed) and puts
//!   the repo on `sys.path` as tests expect. A repo with no sign of pytest gets none.
//! - Needs install: something must be installed (a requirement line, a dependency table
//!   or list in `pyproject.toml`, or pytest itself) and there is no `.venv` or `venv`.

use runner_contract::{Language, PackageManager, RepoProfile};

use super::{Repo, meaningful_lines};

/// The files any of which makes a Python repo.
pub(super) const MARKERS: &[&str] = &[
    "pyproject.toml",
    "requirements.txt",
    "setup.py",
    "setup.cfg",
    "Pipfile",
];

const REQUIREMENTS: &[&str] = &[
    "requirements.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "requirements-test.txt",
    "test-requirements.txt",
];

const MENTIONS_PYTEST: &[&str] = &["pyproject.toml", "setup.cfg", "tox.ini", "Pipfile"];

pub(super) fn detect(repo: &Repo) -> RepoProfile {
    let pyproject = repo.read("pyproject.toml").unwrap_or_default();
    let requirements: Vec<String> = REQUIREMENTS.iter().filter_map(|n| repo.read(n)).collect();

    let manager = if repo.is_file("uv.lock") {
        PackageManager::Uv
    } else if repo.is_file("poetry.lock") || pyproject.contains("[tool.poetry") {
        PackageManager::Poetry
    } else {
        PackageManager::Pip
    };
    let uses_pytest = repo.is_file("pytest.ini")
        || repo.is_file("conftest.py")
        || requirements.iter().any(|r| names_pytest(r))
        || MENTIONS_PYTEST
            .iter()
            .filter_map(|n| repo.read(n))
            .any(|t| names_pytest(&t));
    let declares = requirements
        .iter()
        .any(|r| meaningful_lines(r).next().is_some())
        || pyproject_declares_dependencies(&pyproject);
    let has_env = repo.is_dir(".venv") || repo.is_dir("venv");
    RepoProfile {
        language: Language::Python,
        package_manager: Some(manager),
        test_command: uses_pytest.then(|| "python -m pytest".to_owned()),
        node_version: None,
        needs_install: (declares || uses_pytest) && !has_env,
    }
}

/// Whether `pytest` appears as a word of its own (also `pytest-cov`, `pytest>=8`), outside
/// `#` comments.
fn names_pytest(text: &str) -> bool {
    meaningful_lines(text).any(|line| {
        line.match_indices("pytest").any(|(i, _)| {
            let before = line[..i].chars().next_back();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    })
}

/// A non-empty `dependencies = [...]` list, or a table of dependencies
/// (`[tool.poetry.dependencies]`, `[project.optional-dependencies]`, `[dependency-groups]`)
/// with an entry.
fn pyproject_declares_dependencies(pyproject: &str) -> bool {
    let mut in_table = false;
    let mut in_list = false;
    for line in meaningful_lines(pyproject) {
        if in_list {
            if line.starts_with(']') {
                in_list = false;
                continue;
            }
            return true;
        }
        if line.starts_with('[') {
            let table = line.trim_matches(|c| c == '[' || c == ']');
            in_table = table.ends_with("dependencies") || table == "dependency-groups";
            continue;
        }
        if in_table {
            return true;
        }
        if let Some(value) = line
            .strip_prefix("dependencies")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
        {
            let value = value.trim();
            if value.starts_with('[') && value != "[" {
                if value.trim_start_matches('[').trim_start().starts_with(']') {
                    continue; // `dependencies = []`
                }
                return true;
            }
            in_list = value == "[";
        }
    }
    false
}
