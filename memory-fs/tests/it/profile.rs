//! The repo profile, read from real files in temp folders.

use std::fs;
use std::path::Path;

use memory_fs::{MAX_FILE_BYTES, detect_repo_profile};
use runner_contract::{Language, PackageManager, RepoProfile};

use Language::{Go, Node, Python, Rust};
use PackageManager::{Cargo, Npm, Pip, Pnpm, Poetry, Uv, Yarn};

/// Files (`path`, text) and folders (a path ending in `/`) for a repo.
type Tree<'a> = &'a [(&'a str, &'a str)];

fn write_tree(dir: &Path, tree: Tree) {
    for (path, text) in tree {
        let full = dir.join(path);
        if path.ends_with('/') {
            fs::create_dir_all(&full).expect("make a folder");
        } else {
            fs::create_dir_all(full.parent().expect("a parent")).expect("make a folder");
            fs::write(&full, text).expect("write a file");
        }
    }
}

/// The one check of this file: the profile of a repo made of `tree`.
fn check(what: &str, tree: Tree, expected: RepoProfile) {
    let dir = tempfile::tempdir().expect("a temp folder");
    write_tree(dir.path(), tree);
    assert_eq!(detect_repo_profile(dir.path()), expected, "{what}");
}

fn profile(
    language: Language,
    package_manager: PackageManager,
    test_command: Option<&str>,
    node_version: Option<&str>,
    needs_install: bool,
) -> RepoProfile {
    RepoProfile {
        language,
        package_manager: Some(package_manager),
        test_command: test_command.map(str::to_owned),
        node_version: node_version.map(str::to_owned),
        needs_install,
    }
}

const JEST_WITH_DEPS: &str = r#"{"scripts":{"test":"jest"},"dependencies":{"left-pad":"1.3.0"}}"#;
const JEST_NO_DEPS: &str = r#"{"scripts":{"test":"jest"}}"#;

#[test]
fn npm() {
    let tree = [
        ("package.json", JEST_WITH_DEPS),
        ("package-lock.json", "{}"),
    ];
    check(
        "npm with dependencies",
        &tree,
        profile(Node, Npm, Some("npm test"), None, true),
    );
    check(
        "no lockfile is npm",
        &[("package.json", JEST_NO_DEPS)],
        profile(Node, Npm, Some("npm test"), None, false),
    );
    check(
        "npm-shrinkwrap.json",
        &[
            ("package.json", JEST_NO_DEPS),
            ("npm-shrinkwrap.json", "{}"),
        ],
        profile(Node, Npm, Some("npm test"), None, false),
    );
}

#[test]
fn pnpm() {
    check(
        "pnpm-lock.yaml",
        &[
            ("package.json", JEST_NO_DEPS),
            ("pnpm-lock.yaml", "lockfileVersion: '9.0'\n"),
        ],
        profile(Node, Pnpm, Some("pnpm test"), None, false),
    );
    check(
        "the packageManager field wins over a lockfile",
        &[
            (
                "package.json",
                r#"{"packageManager":"pnpm@9.1.0+sha512.abc","scripts":{"test":"vitest"}}"#,
            ),
            ("package-lock.json", "{}"),
        ],
        profile(Node, Pnpm, Some("pnpm test"), None, false),
    );
}

