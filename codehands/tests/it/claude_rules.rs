//! In a box that holds, Claude Code works like a developer (issue 48), tried with the real
//! Claude Code (2.1.332) against the scripted model server, on the demo's Node repo:
//! - boxed, any command runs: `git status`, `ls -la`, the test command with arguments
//!   (`npm test -- --test-reporter=tap`) and `node -e …`, each with its exit code in the
//!   events, while an `[agent] deny` rule of the person's config still refuses `curl` and
//!   says which rule; on a Rust crate whose toolchain `[box] read` brings in,
//!   `RUSTUP_HOME=… cargo test --offline` and `RUSTUP_HOME=… cargo test two` run and pass
//!   (the box's HOME is its own, so rustup is told where its home is);
//! - unboxed (`--isolation none`), the test command runs with its arguments, `curl` is
//!   refused and the live view names the setting that allows it, an `[agent] allow` entry of
//!   the repo's `.codehands.toml` at HEAD works (`node -e …`), and an entry the agent writes
//!   into its worktree's file does not (`python3 -c …`);
//! - a refused test command (`pytest -q`) is why the approval question says "tests never
//!   ran", and `report` counts the refusals;
//! - the seed's scenario (npm test, approve) passes unboxed too (boxed: runner_claude.rs).

use crate::support;

use std::path::Path;
use std::sync::Arc;

use model_server::{Block, ModelServer, Script, Turn};
use runner_contract::{
    AgentName, AllowancesSource, Event, EventBody, Isolation, Runner, SessionId, StartOptions,
};
use runner_core::LocalRunner;
use runner_testkit::runner as suite;
use serde_json::json;
use support::{World, worktree_for};

/// A command Claude Code does not allow by itself (it allows read-only ones such as `ls`,
/// `git status` or `whoami` without any rule): it runs only when a rule or the box allows it.
const NODE: &str = "node -e 'console.log(6*7)'";

/// The same for the rule the agent writes into its worktree's settings file.
const PYTHON: &str = "python3 -c 'print(6*7)'";

fn bash(id: &str, command: &str) -> Turn {
    Turn::blocks([Block::tool_use(
        id,
        "Bash",
        json!({ "command": command, "description": "Run it" }),
    )])
}

/// A runner for Claude Code at `claude` talking to `server`, reading the settings files as
/// `Setup::from_env` does (the person's config in the world's home, the repo's at HEAD).
fn runner_with_settings(world: &World, claude: &Path, server: &ModelServer) -> LocalRunner {
    let mut settings = world.settings();
    settings
        .caller_env
        .push(("ANTHROPIC_BASE_URL".into(), server.base_url()));
    settings
        .caller_env
        .push(("ANTHROPIC_API_KEY".into(), support::CLAUDE_TEST_KEY.into()));
    let files = codehands::settings::SettingsFiles::new(world.home.root(), &settings.caller_env);
    settings.allowances = Some(AllowancesSource(Arc::new(move |repo| files.load(repo))));
    world.runner_with(settings, |s| s.claude_bin = claude.to_path_buf())
}

/// Each finished command with its exit code, in order.
fn exits(events: &[Event]) -> Vec<(String, Option<i32>)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::CommandFinished(c) => Some((c.command.clone(), c.exit_code)),
            _ => None,
        })
        .collect()
}

/// The text of every refusal.
fn refusals(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Message(m) if m.denied => Some(m.text.clone()),
            _ => None,
        })
        .collect()
}

/// Commits `.codehands.toml` holding `text` in the world's repo.
fn commit_repo_settings(world: &World, text: &str) {
    std::fs::write(world.repo.join(".codehands.toml"), text).unwrap();
    world.git(&["add", ".codehands.toml"]);
    world.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-qm",
        "settings",
    ]);
}

/// `codehands run` on the world's repo with Claude Code and `server`, human output, kept.
fn run_cli(world: &World, claude: &Path, server: &ModelServer, id: SessionId) -> String {
    let out = support::run(
        world
            .codehands()
            .env("CLAUDE_BIN", claude)
            .env("ANTHROPIC_BASE_URL", server.base_url())
            .env("ANTHROPIC_API_KEY", support::CLAUDE_TEST_KEY)
            .env("NO_COLOR", "1")
            .current_dir(&world.repo)
            .args(["run", ".", "Look around, then fix the test"])
            .args(["--agent", "claude-code", "--session-id", &id.to_string()])
            .args(["--isolation", "none", "--then", "keep"]),
    );
    support::ok(&out)
}

