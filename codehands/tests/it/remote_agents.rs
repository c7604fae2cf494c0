//! Every agent on a remote box, with its login handed in (docs/remote-box.md, "The box's kernel
//! settings"): the real Claude Code as a swarm job, logged in only by its credentials file
//! (the model server sees the file's token, and no key from an env var); the real Codex on an
//! engine with its own sandbox on (a write outside the workspace is refused by it, a write
//! inside goes through) and its `auth.json` in the box; and Codex on a swarm whose API cannot
//! give a service the profile its sandbox needs, refused with the reason before anything is
//! made. One test: the swarm is the engine's state, and the steps share it and the images.

use std::path::Path;

use crate::support;
use crate::support::remote;

use model_server::{Block, ModelServer, Script, Turn};
use remote::{Swarm, TestImage, docker, docker_ready, left_on_swarm, types};
use serde_json::json;
use support::{World, json_lines, run, text};

/// The token of the Claude Code login file the caller's home holds.
const CLAUDE_LOGIN_TOKEN: &str = "sk-ant-oat01-from-the-login-file";
/// What Codex's login file holds (not shaped like a key, which Codex may mask in output).
const CODEX_LOGIN_TOKEN: &str = "codex-login-file-token-7f3a";

#[test]
fn every_agent_runs_remotely_with_its_login_handed_in() {
    if !docker_ready() {
        return;
    }
    let (Some(claude), Some(codex)) = (support::claude(), support::codex()) else {
        return;
    };
    let Some(_swarm) = Swarm::join() else {
        return;
    };
    let base = TestImage::build_with(&[&claude]);
    let image = base.with_agents(&codex);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    codex_runs_on_an_engine_with_its_own_sandbox_on(&runtime, &image, &codex);
    codex_on_an_old_swarm_is_refused_with_the_reason(&runtime, &image, &codex);
    claude_code_runs_on_the_swarm_logged_in_by_its_file(&runtime, &image, &claude);
}

/// `codehands` for `world` with the box image `image`.
fn codehands(world: &World, image: &TestImage) -> std::process::Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_REMOTE_IMAGE", &image.tag)
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    cmd
}

/// A Codex `exec_command` call (the tool Codex offers for a model it has no metadata for).
fn exec(id: &str, cmd: &str) -> Turn {
    Turn::blocks([Block::tool_use(id, "exec_command", json!({ "cmd": cmd }))])
}

/// The demo's fix as Codex's `apply_patch`.
const FIX: &str = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/date.js\n@@\n-  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;\n+  return `${date.getFullYear()}-${date.getMonth() + 1}-${date.getDate()}`;\n*** End Patch\nPATCH\n";

/// The engine's default bridge's gateway: the address of this machine its containers reach.
fn bridge_gateway() -> std::net::IpAddr {
    let config = docker(&[
        "network",
        "inspect",
        "bridge",
        "--format",
        "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}{{end}}",
    ])
    .expect("the engine's default bridge");
    match config.split_whitespace().collect::<Vec<_>>()[..] {
        [gateway, _] => gateway.parse().expect("a gateway address"),
        [subnet] => {
            let network: std::net::Ipv4Addr = subnet.split('/').next().unwrap().parse().unwrap();
            std::net::Ipv4Addr::from(u32::from(network) + 1).into()
        }
        _ => panic!("the default bridge has no IPv4 subnet: {config}"),
    }
}

/// The gateway of `docker_gwbridge` (made by `docker swarm init`): the address of this machine
/// a swarm's containers with a way out reach.
fn swarm_gateway() -> std::net::IpAddr {
    docker(&[
        "network",
        "inspect",
        "docker_gwbridge",
        "--format",
        "{{(index .IPAM.Config 0).Gateway}}",
    ])
    .expect("the swarm's docker_gwbridge network")
    .trim()
    .parse()
    .expect("a gateway address")
}

