//! The architecture's rules that a test can check (ARCHITECTURE.md, "Invariants a test
//! checks"): each test reads the tree as text and names the file, the line and the fix.

use std::path::{Path, PathBuf};
use std::process::Command;

/// This file, which names what it looks for and is left out of its own searches.
const THIS_FILE: &str = "xtask/tests/tidy.rs";

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// Every `.rs` file of ours, relative to the root, sorted: build output, git's folder and
/// the fuzz crate's own build folder left out.
fn rust_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(&path, root, out);
            } else if kind.is_file() && name.ends_with(".rs") {
                let relative = path.strip_prefix(root).expect("under the root");
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

/// The lines of a file's code that ships: comments dropped, and nothing from the first
/// `#[cfg(test)]` on (our files keep their tests module last). With the line numbers.
fn shipped_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .map(|(n, line)| (n + 1, line))
        .collect()
}

/// Where a file stands: test code, or support that only tests and dev tasks build.
fn is_test_code(path: &str) -> bool {
    path.contains("/tests/")
        || path.starts_with("tests/")
        || path.contains("/benches/")
        || path.contains("/examples/")
        || path.ends_with("/tests.rs")
}

/// The places below the facade that may read the environment, and why.
const ENV_READERS: &[(&str, &str)] = &[
    (
        "codehands/",
        "the facade: it reads the environment and hands it down",
    ),
    ("xtask/", "development tasks"),
    ("fuzz/", "the fuzz targets"),
    ("fuzz-harness/", "test support: the fuzz targets' bodies"),
    ("agent-harness/", "test support: the recording harness"),
    (
        "runner-testkit/",
        "test support: the conformance suites (CI=true, the agents' cache)",
    ),
    (
        "runner-fake/src/fake_agent/",
        "the fake agent, a program of its own whose environment is its input",
    ),
    (
        "third-party/agent-mini-swe-plugin/",
        "a plugin: the library codehands loads has no caller but its environment to be \
         configured by (docs/adding-an-agent.md)",
    ),
    (
        "engine-docker/src/shim/",
        "the remote driver, a program of its own (`codehands __remote`): the agent's \
         environment, as the runner built it, is its input, shipped into the box as a file",
    ),
    (
        "engine-docker/src/init.rs",
        "the remote box's init, a program of its own in the box (`codehands __remote-init`): \
         the image's environment (its PATH, a toolchain's variables) is its input, handed on to \
         the agent under the agent's own",
    ),
    ("/src/bin/", "a program's own main"),
];