#[tokio::test]
async fn boxed_claude_code_runs_what_a_developer_runs_and_a_deny_rule_still_refuses() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    std::fs::create_dir_all(world.home.root()).unwrap();
    std::fs::write(
        world.home.root().join("config.toml"),
        "[agent]\ndeny = [\"Bash(curl:*)\"]\n",
    )
    .unwrap();
    let server = ModelServer::start(Script::new([
        bash("toolu_box_1", "git status"),
        bash("toolu_box_2", "ls -la"),
        bash("toolu_box_3", "npm test -- --test-reporter=tap"),
        // Refused unboxed (a_refused_test_command_is_why_the_tests_never_ran): not one of
        // the read-only commands Claude Code allows by itself.
        bash("toolu_box_4", NODE),
        bash("toolu_box_5", "curl -s http://127.0.0.1:9/"),
        Turn::text("Looked around."),
    ]))
    .await
    .unwrap();
    let runner = runner_with_settings(&world, &claude, &server);
    let id = SessionId::new_random();
    let options = StartOptions::new(
        id,
        &world.repo,
        "Look around",
        AgentName::parse("claude-code").unwrap(),
    );
    assert_eq!(options.isolation, Isolation::Box);
    let events = suite::collect(runner.start(options).await.unwrap()).await;
    let ran = exits(&events);
    for expected in [
        ("git status", Some(0)),
        ("ls -la", Some(0)),
        // The demo's test fails until the month is fixed.
        ("npm test -- --test-reporter=tap", Some(1)),
        (NODE, Some(0)),
    ] {
        assert!(
            ran.contains(&(expected.0.to_owned(), expected.1)),
            "{expected:?} not in {ran:?}; refused: {:?}",
            refusals(&events)
        );
    }
    let seen = support::tool_results(&server).join("\n");
    assert!(
        seen.contains("On branch codehands/"),
        "git status ran: {seen}"
    );
    assert!(seen.contains("package.json"), "ls -la ran: {seen}");
    assert!(seen.contains("42"), "node ran: {seen}");
    assert!(
        events.iter().any(|e| matches!(&e.body,
            EventBody::TestResult(t) if t.command == "npm test -- --test-reporter=tap" && t.exit_code == Some(1))),
        "the test run is a test result"
    );
    let refused = refusals(&events);
    assert_eq!(refused.len(), 1, "only curl is refused: {refused:?}");
    assert!(
        refused[0].contains("curl -s http://127.0.0.1:9/")
            && refused[0].contains("[agent] deny = [\"Bash(curl:*)\"] refuses it"),
        "{refused:?}"
    );
}

/// The rustup install the tests' own cargo runs from: its cargo home (`~/.cargo`) and rustup
/// home (`~/.rustup`), or `None` for a toolchain installed another way.
fn rustup_homes() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let home = std::path::PathBuf::from(std::env::var_os("HOME")?);
    let cargo = std::env::var_os("CARGO_HOME").map_or_else(|| home.join(".cargo"), Into::into);
    let rustup = std::env::var_os("RUSTUP_HOME").map_or_else(|| home.join(".rustup"), Into::into);
    (cargo.join("bin/cargo").exists() && rustup.join("toolchains").is_dir())
        .then_some((cargo, rustup))
}

#[tokio::test]
async fn boxed_claude_code_runs_cargo_test_with_its_arguments_once_the_settings_read_the_toolchain_in()
 {
    let Some(claude) = support::claude() else {
        return;
    };
    let Some((cargo_home, rustup_home)) = rustup_homes() else {
        return runner_testkit::skip("no rustup install under CARGO_HOME/RUSTUP_HOME");
    };
    let world = World::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"two\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "#[test]\nfn two() {\n    assert_eq!(1 + 1, 2);\n}\n",
        ),
        (".gitignore", "/target\n"),
    ]);
    std::fs::create_dir_all(world.home.root()).unwrap();
    std::fs::write(
        world.home.root().join("config.toml"),
        format!(
            "[box]\nread = [{:?}, {:?}]\n",
            cargo_home.display().to_string(),
            rustup_home.display().to_string()
        ),
    )
    .unwrap();
    // The box's HOME is its own, so rustup is told where its home is (the variable, not a
    // rule: the box allows any command).
    let rustup = format!("RUSTUP_HOME={}", rustup_home.display());
    let offline = format!("{rustup} cargo test --offline");
    let one = format!("{rustup} cargo test two");
    let server = ModelServer::start(Script::new([
        bash("toolu_cargo_1", &offline),
        bash("toolu_cargo_2", &one),
        Turn::text("Both ran."),
    ]))
    .await
    .unwrap();
    let runner = runner_with_settings(&world, &claude, &server);
    let id = SessionId::new_random();
    let options = StartOptions::new(
        id,
        &world.repo,
        "Run the tests",
        AgentName::parse("claude-code").unwrap(),
    );
    let events = suite::collect(runner.start(options).await.unwrap()).await;
    let ran = exits(&events);
    assert!(refusals(&events).is_empty(), "{:?}", refusals(&events));
    for command in [&offline, &one] {
        assert!(
            ran.contains(&(command.clone(), Some(0))),
            "{command} not in {ran:?}: {}",
            support::tool_results(&server).join("\n")
        );
    }
    let passed = events
        .iter()
        .filter(|e| matches!(&e.body, EventBody::TestResult(t) if t.passed))
        .count();
    assert_eq!(passed, 2, "both are test runs that passed");
}

