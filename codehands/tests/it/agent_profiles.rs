//! Agent profiles: every refusal of a bad file, and a real program (Ruff) run as an
//! agent through one, from `codehands agents` to an approved commit.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use codehands::RunnerBuilder;
use support::World;

/// A profile that loads: `ruff check --fix` on the worktree, text output.
const GOOD: &str = r#"
name = "ruff-fix"
description = "Ruff's safe fixes, as an agent"
program = "ruff"
args = ["check", "--fix", "--exit-zero", "--no-cache", "{worktree}"]
parser = "text"
version-args = ["--version"]
"#;

fn setup(world: &World) -> codehands::Setup {
    let mut setup = codehands::Setup::from_env().unwrap();
    setup.home = world.home.clone();
    setup
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Loads `text` as `--agent-file`; the refusal's message.
fn refusal(text: &str) -> String {
    let world = World::new(&[("a.py", "x = 1\n")]);
    let path = write(world.dir.path(), "agent.toml", text);
    let result = RunnerBuilder::new(setup(&world)).agent_file(&path).agents();
    let message = result.expect_err("the profile is refused").to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "names the file: {message}"
    );
    message
}

#[test]
fn a_good_profile_loads_with_its_origin() {
    let world = World::new(&[("a.py", "x = 1\n")]);
    let path = write(world.dir.path(), "agent.toml", GOOD);
    let (registry, problems) = RunnerBuilder::new(setup(&world))
        .agent_file(&path)
        .agents()
        .unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let name = runner_contract::AgentName::parse("ruff-fix").unwrap();
    let entry = registry.entry(&name).unwrap();
    assert_eq!(entry.origin, runner_core::AgentOrigin::Profile { path });
    assert_eq!(entry.agent.name(), name);
}

#[test]
fn refuses_an_unknown_key() {
    let message = refusal(&format!("{GOOD}\nsandbox = \"off\"\n"));
    assert!(message.contains("sandbox"), "{message}");
    assert!(message.contains("unknown field"), "{message}");
}

#[test]
fn refuses_an_unknown_key_in_a_table() {
    let message = refusal(&format!("{GOOD}\n[provider]\nbase-url = \"X\"\n"));
    assert!(message.contains("base-url"), "{message}");
}

#[test]
fn refuses_a_wrong_type() {
    let message = refusal(&GOOD.replace(
        r#"args = ["check", "--fix", "--exit-zero", "--no-cache", "{worktree}"]"#,
        r#"args = "check --fix""#,
    ));
    assert!(message.contains("args"), "{message}");
    assert!(message.contains("invalid type"), "{message}");
}