#[test]
fn no_crate_below_the_facade_reads_the_environment() {
    const READS: &[&str] = &[
        "env::var(",
        "env::var_os(",
        "env::vars(",
        "env::vars_os(",
        "env::set_var(",
        "env::remove_var(",
    ];
    let mut found = Vec::new();
    for path in rust_files() {
        if is_test_code(&path) || ENV_READERS.iter().any(|(p, _)| path.contains(p)) {
            continue;
        }
        let text = read(&path);
        for (n, line) in shipped_lines(&text) {
            if READS.iter().any(|read| line.contains(read)) {
                found.push(format!("{path}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "only the facade (codehands) reads the environment; the crates below it take what \
         they need as arguments (ARCHITECTURE.md, \"codehands\"). Pass the value in from \
         codehands (its Setup, or RunnerSettings::caller_env) instead of reading it here:\n{}",
        found.join("\n")
    );
}

/// The files ARCHITECTURE.md lists under "Unsafe code" (a folder ends in `/`).
fn listed_unsafe() -> Vec<String> {
    let architecture = read("ARCHITECTURE.md");
    let section = architecture
        .split("\n### Unsafe code\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a section `### Unsafe code`");
    section
        .lines()
        .skip_while(|line| !line.starts_with("- `"))
        .take_while(|line| line.starts_with("- `") || line.starts_with("  "))
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|line| line.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn unsafe_code_stands_only_in_the_listed_files() {
    let listed = listed_unsafe();
    assert!(
        !listed.is_empty(),
        "the list under `### Unsafe code` is empty"
    );
    let is_unsafe = |line: &str| {
        let code = line.split("//").next().unwrap_or_default();
        code.contains("unsafe_code")
            || [
                "unsafe {",
                "unsafe fn",
                "unsafe impl",
                "unsafe extern",
                "unsafe(",
            ]
            .iter()
            .any(|word| code.contains(word))
    };
    // An entry covers its file, a folder's files, and a module's tests beside it
    // (`plugin/tests.rs` for `plugin.rs`).
    let covers = |entry: &str, path: &str| {
        path == entry
            || (entry.ends_with('/') && path.starts_with(entry))
            || entry
                .strip_suffix(".rs")
                .is_some_and(|stem| path.starts_with(&format!("{stem}/")))
    };
    let mut unlisted = Vec::new();
    let mut used = vec![false; listed.len()];
    for path in rust_files() {
        if path == THIS_FILE {
            continue;
        }
        let text = read(&path);
        let Some((n, line)) = text
            .lines()
            .enumerate()
            .find(|(_, line)| !line.trim_start().starts_with("//") && is_unsafe(line))
        else {
            continue;
        };
        match listed.iter().position(|entry| covers(entry, &path)) {
            Some(i) => used[i] = true,
            None => unlisted.push(format!("{path}:{}: {}", n + 1, line.trim())),
        }
    }
    assert!(
        unlisted.is_empty(),
        "unsafe code outside the files ARCHITECTURE.md lists under \"Unsafe code\": write it \
         without unsafe, or move it into a listed file, or list the file there with what its \
         unsafe code is for (and a SAFETY comment on every block):\n{}",
        unlisted.join("\n")
    );
    let stale: Vec<&String> = listed
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(entry, _)| entry)
        .collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md lists these under \"Unsafe code\", but they hold none: take them off \
         the list: {stale:?}"
    );
}

/// The tasks of `cargo xtask`'s usage text: the plain words (at most two: `bench git`,
/// `record demo`) that open a line, before its arguments and its description column.
fn usage_tasks() -> Vec<String> {
    let main = read("xtask/src/main.rs");
    let usage = main
        .split("tasks:\n")
        .nth(1)
        .and_then(|rest| rest.split("\";").next())
        .expect("xtask/src/main.rs has a USAGE text with `tasks:`");
    let plain = |word: &&str| word.chars().all(|c| c.is_ascii_lowercase() || c == '-');
    let mut tasks: Vec<String> = usage
        .lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .map(|line| {
            let head = line.trim_start().split("  ").next().unwrap_or_default();
            let words: Vec<&str> = head.split_whitespace().take_while(plain).take(2).collect();
            words.join(" ")
        })
        .collect();
    tasks.sort();
    tasks
}

/// The tasks ARCHITECTURE.md's `xtask` section lists: the backticked names that open each
/// bullet, before its colon.
fn documented_tasks() -> Vec<String> {
    let architecture = read("ARCHITECTURE.md");
    let section = architecture
        .split("\n### `xtask`\n")
        .nth(1)
        .and_then(|rest| rest.split("\n#").next())
        .expect("ARCHITECTURE.md has a section ### `xtask`");
    let mut tasks: Vec<String> = section
        .lines()
        .filter_map(|line| line.strip_prefix("- "))
        .filter_map(|line| line.split("`:").next())
        .flat_map(|names| names.split(", "))
        .map(|name| name.trim_matches('`').to_owned())
        .collect();
    tasks.sort();
    tasks
}

#[test]
fn the_xtask_usage_and_the_architecture_list_the_same_tasks() {
    let usage = usage_tasks();
    let documented = documented_tasks();
    let missing: Vec<&String> = usage.iter().filter(|t| !documented.contains(t)).collect();
    let extra: Vec<&String> = documented.iter().filter(|t| !usage.contains(t)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "xtask's usage text (xtask/src/main.rs) and ARCHITECTURE.md's `xtask` section differ: \
         in the usage only: {missing:?}; in ARCHITECTURE.md only: {extra:?}. Give every task a \
         bullet there (\"- `task`: what it does\") and a line in the usage"
    );
}

#[test]
fn the_terminal_text_helpers_exist_once() {
    const HOME: &str = "runner-contract/src/present.rs";
    // The helpers' names, and the bidi range every copy of them spelled out.
    const COPIES: &[&str] = &[
        "fn is_bidi_control",
        "fn visible(",
        "fn one_line(",
        "fn stat_line(",
        "'\\u{202a}'..='\\u{202e}'",
        "'\\u{2066}'..='\\u{2069}'",
    ];
    let mut found = Vec::new();
    for path in rust_files() {
        if path == HOME || path == THIS_FILE {
            continue;
        }
        let text = read(&path);
        for (n, line) in text.lines().enumerate() {
            if COPIES.iter().any(|copy| line.contains(copy)) {
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a copy of the terminal-text helpers: use runner_contract::present (visible, plain, \
         one_line, stat_line, is_bidi_control) instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_library_a_daemon_links_builds_neither_the_cli_nor_the_model_server() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args([
            "tree",
            "-p",
            "codehands",
            "-e",
            "normal",
            "--no-default-features",
            "--features",
            "claude,git",
            "--prefix",
            "none",
        ])
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo} tree: {e}"));
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    for unwanted in [
        "axum",
        "clap",
        "clap_mangen",
        "clap_complete",
        "tracing-subscriber",
    ] {
        assert!(
            !crates.contains(&unwanted),
            "`codehands` without default features (claude, git) pulls {unwanted}: a \
             command-line crate belongs behind the `cli` feature, the scripted model server \
             behind runner-fake's `model-server`"
        );
    }
}

/// The most lines a product file may hold before its tests module (ARCHITECTURE.md,
/// "Invariants"): a longer file does several jobs, and is split into a folder of parts.
const MAX_PRODUCT_LINES: usize = 600;

#[test]
fn no_product_file_is_over_600_lines() {
    let long: Vec<String> = rust_files()
        .into_iter()
        .filter(|path| !is_test_code(path) && path != THIS_FILE)
        // The fuzz targets and the test-support crates are tests of their own kind.
        .filter(|path| !path.starts_with("fuzz/") && !path.starts_with("runner-testkit/"))
        .filter_map(|path| {
            let text = read(&path);
            let lines = text
                .lines()
                .take_while(|line| line.trim() != "#[cfg(test)]")
                .count();
            (lines > MAX_PRODUCT_LINES).then(|| format!("{path}: {lines} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "product files over {MAX_PRODUCT_LINES} lines (before their tests): split each into a \
         folder of parts, one job each:\n{}",
        long.join("\n")
    );
}

/// The names `[workspace.dependencies]` pins in the root manifest.
fn workspace_pins() -> Vec<String> {
    let manifest = read("Cargo.toml");
    let table = manifest
        .split("[workspace.dependencies]")
        .nth(1)
        .expect("the root manifest has [workspace.dependencies]");
    table
        .lines()
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| {
            let line = line.trim();
            (!line.is_empty() && !line.starts_with('#'))
                .then(|| line.split(['=', ' ']).next().unwrap_or("").to_owned())
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// Whether a member is an adapter: a crate that implements the contract (or serves one that
/// does) and stands on runner-contract alone (ARCHITECTURE.md, "Invariants"). None lists
/// runner-core, not even for its tests: they take the suites from runner-testkit, and an
/// end-to-end test reaches the real runner through the facade (`codehands::core`).
fn is_adapter(name: &str) -> bool {
    name.starts_with("agent-")
        || [
            "vcs-git",
            "sandbox-docker",
            "memory-fs",
            "engine-docker",
            "claude-lifecycle",
            "remote-transfer",
        ]
        .contains(&name)
}

#[test]
fn no_adapter_lists_the_engine_even_for_its_tests() {
    let metadata = workspace_metadata();
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("a name");
        if !is_adapter(name) {
            continue;
        }
        for dependency in package["dependencies"].as_array().expect("dependencies") {
            if dependency["name"] == "runner-core" {
                let kind = dependency["kind"].as_str().unwrap_or("normal");
                found.push(format!("{name} ({kind})"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "an adapter lists runner-core, so its build (or its tests' build) compiles the engine: \
         take the contract's items from runner-contract and the conformance suites from \
         runner-testkit; an end-to-end test that needs the real runner gets it through the \
         facade (`codehands::core`):\n{}",
        found.join("\n")
    );
}

/// `cargo metadata` of the workspace's members, without their dependencies' packages.
fn workspace_metadata() -> serde_json::Value {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// Every member's manifest, the root's own left out (the fuzz crate is outside the
/// workspace and pins its own).
fn member_manifests() -> Vec<String> {
    workspace_metadata()["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| std::fs::read_to_string(p["manifest_path"].as_str().expect("a path")))
        .map(|text| text.expect("a member's manifest reads"))
        .collect()
}

#[test]
fn every_workspace_pin_is_used_by_a_member() {
    let manifests = member_manifests();
    let unused: Vec<String> = workspace_pins()
        .into_iter()
        .filter(|name| {
            let uses = format!("{name} = {{ workspace = true");
            let uses_short = format!("{name}.workspace = true");
            !manifests
                .iter()
                .any(|m| m.contains(&uses) || m.contains(&uses_short))
        })
        .collect();
    assert!(
        unused.is_empty(),
        "pinned in the root [workspace.dependencies] but used by no member: {unused:?}: \
         remove the pin (a crate that needs it again adds it back)"
    );
}

/// The run folder's names, read from their one module (`runner-contract/src/run_folder.rs`).
fn run_folder_names() -> Vec<String> {
    read(RUN_FOLDER)
        .lines()
        .filter_map(|line| line.strip_prefix("pub const "))
        .filter_map(|rest| rest.split_once(": &str = \""))
        .map(|(_, value)| value.trim_end_matches("\";").to_owned())
        .collect()
}

/// The module that names every file of `runs/<id>/`.
const RUN_FOLDER: &str = "runner-contract/src/run_folder.rs";

/// Product files that spell one of those names for a file of another folder, and why.
const OTHER_FOLDERS: &[(&str, &str)] = &[
    // The repo memory's own notes file, under `memory/<repo>/`, not a run's.
    ("memory-fs/src/file_store.rs", "notes.md"),
];

#[test]
fn the_run_folders_names_are_spelled_in_one_module() {
    let names = run_folder_names();
    assert!(names.len() >= 20, "found only {names:?} in {RUN_FOLDER}");
    let mut found = Vec::new();
    for path in rust_files() {
        let product = !is_test_code(&path)
            && path != THIS_FILE
            && path != RUN_FOLDER
            && !path.starts_with("xtask/")
            && !path.starts_with("fuzz")
            && !path.starts_with("runner-testkit/");
        if !product {
            continue;
        }
        let text = read(&path);
        for (n, line) in shipped_lines(&text) {
            for name in &names {
                let quoted = format!("\"{name}\"");
                if line.contains(&quoted)
                    && !OTHER_FOLDERS.contains(&(path.as_str(), name.as_str()))
                {
                    found.push(format!("{path}:{n}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a run folder's file named outside {RUN_FOLDER}: use runner_contract::run_folder's \
         constant instead:\n{}",
        found.join("\n")
    );
}

/// The contract is named as `runner_contract` by every caller: the engine re-exports none of
/// it, so there is one path to each contract item (ARCHITECTURE.md, "runner-core").
#[test]
fn the_engine_re_exports_none_of_the_contract() {
    let mut found = Vec::new();
    for path in rust_files() {
        if !path.starts_with("runner-core/src/") {
            continue;
        }
        let text = read(&path);
        for (n, line) in shipped_lines(&text) {
            let line = line.trim_start();
            if line.starts_with("pub use runner_contract")
                || line.starts_with("pub use ::runner_contract")
            {
                found.push(format!("{path}:{n}: {line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "runner-core re-exports the contract: callers name runner_contract instead:\n{}",
        found.join("\n")
    );
}

/// The parts of the runner take narrow handles (`runner/parts.rs`: the records, the adapters,
/// what a supervisor needs, what starts one), never the runner whole, and never from a parent
/// module: a parent that its children reach back into is a hub (ARCHITECTURE.md,
/// "runner-core"). So, outside `parts.rs`, no module under `runner/` or `codehands/src/` names
/// `Shared`; under `runner/`, `LocalRunner` is named only to implement its own methods
/// (`impl LocalRunner`, `impl Runner for LocalRunner`, `LocalRunner::…`), save by the files
/// of [`TAKE_THE_RUNNER_WHOLE`]. A glob import of a parent counts as reaching back.
#[test]
fn no_part_takes_the_runner_from_a_parent() {
    let mut found = Vec::new();
    for path in rust_files() {
        let in_scope =
            path.starts_with("runner-core/src/runner/") || path.starts_with("codehands/src/");
        if !in_scope || is_test_code(&path) || path == "runner-core/src/runner/parts.rs" {
            continue;
        }
        let text = read(&path);
        let shipped: String = shipped_lines(&text)
            .into_iter()
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
            .map(|(_, line)| format!("{line}\n"))
            .collect();
        let whole_allowed = !path.starts_with("runner-core/src/runner/")
            || TAKE_THE_RUNNER_WHOLE.iter().any(|(file, _)| *file == path);
        found.extend(
            reaches_back(&shipped)
                .into_iter()
                .chain(takes_the_runner_whole(&shipped, whole_allowed))
                .map(|what| format!("{path}: {what}")),
        );
    }
    assert!(
        found.is_empty(),
        "a part takes the runner whole or from a parent module: give it the narrow handle it \
         uses (runner/parts.rs), from the runner's own method:\n{}",
        found.join("\n")
    );
}

/// The files under `runner/` that still hold the runner whole, each with why (a list that
/// only shrinks).
const TAKE_THE_RUNNER_WHOLE: [(&str, &str); 1] = [(
    "runner-core/src/runner/workflow/mod.rs",
    "a workflow's driver runs each phase through the runner's own start, follow and checks, \
     as a caller would",
)];

/// The places in `code` that take the runner whole: any naming of `Shared`, and (unless
/// `runner_allowed`) a `LocalRunner` that is not an `impl` of its own methods, a path to one
/// of them (`LocalRunner::…`) or an import.
fn takes_the_runner_whole(code: &str, runner_allowed: bool) -> Vec<String> {
    let word_at = |line: &str, word: &str| -> Vec<usize> {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        line.match_indices(word)
            .map(|(at, _)| at)
            .filter(|&at| {
                !line[..at].ends_with(ident) && !line[at + word.len()..].starts_with(ident)
            })
            .collect()
    };
    let mut found = Vec::new();
    let mut in_use = false;
    for line in code.lines() {
        let trimmed = line.trim_start();
        let starts_use = ["use ", "pub use ", "pub(super) use ", "pub(crate) use "]
            .iter()
            .any(|p| trimmed.starts_with(p));
        let is_use = in_use || starts_use;
        in_use = is_use && !line.contains(';');
        if !word_at(line, "Shared").is_empty() {
            found.push(format!("names Shared: {}", line.trim()));
        }
        if runner_allowed || is_use {
            continue;
        }
        for at in word_at(line, "LocalRunner") {
            let before = line[..at].trim_end();
            let own = before.ends_with("impl")
                || before.ends_with("for")
                || line[at..].starts_with("LocalRunner::");
            if !own {
                found.push(format!("takes LocalRunner whole: {}", line.trim()));
            }
        }
    }
    found
}

#[test]
fn taking_the_runner_whole_is_seen_in_every_form() {
    for code in [
        "fn f(shared: &Shared) {}",
        "struct D {\n    runner: LocalRunner,\n}",
        "fn f(runner: &LocalRunner) {}",
        "let x: Arc<LocalRunner> = y;",
        "async fn page(State(ui): State<Shared>) {}",
        "pub(super) type Shared = Arc<Ui>;",
        "use super::server::Shared;",
    ] {
        assert_eq!(
            takes_the_runner_whole(code, false).len(),
            1,
            "not seen: {code}"
        );
    }
    for code in [
        "impl LocalRunner {",
        "impl Runner for LocalRunner {",
        "use super::parts::{\n    Launcher,\n    LocalRunner,\n};",
        "let driver = LocalRunner::driver(self.launcher());",
        "let shared = SharedThing;",
        "struct SharedUi;",
        "fn f(records: &Records, adapters: &Adapters) {}",
    ] {
        assert!(
            takes_the_runner_whole(code, false).is_empty(),
            "seen wrongly: {code}"
        );
    }
    assert!(takes_the_runner_whole("fn f(runner: &LocalRunner) {}", true).is_empty());
    assert_eq!(takes_the_runner_whole("fn f(s: &Shared) {}", true).len(), 1);
}

/// The places in `code` that take `Shared` or `LocalRunner` from a parent module (`super::`,
/// `super::super::`, `crate::runner::`, alone or in a group), and glob imports of a parent.
fn reaches_back(code: &str) -> Vec<String> {
    const HUB: [&str; 2] = ["Shared", "LocalRunner"];
    let names_hub = |rest: &str| {
        let word: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        HUB.contains(&word.as_str())
    };
    let mut found = Vec::new();
    for prefix in ["super::", "crate::runner::"] {
        for (at, _) in code.match_indices(prefix) {
            if code[..at].ends_with("super::") {
                continue; // the middle of a chain, seen from its start
            }
            let mut rest = &code[at + prefix.len()..];
            while let Some(deeper) = rest.strip_prefix("super::") {
                rest = deeper;
            }
            let hit = if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                group
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|word| HUB.contains(&word))
            } else {
                names_hub(rest) || rest.starts_with("*;")
            };
            if hit {
                let line = code[at..].lines().next().unwrap_or_default();
                found.push(format!("{prefix}{}", &line[prefix.len()..]));
            }
        }
    }
    found
}

#[test]
fn reaching_back_is_seen_in_every_form() {
    for code in [
        "use super::Shared;",
        "use super::super::{journal, LocalRunner};",
        "use super::{\n    heal,\n    Shared,\n};",
        "use crate::runner::LocalRunner;",
        "use super::*;",
    ] {
        assert_eq!(reaches_back(code).len(), 1, "not seen: {code}");
    }
    for code in [
        "use super::parts::{LocalRunner, Shared};",
        "use crate::runner::parts::Shared;",
        "use super::{heal, run};",
        "let shared = SharedThing;",
    ] {
        assert!(reaches_back(code).is_empty(), "seen wrongly: {code}");
    }
}

/// ARCHITECTURE.md stays a map: at most 400 lines, the detail in `docs/`.
#[test]
fn the_architecture_stays_short() {
    let lines = read("ARCHITECTURE.md").lines().count();
    assert!(
        lines <= 400,
        "ARCHITECTURE.md is {lines} lines, over 400: move detail to docs/ and keep the map"
    );
}

/// Each crate's integration tests link as one binary (`tests/it/main.rs`, one module per
/// former file), so a cold `cargo xtask test` links each crate's tests once
/// (ARCHITECTURE.md, "Testing").
#[test]
fn each_crate_has_one_integration_test_binary() {
    let metadata = workspace_metadata();
    let several: Vec<String> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|package| {
            let tests: Vec<&str> = package["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .filter(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == "test"))
                })
                .map(|t| t["name"].as_str().expect("a target's name"))
                .collect();
            (tests.len() > 1).then(|| format!("{}: {}", package["name"], tests.join(", ")))
        })
        .collect();
    assert!(
        several.is_empty(),
        "a crate links more than one integration-test binary: move its `tests/*.rs` into \
         modules of `tests/it/main.rs` (a test that needs its own process re-runs the test \
         binary for one test, as memory-fs's `processes` does):\n{}",
        several.join("\n")
    );
}

/// The crate every product spawn goes through (ARCHITECTURE.md, "runner-process").
const PROCESS_LAYER: &str = "runner-process/";

/// Code that may start processes itself, and why: none of it ships in codehands.
const SPAWNERS: &[(&str, &str)] = &[
    (PROCESS_LAYER, "the process layer itself"),
    (
        "xtask/",
        "development tasks: cargo, apt-get, docker and the agents' installers",
    ),
    (
        "fuzz-harness/",
        "test support: the fuzz targets' bodies run git on the seeds",
    ),
    (
        "agent-harness/",
        "test support: the recording harness runs the real agents and their scenarios",
    ),
    (
        "runner-testkit/",
        "test support: the suites make fixture repos, test users and boxed children",
    ),
];

#[test]
fn spawning_happens_only_in_the_process_layer() {
    let mut found = Vec::new();
    for path in rust_files() {
        let exempt = SPAWNERS.iter().any(|(p, _)| path.starts_with(p));
        if exempt || is_test_code(&path) || path == THIS_FILE {
            continue;
        }
        let text = read(&path);
        found.extend(
            spawns(&shipped_code(&text))
                .into_iter()
                .map(|(n, line)| format!("{path}:{n}: {line}")),
        );
    }
    assert!(
        found.is_empty(),
        "a process started outside the process layer (runner-process): use \
         runner_process::tool::Tool for a short call for an answer, foreground::Foreground for a \
         program run in the foreground, owned::spawn for a child owned until reaped, \
         detached::DetachedAgent for an agent; or add what the caller needs to the layer:\n{}",
        found.join("\n")
    );
}

/// A file's shipped code with its line numbers kept: comment lines blanked, a line's trailing
/// comment cut, nothing from the first `#[cfg(test)]` on.
fn shipped_code(text: &str) -> String {
    text.lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .map(|line| {
            if line.trim_start().starts_with("//") {
                ""
            } else {
                line.split(" // ").next().unwrap_or_default()
            }
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The lines of `code` (number, text) that start a process without the layer: std's or
/// tokio's `Command` (named, imported alone or in a group, `CommandExt`), or a raw fork or
/// exec.
fn spawns(code: &str) -> Vec<(usize, String)> {
    const FORMS: [&str; 6] = [
        "Command::new(",
        "Command::from(",
        "process::Command",
        "::fork(",
        "::execv",
        "::posix_spawn",
    ];
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let starts_a_word = |at: usize| !code[..at].ends_with(word);
    let mut hits: Vec<usize> = FORMS
        .iter()
        .flat_map(|form| code.match_indices(form))
        .filter(|(at, form)| form.starts_with(':') || starts_a_word(*at))
        .map(|(at, _)| at)
        .collect();
    for (at, _) in code.match_indices("process::{") {
        let group = &code[at + "process::{".len()..];
        let group = &group[..group.find('}').unwrap_or(group.len())];
        if group
            .split(|c| !word(c))
            .any(|w| w == "Command" || w == "CommandExt")
        {
            hits.push(at);
        }
    }
    let mut lines: Vec<usize> = hits
        .into_iter()
        .map(|at| code[..at].matches('\n').count())
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let text: Vec<&str> = code.lines().collect();
    lines
        .into_iter()
        .map(|i| (i + 1, text.get(i).unwrap_or(&"").trim().to_owned()))
        .collect()
}

#[test]
fn spawning_is_seen_in_every_form() {
    for code in [
        "let out = std::process::Command::new(\"git\").output();",
        "let mut c = tokio::process::Command::new(program);",
        "let c = Command::new(&cargo);",
        "use std::process::Command;",
        "use std::process::{Command, Stdio};",
        "use tokio::process::{\n    Child,\n    Command,\n};",
        "use std::os::unix::process::CommandExt;",
        "let c = tokio::process::Command::from(command);",
        "let pid = unsafe { libc::fork() };",
        "nix::unistd::execvp(&program, &args)?;",
    ] {
        assert_eq!(spawns(code).len(), 1, "not seen: {code}");
    }
    for code in [
        "let out = Tool::new(\"git\").arg(\"status\").run()?;",
        "let child = Foreground::new(program).own_group().spawn()?;",
        "use std::process::{ExitStatus, Stdio};",
        "let c = DockerCommand::new(\"ps\");",
        "use runner_process::tool::Tool;",
        "(\"execve\", libc::SYS_execve, [0; 6]),",
    ] {
        assert!(spawns(code).is_empty(), "seen wrongly: {code}");
    }
    // A comment is not code, nor is a test module.
    let text = "// std::process::Command::new(\"x\")\nfn f() {}\n#[cfg(test)]\nuse std::process::Command;\n";
    assert!(spawns(&shipped_code(text)).is_empty());
    let text = "fn f() {}\n\nlet c = Command::new(\"x\"); // a git\n";
    assert_eq!(
        spawns(&shipped_code(text)),
        [(3, "let c = Command::new(\"x\");".to_owned())]
    );
}