/// Writes `contents` at `rel` under the world's caller home.
fn login_file(world: &World, rel: &str, contents: &str) {
    let path = world.agent_home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// The function call outputs Codex sent back, as text.
fn outputs_sent(server: &ModelServer) -> String {
    server
        .requests()
        .iter()
        .filter_map(|r| r.json())
        .flat_map(|body| body["input"].as_array().cloned().unwrap_or_default())
        .filter(|item| {
            item["type"] == "function_call_output" || item["type"] == "custom_tool_call_output"
        })
        .map(|item| item["output"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths in the agent's home the box left for the session's next turn (kept unopened in
/// the run's folder).
fn kept_home(world: &World, id: &str) -> Vec<String> {
    let run_dir = world
        .home
        .run_dir(&runner_contract::SessionId::parse(id).unwrap());
    let bytes = std::fs::read(engine_docker::RemotePlan::home_file_in(&run_dir)).unwrap();
    let mut archive = tar::Archive::new(&bytes[..]);
    archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}

/// Codex as a container on the engine (which takes the box's seccomp profile): its own
/// sandbox starts, lets the fix into the workspace and refuses a write to its home; its
/// `auth.json` is in the box for its commands to read, and never comes back.
fn codex_runs_on_an_engine_with_its_own_sandbox_on(
    runtime: &tokio::runtime::Runtime,
    image: &TestImage,
    codex: &Path,
) {
    let world = World::demo();
    login_file(
        &world,
        ".codex/auth.json",
        &format!("{{\"OPENAI_API_KEY\":\"{CODEX_LOGIN_TOKEN}\"}}\n"),
    );
    let server = runtime
        .block_on(ModelServer::start_on(
            bridge_gateway(),
            Script::new([
                exec("call_fix", FIX),
                exec(
                    "call_outside",
                    "echo escaped > \"$HOME/outside.txt\" && echo wrote-outside || echo refused-outside",
                ),
                exec(
                    "call_login",
                    "read -r login < \"$HOME/.codex/auth.json\" && echo \"login: $login\"",
                ),
                Turn::text("Fixed the month; the write outside the workspace was refused."),
            ]),
        ))
        .expect("the scripted model server on the bridge's gateway");
    let id = runner_contract::SessionId::new_random().to_string();
    let out = run(codehands(&world, image)
        .env("CODEX_BIN", codex)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", support::CODEX_TEST_KEY)
        .args(["run", ".", "Fix the failing test.", "--agent", "codex"])
        .args(["--model", "scripted-model", "--engine", "docker"])
        .args(["--then", "keep", "--json", "--session-id", &id]));
    let events = json_lines(&out);
    let all = events.iter().map(|e| e.to_string()).collect::<String>();
    assert!(
        out.status.success()
            && types(&events).last().map(String::as_str) == Some("approval.requested"),
        "{:?}\n{}\n{all}",
        types(&events),
        text(&out.stderr)
    );
    let said = outputs_sent(&server);
    assert!(
        said.contains("refused-outside") && said.contains("Read-only file system"),
        "Codex's own sandbox refused the write outside the workspace: {said}"
    );
    assert!(!said.contains("wrote-outside"), "{said}");
    assert!(
        said.contains("login: ") && said.contains(CODEX_LOGIN_TOKEN),
        "the login file is in the box, readable by the agent's commands: {said}"
    );
    assert!(
        !all.contains(support::CODEX_TEST_KEY),
        "the env's key is in no event"
    );
    let diff = text(&run(codehands(&world, image).args(["diff", &id])).stdout);
    assert!(diff.contains("getMonth() + 1"), "{diff}\n{all}");
    let home = kept_home(&world, &id);
    assert!(
        home.iter().any(|p| p.starts_with(".codex/")),
        "the box kept Codex's home for a follow-up: {home:?}"
    );
    assert!(
        !home
            .iter()
            .any(|p| p.ends_with("auth.json") || p.ends_with("outside.txt")),
        "the read-only login file never comes back, and the refused write left nothing: {home:?}"
    );
    remote::wait_while_removing(&world, &id);
    let left = docker(&[
        "ps",
        "--all",
        "--quiet",
        "--filter",
        &format!("label=codehands.session={id}"),
    ])
    .unwrap_or_default();
    assert!(left.trim().is_empty(), "the box of {id} left: {left}");
}

/// Codex on a swarm that cannot give a service the box's profile (API below 1.44: this
/// machine's Docker 20.10): refused with the reason, and nothing made on the swarm.
fn codex_on_an_old_swarm_is_refused_with_the_reason(
    runtime: &tokio::runtime::Runtime,
    image: &TestImage,
    codex: &Path,
) {
    let api = docker(&["version", "--format", "{{.Server.APIVersion}}"]).unwrap_or_default();
    let api: Vec<usize> = api
        .trim()
        .split('.')
        .filter_map(|n| n.parse().ok())
        .collect();
    if api.as_slice() >= [1usize, 44].as_slice() {
        eprintln!("note: this swarm takes a service's seccomp profile; the refusal is not checked");
        return;
    }
    let world = World::demo();
    let server = runtime
        .block_on(ModelServer::start_on(
            swarm_gateway(),
            Script::new([Turn::text("Never asked.")]),
        ))
        .expect("the scripted model server on the swarm's gateway");
    let id = runner_contract::SessionId::new_random().to_string();
    let out = run(codehands(&world, image)
        .env("CODEX_BIN", codex)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", support::CODEX_TEST_KEY)
        .args(["run", ".", "Fix the failing test.", "--agent", "codex"])
        .args(["--model", "scripted-model", "--engine", "swarm"])
        .args(["--then", "keep", "--json", "--session-id", &id]));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        said.contains("runs its own sandbox") && said.contains("--engine docker"),
        "refused with the reason and what to do: {said}"
    );
    assert!(
        server.requests().is_empty(),
        "Codex never ran without its sandbox"
    );
    remote::wait_while_removing(&world, &id);
    let left = left_on_swarm(&id);
    assert!(left.is_empty(), "nothing made on the swarm: {left}");
}

/// Claude Code as a swarm job, its only login the credentials file in the caller's home
/// (handed in with the inputs, as Swarm secrets): the model server sees that file's token and
/// no key; the file is in the box, readable and not writable (Claude Code itself refuses a
/// command that writes it, so the check asks the kernel), and never comes back with the home.
fn claude_code_runs_on_the_swarm_logged_in_by_its_file(
    runtime: &tokio::runtime::Runtime,
    image: &TestImage,
    claude: &Path,
) {
    let world = World::demo();
    login_file(
        &world,
        ".claude/.credentials.json",
        &json!({ "claudeAiOauth": {
            "accessToken": CLAUDE_LOGIN_TOKEN,
            "refreshToken": "sk-ant-ort01-not-used",
            "expiresAt": 4_102_444_800_000u64,
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": "pro",
        }})
        .to_string(),
    );
    let id = runner_contract::SessionId::new_random();
    let worktree = runtime.block_on(support::worktree_for(&world, &id));
    let file = worktree.join("src/date.js").display().to_string();
    let server = runtime
        .block_on(ModelServer::start_on(
            swarm_gateway(),
            Script::new([
                Turn::blocks([Block::tool_use(
                    "toolu_read",
                    "Read",
                    json!({ "file_path": file }),
                )]),
                Turn::blocks([Block::tool_use(
                    "toolu_login",
                    "Bash",
                    json!({
                        "command": "f=~/.claude/.credentials.json; test -r $f && echo login-readable; test -w $f && echo login-writable || echo login-read-only",
                        "description": "Check the login file's access",
                    }),
                )]),
                Turn::blocks([Block::tool_use(
                    "toolu_fix",
                    "Edit",
                    json!({ "file_path": file, "old_string": "${date.getMonth()}", "new_string": "${date.getMonth() + 1}" }),
                )]),
                Turn::text("Fixed: the month now starts at one."),
            ]),
        ))
        .expect("the scripted model server on the swarm's gateway");
    let id = id.to_string();
    let out = run(codehands(&world, image)
        .env("CLAUDE_BIN", claude)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .args([
            "run",
            ".",
            "Fix the failing test.",
            "--agent",
            "claude-code",
        ])
        .args([
            "--engine",
            "swarm",
            "--then",
            "keep",
            "--json",
            "--session-id",
            &id,
        ]));
    let events = json_lines(&out);
    let all = events.iter().map(|e| e.to_string()).collect::<String>();
    assert!(
        out.status.success()
            && types(&events).last().map(String::as_str) == Some("approval.requested"),
        "{:?}\n{}\n{all}",
        types(&events),
        text(&out.stderr)
    );
    let requests = server.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {CLAUDE_LOGIN_TOKEN}").as_str()),
            "every call carries the login file's token"
        );
        assert_eq!(
            request.header("x-api-key"),
            None,
            "and no key from an env var"
        );
    }
    let results = support::tool_results(&server).join("\n");
    assert!(
        results.contains("login-readable")
            && results.contains("login-read-only")
            && !results.contains("login-writable"),
        "the login file is read-only in the box: {results}"
    );
    let diff = text(&run(codehands(&world, image).args(["diff", &id])).stdout);
    assert!(diff.contains("getMonth() + 1"), "{diff}\n{all}");
    let home = kept_home(&world, &id);
    assert!(
        home.iter().any(|p| p.starts_with(".claude/")),
        "the box kept Claude Code's home: {home:?}"
    );
    assert!(
        !home.iter().any(|p| p.ends_with(".credentials.json")),
        "the read-only login file never comes back with the home: {home:?}"
    );
    remote::wait_while_removing(&world, &id);
    let left = left_on_swarm(&id);
    assert!(left.is_empty(), "the box of {id} left on the swarm: {left}");
}