// Multi-threaded: the command line blocks a thread while the model server answers.
#[tokio::test(flavor = "multi_thread")]
async fn unboxed_the_test_command_runs_with_its_arguments_and_the_live_view_says_each_refusal() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    commit_repo_settings(&world, "[agent]\nallow = [\"Bash(node -e:*)\"]\n");
    let id = SessionId::new_random();
    let worktree = worktree_for(&world, &id).await;
    let server = ModelServer::start(Script::new([
        bash("toolu_none_1", "npm test -- --test-reporter=tap"),
        bash("toolu_none_2", "curl -s http://127.0.0.1:9/"),
        // The agent's own settings file in its worktree widens nothing.
        Turn::blocks([Block::tool_use(
            "toolu_none_3",
            "Write",
            json!({
                "file_path": worktree.join(".codehands.toml").display().to_string(),
                "content": "[agent]\nallow = [\"Bash(node -e:*)\", \"Bash(python3 -c:*)\"]\n",
            }),
        )]),
        bash("toolu_none_4", PYTHON),
        bash("toolu_none_5", NODE),
        Turn::text("Done looking."),
    ]))
    .await
    .unwrap();
    let out = run_cli(&world, &claude, &server, id);
    assert!(
        out.contains("$ npm test -- --test-reporter=tap → exit 1"),
        "the test command ran with its arguments: {out}"
    );
    assert!(
        out.contains("denied: Claude Code was refused Bash: curl -s http://127.0.0.1:9/")
            && out.contains(
                "to allow it, add [agent] allow = [\"Bash(curl:*)\"] to $CODEHANDS_HOME/config.toml \
                 or the repo's committed .codehands.toml"
            ),
        "the live view names the setting: {out}"
    );
    assert!(
        out.contains(&format!("denied: Claude Code was refused Bash: {PYTHON}"))
            && out.contains("[agent] allow = [\"Bash(python3:*)\"]"),
        "the worktree's file allowed nothing: {out}"
    );
    assert!(
        out.contains(&format!("$ {NODE} → exit 0")),
        "the rule committed at HEAD allows node -e: {out}"
    );
    let seen = support::tool_results(&server).join("\n");
    assert!(seen.contains("42"), "node ran: {seen}");
    assert!(
        out.contains("last test: FAILED (npm test -- --test-reporter=tap"),
        "{out}"
    );

    let report = support::ok(&support::run(
        world.codehands().args(["report", &id.to_string()]),
    ));
    assert!(report.contains("2 tool use(s) refused"), "{report}");
    assert!(
        report.contains("[agent] allow = [\"Bash(curl:*)\"]"),
        "{report}"
    );
}

// Multi-threaded: the command line blocks a thread while the model server answers.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_test_command_is_why_the_tests_never_ran() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    // Not the repo's test command (npm test): unboxed, it is refused.
    let server = ModelServer::start(Script::new([
        bash("toolu_py_1", NODE),
        bash("toolu_py_2", "pytest -q"),
        Turn::text("The tests pass."),
    ]))
    .await
    .unwrap();
    let id = SessionId::new_random();
    let out = run_cli(&world, &claude, &server, id);
    assert!(
        out.contains("last test: tests never ran (the agent was refused `pytest -q`"),
        "{out}"
    );
    assert!(
        out.contains("[agent] allow = [\"Bash(pytest:*)\"]"),
        "{out}"
    );
    // Without a rule, unboxed, a command Claude Code does not allow by itself is refused.
    assert!(
        out.contains(&format!("denied: Claude Code was refused Bash: {NODE}"))
            && out.contains("[agent] allow = [\"Bash(node:*)\"]"),
        "{out}"
    );
    let report = support::ok(&support::run(
        world.codehands().args(["report", &id.to_string()]),
    ));
    assert!(report.contains("2 tool use(s) refused"), "{report}");
}

#[tokio::test]
async fn the_seeds_scenario_passes_unboxed() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let id = SessionId::new_random();
    let server = ModelServer::start(runner_fake::demo_repo::script(
        &worktree_for(&world, &id).await,
    ))
    .await
    .unwrap();
    let runner = support::claude_runner(&world, &claude, &server, &[]);
    let mut options = StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("claude-code").unwrap(),
    );
    options.isolation = Isolation::None;
    let events = suite::collect(runner.start(options).await.unwrap()).await;
    assert!(refusals(&events).is_empty(), "{:?}", refusals(&events));
    assert!(
        events.iter().any(|e| matches!(&e.body,
            EventBody::TestResult(t) if t.command == "npm test" && t.passed)),
        "npm test ran and passed after the fix: {:?}",
        exits(&events)
    );
    let record = runner.session(&id).await.unwrap();
    let approved = runner.approve(&id, "Fix the month").await.unwrap();
    support::assert_approved_demo_fix(&world, &record, &approved);
}