#[test]
fn refuses_a_placeholder_inside_a_larger_string() {
    let message = refusal(&GOOD.replace(r#""{worktree}""#, r#""--root={worktree}""#));
    assert!(message.contains("args[4]"), "{message}");
    assert!(message.contains("whole element"), "{message}");
}

#[test]
fn refuses_an_unknown_placeholder() {
    let message = refusal(&GOOD.replace(r#""{worktree}""#, r#""{home}""#));
    assert!(message.contains("unknown placeholder"), "{message}");
}

#[test]
fn refuses_flags_that_bypass_permissions() {
    for flag in [
        "--dangerously-skip-permissions",
        "--dangerously-bypass-approvals-and-sandbox",
        "--permission-mode=bypassPermissions",
        "--yolo",
    ] {
        let message = refusal(&GOOD.replace(r#""--no-cache""#, &format!("{flag:?}")));
        assert!(message.contains("permission checks"), "{flag}: {message}");
        assert!(message.contains("args[3]"), "{flag}: {message}");
    }
}

#[test]
fn refuses_a_name_taken_by_a_built_in() {
    let message = refusal(&GOOD.replace(r#"name = "ruff-fix""#, r#"name = "claude-code""#));
    assert!(message.contains("taken by a built-in agent"), "{message}");
}

#[test]
fn refuses_a_name_outside_the_pattern() {
    let message = refusal(&GOOD.replace(r#"name = "ruff-fix""#, r#"name = "Ruff_Fix""#));
    assert!(message.contains("key `name`"), "{message}");
    assert!(message.contains("not an agent name"), "{message}");
}

#[test]
fn refuses_a_relative_program_path() {
    let message = refusal(&GOOD.replace(r#"program = "ruff""#, r#"program = "bin/ruff""#));
    assert!(message.contains("key `program`"), "{message}");
    assert!(message.contains("absolute path"), "{message}");
}

#[test]
fn refuses_a_prompt_argument_that_could_be_read_as_a_flag() {
    let text = GOOD.replace(
        r#"args = ["check", "--fix", "--exit-zero", "--no-cache", "{worktree}"]"#,
        r#"args = ["check", "{prompt}"]"#,
    ) + "prompt = \"argument\"\n";
    let message = refusal(&text);
    assert!(message.contains("right before {prompt}"), "{message}");
}

#[test]
fn refuses_a_prompt_placeholder_when_the_prompt_goes_on_stdin() {
    let text = GOOD.replace(r#""{worktree}""#, r#""--", "{prompt}""#);
    let message = refusal(&text);
    assert!(message.contains("`prompt` is \"stdin\""), "{message}");
}

#[test]
fn refuses_a_bad_variable_name() {
    let message = refusal(&format!("{GOOD}\n[provider]\napi-key-env = \"my key\"\n"));
    assert!(message.contains("provider.api-key-env"), "{message}");
}

#[test]
fn a_broken_home_profile_is_listed_and_named_agents_get_its_error() {
    let world = World::new(&[("a.py", "x = 1\n")]);
    let folder = world.home.root().join("agents");
    std::fs::create_dir_all(&folder).unwrap();
    write(&folder, "ruff-fix.toml", GOOD);
    let broken = write(&folder, "broken.toml", &format!("{GOOD}\nextra = 1\n"));
    let (registry, problems) = RunnerBuilder::new(setup(&world)).agents().unwrap();
    assert!(registry.contains(&runner_contract::AgentName::parse("ruff-fix").unwrap()));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].path, broken);
    let name = runner_contract::AgentName::parse("broken").unwrap();
    let error = codehands::unknown_agent(&registry, &problems, &name).to_string();
    assert!(error.contains("extra"), "{error}");
    let unknown = runner_contract::AgentName::parse("nobody").unwrap();
    let error = codehands::unknown_agent(&registry, &problems, &unknown).to_string();
    assert!(error.contains("no agent named `nobody`"), "{error}");
    assert!(error.contains("ruff-fix"), "lists the known names: {error}");
}

#[test]
fn a_home_profile_must_match_its_file_name() {
    let world = World::new(&[("a.py", "x = 1\n")]);
    let folder = world.home.root().join("agents");
    std::fs::create_dir_all(&folder).unwrap();
    write(&folder, "other.toml", GOOD);
    let (_, problems) = RunnerBuilder::new(setup(&world)).agents().unwrap();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].message.contains("make them the same"),
        "{problems:?}"
    );
}

/// Ruff from the cache that `cargo xtask agents` fills, or a skip (a failure under CI).
fn ruff() -> Option<PathBuf> {
    let cached = std::fs::read_dir(runner_testkit::agents::cache_root().join("agents"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("ruff"))
        .filter(|p| p.is_file())
        .max();
    let found = runner_testkit::agents::find_program("RUFF_BIN", cached.unwrap_or_default());
    if found.is_none() {
        runner_testkit::skip("Ruff is not installed: run `cargo xtask agents`");
    }
    found
}

fn codehands(world: &World, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codehands"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &world.agent_home)
        .env("CODEHANDS_HOME", world.home.root())
        .env("NO_COLOR", "1")
        .current_dir(&world.repo)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn ruff_runs_as_a_profile_agent_from_run_to_approved_commit() {
    let Some(ruff) = ruff() else { return };
    let world = World::new(&[
        ("app.py", "import os\nimport sys\n\n\nprint(sys.argv)\n"),
        ("README.md", "A Python repo with an unused import.\n"),
    ]);
    let profile = write(
        world.dir.path(),
        "ruff-fix.toml",
        &GOOD.replace(
            r#"program = "ruff""#,
            &format!("program = {:?}", ruff.display().to_string()),
        ),
    );
    let profile = profile.to_str().unwrap();

    let listed = codehands(&world, &["agents", "--json", "--agent-file", profile]);
    assert!(listed.status.success(), "{listed:?}");
    let text = String::from_utf8_lossy(&listed.stdout);
    let ruff_line: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["name"] == "ruff-fix")
        .expect("ruff-fix is listed");
    assert_eq!(ruff_line["origin"]["kind"], "profile");
    assert_eq!(ruff_line["found"], true);
    assert!(ruff_line["version"].as_str().unwrap().starts_with("0."));

    let run = codehands(
        &world,
        &[
            "run",
            ".",
            "Apply Ruff's safe fixes.",
            "--agent-file",
            profile,
            "--agent",
            "ruff-fix",
            "--then",
            "approve",
            "-m",
            "Remove the unused import",
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let types: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["type"].as_str().map(str::to_owned))
        .collect();
    assert!(types.contains(&"message".to_owned()), "{types:?}");
    assert!(types.contains(&"task.finished".to_owned()), "{types:?}");
    assert!(
        types.contains(&"approval.requested".to_owned()),
        "{types:?}"
    );
    let branches = world.git(&["branch", "--format=%(refname:short)"]);
    let branch = branches
        .lines()
        .find(|b| b.starts_with("codehands/"))
        .expect("the session's branch");
    let file = world.git(&["show", &format!("{branch}:app.py")]);
    assert!(
        !file.contains("import os") && file.contains("import sys\n"),
        "ruff's fix is committed: {file}"
    );
    assert_eq!(
        world.git(&["log", "--format=%s", "-1", branch]).trim(),
        "Remove the unused import"
    );
}

#[test]
fn an_unknown_agent_on_the_command_line_lists_the_known_ones() {
    let world = World::new(&[("a.py", "x = 1\n")]);
    let out = codehands(&world, &["run", ".", "hi", "--agent", "nobody"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no agent named `nobody`"), "{stderr}");
    assert!(stderr.contains("claude-code, codex, fake"), "{stderr}");
    assert!(
        world.home.sessions_dir().read_dir().is_err()
            || world
                .home
                .sessions_dir()
                .read_dir()
                .unwrap()
                .next()
                .is_none(),
        "no record left"
    );
}

/// A CLI of our own that prints JSON lines with its own field names: it says what it does,
/// runs `ls`, removes the unused import, runs a check script (a test run no fixed list
/// knows, marked by `is_test`), and ends with a summary, its cost and tokens. It tells
/// the model it was given, and prints a version when asked.
const PATCHBOT: &str = r#"#!/usr/bin/python3
import json, os, subprocess, sys
if sys.argv[1:] == ["--version"]:
    print("patchbot 1.4.2")
    sys.exit(0)
prompt = sys.stdin.read()
def say(**line):
    print(json.dumps(line), flush=True)
say(type="say", text="Working on: " + prompt.splitlines()[0])
say(type="say", text="model " + os.environ.get("PATCHBOT_MODEL", "none"))
ls = subprocess.run(["ls"], capture_output=True, text=True)
say(type="ran", cmd="ls", code=ls.returncode, out=ls.stdout, call="c1")
with open("app.py") as f:
    source = f.read()
with open("app.py", "w") as f:
    f.write(source.replace("import os\n", ""))
check = subprocess.run([sys.executable, "check.py"], capture_output=True, text=True)
say(type="ran", cmd="python3 check.py", code=check.returncode, out=check.stdout,
    call="c2", is_test=True)
say(type="done", summary="Removed the unused import.", cost=0.0012,
    tokens={"in": 1200, "out": 80})
"#;

/// Its profile: the JSON lines mapped by field names.
const PATCHBOT_PROFILE: &str = r#"
name = "patchbot"
description = "Removes unused imports, speaking JSON lines"
program = "PROGRAM"
parser = "json-lines"
version-args = ["--version"]
[provider]
model-env = "PATCHBOT_MODEL"
[json-lines]
kind = "type"
message = { when = "say", text = "text" }
command = { when = "ran", command = "cmd", exit-code = "code", output = "out", id = "call", test = "is_test" }
result = { when = "done", text = "summary", cost-usd = "cost", input-tokens = "tokens.in", output-tokens = "tokens.out" }
error = { when = "fail", message = "why" }
"#;

#[test]
fn a_json_lines_cli_runs_as_a_profile_agent_from_run_to_approve() {
    let world = World::new(&[
        ("app.py", "import os\nimport sys\n\n\nprint(sys.argv)\n"),
        (
            "check.py",
            "src = open('app.py').read()\nassert 'import os' not in src, 'unused import'\nprint('1 passed')\n",
        ),
    ]);
    let bin = world.dir.path().join("patchbot/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = write(&bin, "patchbot", PATCHBOT);
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let profile = write(
        world.dir.path(),
        "patchbot.toml",
        &PATCHBOT_PROFILE.replace("PROGRAM", program.to_str().unwrap()),
    );
    let profile = profile.to_str().unwrap();
    let cli = |args: &[&str]| {
        support::run(
            world
                .codehands()
                .env("NO_COLOR", "1")
                .env("PATCHBOT_MODEL", "patch-large")
                .current_dir(&world.repo)
                .args(args),
        )
    };

    let listed = support::ok(&cli(&["agents", "--agent-file", profile]));
    assert!(
        listed.contains("Removes unused imports, speaking JSON lines"),
        "the description is shown: {listed}"
    );

    let run = cli(&[
        "run",
        ".",
        "Remove the unused import.\nKeep the rest.",
        "--agent-file",
        profile,
        "--agent",
        "patchbot",
        "--then",
        "approve",
        "-m",
        "Remove the unused import",
        "--json",
    ]);
    support::ok(&run);
    let events = support::json_lines(&run);
    let of = |kind: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|e| e["type"] == kind).collect()
    };
    let messages: Vec<&str> = of("message")
        .iter()
        .filter_map(|e| e["payload"]["text"].as_str())
        .collect();
    assert!(
        messages.contains(&"Working on: Remove the unused import.")
            && messages.contains(&"model patch-large"),
        "the prompt arrived, and the caller's own model variable without --model: {messages:?}"
    );
    let commands: Vec<&str> = of("command.finished")
        .iter()
        .filter_map(|e| e["payload"]["command"].as_str())
        .collect();
    assert_eq!(commands, ["ls", "python3 check.py"]);
    let tests = of("test.result");
    assert_eq!(tests.len(), 1, "{events:?}");
    assert_eq!(tests[0]["payload"]["command"], "python3 check.py");
    assert_eq!(tests[0]["payload"]["passed"], true);
    let finished = of("task.finished");
    assert_eq!(finished.len(), 1);
    assert_eq!(
        finished[0]["payload"]["result"],
        "Removed the unused import."
    );
    assert_eq!(finished[0]["payload"]["costUsd"], 0.0012);
    assert_eq!(of("approval.requested").len(), 1);

    let branches = world.git(&["branch", "--format=%(refname:short)"]);
    let branch = branches
        .lines()
        .find(|b| b.starts_with("codehands/"))
        .expect("the session's branch");
    let file = world.git(&["show", &format!("{branch}:app.py")]);
    assert!(
        !file.contains("import os"),
        "the change is committed: {file}"
    );

    let sessions = support::ok(&cli(&["sessions"]));
    assert!(
        sessions.contains("$0.0012"),
        "a small cost keeps its digits: {sessions}"
    );
    let id = events[0]["sessionId"].as_str().unwrap();
    // No --agent-file this time: what ran was probed while it ran.
    let report: serde_json::Value =
        serde_json::from_str(&support::ok(&cli(&["report", id, "--json"]))).unwrap();
    assert_eq!(report["agentProgram"], program.to_str().unwrap());
    assert_eq!(report["agentVersion"], "1.4.2");
    assert_eq!(report["tokens"]["input"], 1200, "{report}");
}

#[test]
fn a_json_lines_profile_needs_its_table_and_refuses_unknown_keys() {
    let base = "name = \"p\"\nprogram = \"p\"\nparser = \"json-lines\"\n";
    let message = refusal(base);
    assert!(
        message.contains("needs a `[json-lines]` table"),
        "{message}"
    );
    let message = refusal(&format!(
        "{base}[json-lines]\nkind = \"type\"\nmessage = {{ when = \"m\", text = \"t\", colour = \"red\" }}\n"
    ));
    assert!(message.contains("colour"), "{message}");
    let message = refusal(&format!(
        "{base}[json-lines]\nkind = \"type\"\nmessage = {{ when = \"m\", text = \"t\" }}\nresult = {{ when = \"m\" }}\n"
    ));
    assert!(
        message.contains("`message.when` and `result.when`"),
        "{message}"
    );
    let message = refusal(
        "name = \"p\"\nprogram = \"p\"\nparser = \"text\"\n[json-lines]\nkind = \"type\"\n",
    );
    assert!(
        message.contains("only with `parser = \"json-lines\"`"),
        "{message}"
    );
}
