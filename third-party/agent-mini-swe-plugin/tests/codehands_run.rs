//! The plugin as a person uses it: `codehands agents --plugin` lists mini-swe-agent, and
//! `codehands run --plugin … --agent mini-swe-agent --then approve` runs the real
//! mini-swe-agent against the scripted model server on a real git repo, then commits its
//! fix. The library and the `codehands` program are built by cargo for this test.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use model_server::{Block, ModelServer, Script, Turn};
use serde_json::{Value, json};

/// The fix of the demo repo's failing date test.
const FIX_MONTH: &str = "sed -i 's/getMonth()}/getMonth() + 1}/' src/date.js";

/// The command that ends mini's run, as its prompt asks for it.
const SUBMIT: &str = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// The key the scripted server accepts (any is).
const DUMMY_KEY: &str = "sk-dummy-for-plugin-tests";

/// The install folder of mini-swe-agent (as the plugin finds it), or a skip (a failure
/// under CI=true).
fn mini_install() -> Option<PathBuf> {
    let folder = std::env::var_os("MINI_SWE_AGENT_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| agent_mini_swe::install::folder(&runner_testkit::agents::cache_root()));
    if agent_mini_swe::install::program(&folder).is_file() {
        return Some(folder);
    }
    runner_testkit::skip(
        "mini-swe-agent is not installed: run `cargo xtask agents` (or set MINI_SWE_AGENT_DIR)",
    );
    None
}

/// The plugin library and the `codehands` program, built once.
fn built() -> (PathBuf, PathBuf) {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let folder = BUILT.get_or_init(|| {
        runner_testkit::cargo::build(
            env!("CARGO_MANIFEST_DIR"),
            &["agent-mini-swe-plugin", "codehands"],
        )
    });
    (
        folder.join("libagent_mini_swe_plugin.so"),
        folder.join("codehands"),
    )
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `codehands ARGS` with an environment of exactly what a person's would hold for it.
async fn codehands(
    root: &Path,
    install: &Path,
    server: Option<&ModelServer>,
    args: &[&str],
) -> Output {
    let (plugin, program) = built();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = tokio::process::Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CODEHANDS_HOME", root.join("codehands-home"))
        .env("MINI_SWE_AGENT_DIR", install)
        .env("NO_COLOR", "1")
        .arg("--plugin")
        .arg(&plugin)
        .args(args)
        .stdin(Stdio::null());
    if let Some(server) = server {
        cmd.env("OPENAI_BASE_URL", server.openai_base_url())
            .env("OPENAI_API_KEY", DUMMY_KEY);
    }
    cmd.output().await.unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[tokio::test]
async fn codehands_agents_lists_mini_swe_agent_from_the_plugin() {
    let Some(install) = mini_install() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = codehands(dir.path(), &install, None, &["agents", "--json"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = json_lines(&out);
    let mini = listed
        .iter()
        .find(|a| a["name"] == agent_mini_swe::NAME)
        .unwrap_or_else(|| panic!("{listed:#?}"));
    let (plugin, _) = built();
    assert_eq!(
        mini["origin"],
        json!({"kind": "plugin", "path": plugin.display().to_string()})
    );
    assert_eq!(
        mini["capabilities"],
        json!({"resume": false, "budget": true})
    );
    assert_eq!(mini["found"], true, "{mini:#}");
    assert_eq!(mini["tested"], true, "the pinned version: {mini:#}");
}

#[tokio::test]
async fn codehands_run_through_the_plugin_fixes_and_approves() {
    let Some(install) = mini_install() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let repo = agent_harness::make_repo(dir.path(), runner_fake::demo_repo::FILES).unwrap();
    let server = ModelServer::start(Script::new([
        Turn::blocks([Block::tool_use(
            "call_1",
            "bash",
            json!({ "command": FIX_MONTH }),
        )]),
        Turn::blocks([
            Block::text("Fixed: the month now starts at one."),
            Block::tool_use("call_2", "bash", json!({ "command": SUBMIT })),
        ]),
    ]))
    .await
    .unwrap();
    let repo_arg = repo.display().to_string();
    let out = codehands(
        dir.path(),
        &install,
        Some(&server),
        &[
            "run",
            &repo_arg,
            runner_fake::demo_repo::PROMPT,
            "--agent",
            agent_mini_swe::NAME,
            "--model",
            "openai/scripted-model",
            "--then",
            "approve",
            "-m",
            "Fix the month",
            "--json",
        ],
    )
    .await;
    let lines = json_lines(&out);
    assert!(
        out.status.success(),
        "{}\n{lines:#?}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kinds: Vec<_> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"task.started"), "{kinds:?}");
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["task.finished", "approval.requested"],
        "{kinds:?}"
    );
    assert!(kinds.contains(&"command.finished"), "{kinds:?}");
    let approved = lines.last().unwrap();
    let branch = approved["branch"].as_str().unwrap();
    assert_eq!(
        git(&repo, &["rev-list", "--count", &format!("main..{branch}")]).trim(),
        "1"
    );
    let fixed = git(&repo, &["show", &format!("{branch}:src/date.js")]);
    assert!(fixed.contains("getMonth() + 1"), "{fixed}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {DUMMY_KEY}").as_str()),
        "the key reached mini through the plugin's provider variables"
    );
}

#[tokio::test]
async fn codehands_agents_lists_every_way_in() {
    let Some(install) = mini_install() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("codehands-home/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("ruff-fix.toml"),
        "program = \"ruff\"\nargs = [\"check\", \"--fix\", \"{worktree}\"]\nparser = \"text\"\n",
    )
    .unwrap();
    let out = codehands(dir.path(), &install, None, &["agents", "--json"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let origins: Vec<(String, String)> = json_lines(&out)
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap_or("?").to_owned(),
                a["origin"]["kind"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("claude-code", "built-in"),
        ("codex", "built-in"),
        ("fake", "built-in"),
        (agent_mini_swe::NAME, "plugin"),
        ("mistral-vibe", "built-in"),
        ("ruff-fix", "profile"),
    ]
    .iter()
    .map(|(n, o)| (n.to_string(), o.to_string()))
    .collect();
    assert_eq!(origins, expected);
}
