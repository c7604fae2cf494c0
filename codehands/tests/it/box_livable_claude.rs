//! The real Claude Code in its box, as a developer's repos need it (against the scripted
//! model server): a Rust crate tested offline with the caller's rustup under their home, a
//! Python package tested with the checkout's venv and the pytest in it, a Node package tested
//! with a runner from the checkout's `node_modules` on the caller's nvm node. Each run's tests pass in the box and
//! approve commits only the agent's change.

use crate::support;

use std::path::{Path, PathBuf};

use model_server::{Block, ModelServer, Script, Turn};
use runner_contract::{AgentName, Event, EventBody, Runner, SessionId, StartOptions};
use runner_testkit::runner as suite;
use serde_json::json;
use support::{World, worktree_for};

/// Claude Code's turns: run `command` with Bash, append a line to `file`, say done.
fn script(command: &str, file: &Path) -> Script {
    Script::new([
        Turn::blocks([Block::tool_use(
            "toolu_live_1",
            "Bash",
            json!({ "command": command, "description": "Run the tests" }),
        )]),
        Turn::blocks([Block::tool_use(
            "toolu_live_2",
            "Write",
            json!({ "file_path": file.display().to_string(), "content": "# done\n" }),
        )]),
        Turn::text("The tests pass."),
    ])
}

/// Runs Claude Code on `world` with `command`, approves; the command's event and the
/// approved commit's files.
async fn run(
    world: &World,
    claude: &Path,
    command: &str,
    extra: &[(&str, &str)],
) -> (Vec<Event>, Vec<String>) {
    let id = SessionId::new_random();
    let note = worktree_for(world, &id).await.join("NOTES.md");
    let server = ModelServer::start(script(command, &note)).await.unwrap();
    let mut settings = world.settings();
    // A variable given here replaces the world's (PATH, say) rather than follows it.
    settings
        .caller_env
        .retain(|(k, _)| !extra.iter().any(|(name, _)| name == k));
    settings
        .caller_env
        .extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    settings
        .caller_env
        .push(("ANTHROPIC_BASE_URL".into(), server.base_url()));
    settings
        .caller_env
        .push(("ANTHROPIC_API_KEY".into(), support::CLAUDE_TEST_KEY.into()));
    let runner = world.runner_with(settings, |s| s.claude_bin = claude.to_path_buf());
    let options = StartOptions::new(
        id,
        &world.repo,
        "Run the tests.",
        AgentName::parse("claude-code").unwrap(),
    );
    let events = suite::collect(runner.start(options).await.unwrap()).await;
    let approved = runner.approve(&id, "the work").await;
    assert!(approved.is_ok(), "{approved:?}\n{events:#?}");
    let files = support::session_branch_files(world);
    (events, files)
}

/// The `command.finished` of `command`: its exit code and output.
fn finished(events: &[Event], command: &str) -> (Option<i32>, String) {
    events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::CommandFinished(f) if f.command == command => {
                Some((f.exit_code, f.output.clone()))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no command.finished for {command}: {events:#?}"))
}

#[tokio::test]
async fn a_rust_crate_tests_offline_with_the_callers_rustup() {
    let Some(claude) = support::claude() else {
        return;
    };
    let Some(cargo_home) = support::callers_cargo_home() else {
        return;
    };
    let world = support::offline_crate(&cargo_home);
    let path = format!(
        "{}:{}",
        cargo_home.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (events, files) = run(&world, &claude, "cargo test --offline", &[("PATH", &path)]).await;
    let (code, output) = finished(&events, "cargo test --offline");
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("test result: ok"), "{output}");
    assert_eq!(files, ["NOTES.md"], "never target/");
}

/// pytest's wheels, which `cargo xtask install` caches (xtask/src/agents/pytest.rs).
fn pytest_wheels() -> Option<Vec<PathBuf>> {
    let folder = runner_testkit::agents::cache_root().join("wheels/pytest-8.3.5");
    let wheels: Vec<PathBuf> = std::fs::read_dir(&folder)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    if wheels.is_empty() {
        runner_testkit::skip(&format!(
            "pytest's wheels are not in {}: run `cargo xtask install`",
            folder.display()
        ));
        return None;
    }
    Some(wheels)
}

#[tokio::test]
async fn a_python_package_tests_with_the_checkouts_venv_and_its_pytest() {
    let Some(claude) = support::claude() else {
        return;
    };
    let Some(wheels) = pytest_wheels() else {
        return;
    };
    let world = World::new(&[
        (".gitignore", ".venv/\n__pycache__/\n"),
        (
            "test_app.py",
            "import depmod\n\n\ndef test_dep():\n    assert depmod.VALUE == 'from-the-venv'\n",
        ),
    ]);
    let site = support::checkout_venv(&world);
    // pytest installed in the venv as pip would, from its wheels (pure Python: unpacked).
    for wheel in &wheels {
        let unpacked = std::process::Command::new(world.repo.join(".venv/bin/python"))
            .arg("-c")
            .arg("import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])")
            .arg(wheel)
            .arg(&site)
            .output()
            .unwrap();
        assert!(unpacked.status.success(), "{unpacked:?}");
    }
    let command = ".venv/bin/python -m pytest -q -p no:cacheprovider";
    let (events, files) = run(&world, &claude, command, &[]).await;
    let (code, output) = finished(&events, command);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("1 passed"), "{output}");
    assert_eq!(files, ["NOTES.md"], "never .venv");
}

#[tokio::test]
async fn a_node_package_tests_with_node_modules_on_the_callers_nvm_node() {
    let Some(claude) = support::claude() else {
        return;
    };
    let Some(system_node) = ["/usr/bin/node", "/usr/local/bin/node"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    else {
        runner_testkit::skip("node is not installed (/usr/bin/node)");
        return;
    };
    let world = World::new(&[
        (".gitignore", "node_modules/\n"),
        (
            "test.js",
            "const dep = require('dep');\nif (dep !== 'from-node-modules') { process.exit(1); }\nconsole.log('node', process.env.NODE_FROM || 'system', 'ok');\n",
        ),
    ]);
    std::fs::create_dir_all(world.repo.join("node_modules/dep")).unwrap();
    std::fs::write(
        world.repo.join("node_modules/dep/index.js"),
        "module.exports = 'from-node-modules';\n",
    )
    .unwrap();
    // The package's test runner, from node_modules as npm links one.
    std::fs::create_dir_all(world.repo.join("node_modules/.bin")).unwrap();
    let runner = world.repo.join("node_modules/.bin/run-tests");
    std::fs::write(
        &runner,
        "#!/usr/bin/env node\nprocess.chdir(__dirname + '/../..');\nrequire(process.cwd() + '/test.js');\n",
    )
    .unwrap();
    // nvm's layout under the caller's home; its node runs the machine's, saying it is nvm's.
    let nvm_bin = world.agent_home.join(".nvm/versions/node/v20.0.0/bin");
    std::fs::create_dir_all(&nvm_bin).unwrap();
    std::fs::write(
        nvm_bin.join("node"),
        format!(
            "#!/bin/sh\nNODE_FROM=nvm exec {} \"$@\"\n",
            system_node.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    for program in [nvm_bin.join("node"), runner] {
        std::fs::set_permissions(program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        nvm_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let command = "node_modules/.bin/run-tests";
    let (events, files) = run(&world, &claude, command, &[("PATH", &path)]).await;
    let (code, output) = finished(&events, command);
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains("node nvm ok"),
        "the caller's nvm node ran, not the system's: {output}"
    );
    assert_eq!(files, ["NOTES.md"], "never node_modules");
}