#[test]
fn yarn() {
    check(
        "yarn.lock",
        &[("package.json", JEST_WITH_DEPS), ("yarn.lock", "# yarn\n")],
        profile(Node, Yarn, Some("yarn test"), None, true),
    );
    check(
        "packageManager yarn",
        &[(
            "package.json",
            r#"{"packageManager":"yarn@4.1.0","scripts":{"test":"jest"}}"#,
        )],
        profile(Node, Yarn, Some("yarn test"), None, false),
    );
    check(
        "an unknown packageManager falls back to the lockfile",
        &[
            ("package.json", r#"{"packageManager":"bun@1.1.0"}"#),
            ("yarn.lock", ""),
        ],
        profile(Node, Yarn, None, None, false),
    );
}

#[test]
fn npm_placeholder_test_script_means_no_test_command() {
    let placeholder = r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#;
    check(
        "npm init's placeholder",
        &[("package.json", placeholder)],
        profile(Node, Npm, None, None, false),
    );
    for script in [
        r#"{"scripts":{"test":"  "}}"#,
        r#"{"scripts":{"test":3}}"#,
        r#"{"scripts":{}}"#,
    ] {
        check(
            script,
            &[("package.json", script)],
            profile(Node, Npm, None, None, false),
        );
    }
}

#[test]
fn node_version_from_nvmrc() {
    let cases = [
        ("v20.11.0\n", Some("20.11.0")),
        ("18\n", Some("18")),
        ("\n# pinned for CI\nlts/iron # the LTS\n", Some("lts/iron")),
        ("node\n", Some("node")),
        ("$(rm -rf ~)\n", None),
        ("", None),
    ];
    for (nvmrc, expected) in cases {
        check(
            &format!(".nvmrc {nvmrc:?}"),
            &[("package.json", "{}"), (".nvmrc", nvmrc)],
            profile(Node, Npm, None, expected, false),
        );
    }
    check(
        ".node-version when there is no .nvmrc",
        &[("package.json", "{}"), (".node-version", "v18.19.0")],
        profile(Node, Npm, None, Some("18.19.0"), false),
    );
}

#[test]
fn node_version_from_engines() {
    let engines = r#"{"engines":{"node":">=18 <21"}}"#;
    check(
        "engines.node as written",
        &[("package.json", engines)],
        profile(Node, Npm, None, Some(">=18 <21"), false),
    );
    check(
        ".nvmrc wins over engines.node",
        &[("package.json", engines), (".nvmrc", "20")],
        profile(Node, Npm, None, Some("20"), false),
    );
    check(
        "an unusable .nvmrc falls back to engines.node",
        &[("package.json", engines), (".nvmrc", "`id`")],
        profile(Node, Npm, None, Some(">=18 <21"), false),
    );
    check(
        "engines.node that is not a string",
        &[("package.json", r#"{"engines":{"node":20}}"#)],
        profile(Node, Npm, None, None, false),
    );
}

#[test]
fn needs_install_when_dependencies_are_declared_and_not_installed() {
    let cases = [
        (r#"{"dependencies":{"a":"1"}}"#, &[][..], true),
        (r#"{"devDependencies":{"jest":"29"}}"#, &[][..], true),
        (
            r#"{"optionalDependencies":{"fsevents":"2"}}"#,
            &[][..],
            true,
        ),
        (
            r#"{"dependencies":{"a":"1"}}"#,
            &["node_modules/"][..],
            false,
        ),
        (
            r#"{"dependencies":{},"devDependencies":{}}"#,
            &[][..],
            false,
        ),
        (r#"{"dependencies":"a"}"#, &[][..], false),
    ];
    for (manifest, dirs, needs_install) in cases {
        let mut tree = vec![("package.json", manifest)];
        tree.extend(dirs.iter().map(|d| (*d, "")));
        check(
            manifest,
            &tree,
            profile(Node, Npm, None, None, needs_install),
        );
    }
}

#[test]
fn broken_package_json_is_still_a_node_repo() {
    let expected = profile(Node, Pnpm, None, Some("20"), false);
    for broken in ["{ \"scripts\": ", "[]", "null", ""] {
        let tree = [
            ("package.json", broken),
            ("pnpm-lock.yaml", ""),
            (".nvmrc", "20"),
        ];
        check(&format!("package.json {broken:?}"), &tree, expected.clone());
    }
    let dir = tempfile::tempdir().expect("a temp folder");
    write_tree(dir.path(), &[("pnpm-lock.yaml", ""), (".nvmrc", "20")]);
    fs::write(dir.path().join("package.json"), b"{\"a\":\"\xff\xfe\"}").expect("write");
    assert_eq!(
        detect_repo_profile(dir.path()),
        expected,
        "package.json that is not UTF-8"
    );
}

#[test]
fn a_package_json_too_big_to_read_counts_as_broken() {
    let padding = " ".repeat(MAX_FILE_BYTES as usize);
    let huge = format!(r#"{{"scripts":{{"test":"jest"}}{padding}}}"#);
    check(
        "a huge package.json",
        &[("package.json", &huge)],
        profile(Node, Npm, None, None, false),
    );
}

#[cfg(unix)]
#[test]
fn a_package_json_that_is_not_a_file_is_not_read() {
    let dir = tempfile::tempdir().expect("a temp folder");
    // Reading /dev/zero would never end; it must not even be opened.
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("package.json")).expect("a symlink");
    assert_eq!(detect_repo_profile(dir.path()), RepoProfile::default());
    fs::create_dir(dir.path().join("Cargo.toml")).expect("a folder named Cargo.toml");
    assert_eq!(detect_repo_profile(dir.path()), RepoProfile::default());
}

#[test]
fn python_with_pyproject() {
    let pyproject = "[project]\nname = \"x\"\ndependencies = [\"requests>=2\"]\n\n\
                     [tool.pytest.ini_options]\naddopts = \"-q\"\n";
    let test = Some("python -m pytest");
    check(
        "pyproject with pytest",
        &[("pyproject.toml", pyproject)],
        profile(Python, Pip, test, None, true),
    );
    check(
        "an existing .venv means no install",
        &[("pyproject.toml", pyproject), (".venv/", "")],
        profile(Python, Pip, test, None, false),
    );
    let multi_line = "[project]\ndependencies = [\n  # web\n  \"flask\",\n]\n";
    check(
        "a multi-line list",
        &[("pyproject.toml", multi_line)],
        profile(Python, Pip, None, None, true),
    );
    let empty = "[project]\nname = \"x\"\ndependencies = []\n# pytest someday\n";
    check(
        "no dependencies, pytest only in a comment",
        &[("pyproject.toml", empty)],
        profile(Python, Pip, None, None, false),
    );
    let empty_multi = "[project]\ndependencies = [\n]\n";
    check(
        "an empty multi-line list",
        &[("pyproject.toml", empty_multi)],
        profile(Python, Pip, None, None, false),
    );
    let optional = "[project.optional-dependencies]\ntest = [\"pytest-cov\"]\n";
    check(
        "pytest-cov in optional dependencies",
        &[("pyproject.toml", optional)],
        profile(Python, Pip, test, None, true),
    );
}

#[test]
fn python_with_requirements() {
    let test = Some("python -m pytest");
    check(
        "pytest in requirements.txt",
        &[("requirements.txt", "requests==2.31\npytest>=8 # tests\n")],
        profile(Python, Pip, test, None, true),
    );
    check(
        "pytest in requirements-dev.txt",
        &[
            ("requirements.txt", "flask\n"),
            ("requirements-dev.txt", "pytest\n"),
        ],
        profile(Python, Pip, test, None, true),
    );
    check(
        "requirements without pytest",
        &[("requirements.txt", "flask\n")],
        profile(Python, Pip, None, None, true),
    );
    check(
        "only comments",
        &[("requirements.txt", "# nothing yet\n\n")],
        profile(Python, Pip, None, None, false),
    );
    check(
        "a word that only contains pytest",
        &[("requirements.txt", "mypytest-helper\n")],
        profile(Python, Pip, None, None, true),
    );
}

#[test]
fn python_with_pytest_files_and_other_managers() {
    let test = Some("python -m pytest");
    check(
        "setup.py and conftest.py",
        &[("setup.py", ""), ("conftest.py", "")],
        profile(Python, Pip, test, None, true),
    );
    check(
        "pytest.ini",
        &[("setup.cfg", ""), ("pytest.ini", "[pytest]\n")],
        profile(Python, Pip, test, None, true),
    );
    check(
        "tox.ini",
        &[
            ("setup.py", ""),
            ("tox.ini", "[testenv]\ncommands = pytest\n"),
        ],
        profile(Python, Pip, test, None, true),
    );
    check(
        "uv.lock",
        &[("pyproject.toml", ""), ("uv.lock", "")],
        profile(Python, Uv, None, None, false),
    );
    check(
        "poetry.lock",
        &[("pyproject.toml", ""), ("poetry.lock", "")],
        profile(Python, Poetry, None, None, false),
    );
    let poetry = "[tool.poetry]\nname = \"x\"\n\n[tool.poetry.dependencies]\npython = \"^3.12\"\n";
    check(
        "a [tool.poetry] table",
        &[("pyproject.toml", poetry)],
        profile(Python, Poetry, None, None, true),
    );
    check(
        "a Pipfile",
        &[("Pipfile", "[dev-packages]\npytest = \"*\"\n")],
        profile(Python, Pip, test, None, true),
    );
}

#[test]
fn rust() {
    let test = Some("cargo test");
    let bare = "[package]\nname = \"x\"\nversion = \"0.1.0\"\n";
    check(
        "no dependencies",
        &[("Cargo.toml", bare)],
        profile(Rust, Cargo, test, None, false),
    );
    let deps = format!("{bare}\n[dependencies]\nserde = \"1\"\n");
    check(
        "dependencies",
        &[("Cargo.toml", &deps)],
        profile(Rust, Cargo, test, None, true),
    );
    check(
        "vendored dependencies",
        &[("Cargo.toml", &deps), ("vendor/", "")],
        profile(Rust, Cargo, test, None, false),
    );
    let table = format!("{bare}\n[dev-dependencies.proptest]\nversion = \"1\"\n");
    check(
        "a dependency table",
        &[("Cargo.toml", &table)],
        profile(Rust, Cargo, test, None, true),
    );
    let empty_table = format!("{bare}\n[dependencies]\n# none yet\n");
    check(
        "an empty [dependencies]",
        &[("Cargo.toml", &empty_table)],
        profile(Rust, Cargo, test, None, false),
    );
    let lock_remote = "[[package]]\nname = \"serde\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
    check(
        "Cargo.lock with a registry package",
        &[
            ("Cargo.toml", "[workspace]\nmembers = [\"a\"]\n"),
            ("Cargo.lock", lock_remote),
        ],
        profile(Rust, Cargo, test, None, true),
    );
    check(
        "Cargo.lock with local packages only",
        &[
            ("Cargo.toml", &deps),
            (
                "Cargo.lock",
                "[[package]]\nname = \"x\"\nversion = \"0.1.0\"\n",
            ),
        ],
        profile(Rust, Cargo, test, None, false),
    );
}

#[test]
fn go() {
    let test = Some("go test ./...");
    let bare = "module example.com/x\n\ngo 1.22\n// require nothing\n";
    check(
        "no requirements",
        &[("go.mod", bare)],
        profile(Go, PackageManager::Go, test, None, false),
    );
    let block = format!("{bare}\nrequire (\n\tgithub.com/google/uuid v1.6.0\n)\n");
    check(
        "a require block",
        &[("go.mod", &block)],
        profile(Go, PackageManager::Go, test, None, true),
    );
    let line = format!("{bare}require github.com/google/uuid v1.6.0\n");
    check(
        "a require line",
        &[("go.mod", &line)],
        profile(Go, PackageManager::Go, test, None, true),
    );
    check(
        "vendored modules",
        &[("go.mod", &line), ("vendor/", "")],
        profile(Go, PackageManager::Go, test, None, false),
    );
}

#[test]
fn unknown_repos() {
    check("an empty folder", &[], RepoProfile::default());
    check(
        "files of no known kind",
        &[("README.md", "# hi"), (".nvmrc", "20"), ("src/", "")],
        RepoProfile::default(),
    );
    let dir = tempfile::tempdir().expect("a temp folder");
    let missing = detect_repo_profile(&dir.path().join("gone"));
    assert_eq!(missing.language, Language::Unknown);
    assert_eq!(missing, RepoProfile::default());
    let json = serde_json::to_value(&missing).expect("json");
    assert_eq!(
        json["language"], "unknown",
        "the profile says language: \"unknown\""
    );
}

#[test]
fn the_first_kind_that_matches_wins() {
    check(
        "package.json before Cargo.toml",
        &[
            ("package.json", JEST_NO_DEPS),
            ("Cargo.toml", "[package]\n"),
        ],
        profile(Node, Npm, Some("npm test"), None, false),
    );
    check(
        "Cargo.toml before go.mod and pyproject.toml",
        &[
            ("Cargo.toml", "[package]\n"),
            ("go.mod", "module x\n"),
            ("pyproject.toml", ""),
        ],
        profile(Rust, Cargo, Some("cargo test"), None, false),
    );
    check(
        "go.mod before requirements.txt",
        &[("go.mod", "module x\n"), ("requirements.txt", "flask\n")],
        profile(Go, PackageManager::Go, Some("go test ./..."), None, false),
    );
}
