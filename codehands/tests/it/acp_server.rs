//! `codehands acp` driven by a real ACP client: the Agent Client Protocol's official Python
//! SDK (PyPI `agent-client-protocol`, the `acp` module, pinned in the venv `cargo xtask
//! install` makes), through `tests/it/support/acp_client.py`, which checks every message
//! codehands sends against the SDK's models. The inner agents are the fake agent (a replay of
//! Claude Code on the demo repo) and the tests' own ACP agent (a three-line profile). The
//! connection's own tests write raw bytes to its stdin (lines that are no message, folders
//! no session can use) and need no Python.

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::World;

/// The ACP Python SDK the client is made with (xtask's `agents/acp_sdk.rs` pins it).
const ACP_SDK: &str = "0.12.1";

/// The pinned ACP Python SDK's venv (`cargo xtask install` makes it), or a skip (a failure
/// under CI).
fn python() -> Option<PathBuf> {
    let python = runner_testkit::agents::cache_root()
        .join(format!("tools/acp-python-sdk-{ACP_SDK}/venv/bin/python"));
    let script = format!(
        "import importlib.metadata as m, acp, acp.schema; \
         assert m.version('agent-client-protocol') == '{ACP_SDK}'"
    );
    let ok = Command::new(&python)
        .args(["-c", &script])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(python)
    } else {
        runner_testkit::skip(&format!(
            "no venv of the ACP Python SDK {ACP_SDK}: run `cargo xtask install`"
        ));
        None
    }
}

/// Runs the client's `steps` against `codehands acp --agent AGENT`; what it printed.
fn client(world: &World, python: &Path, agent: &str, steps: Value) -> Vec<Value> {
    client_with(world, python, &["--agent", agent], steps)
}

/// Runs the client's `steps` against `codehands acp ARGS`; what it printed.
fn client_with(world: &World, python: &Path, args: &[&str], steps: Value) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/acp_client.py");
    let mut cmd = Command::new(python);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &world.agent_home)
        .env("CODEHANDS_HOME", world.home.root())
        .env("CODEHANDS_FAKE_DELAY_MS", "0")
        .arg(&script)
        .arg(steps.to_string())
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_codehands"))
        .arg("acp")
        .args(args);
    let out = support::run(&mut cmd);
    let seen = support::json_lines(&out);
    assert!(
        out.status.success(),
        "{seen:#?}\n{}",
        support::text(&out.stderr)
    );
    let invalid: Vec<&Value> = seen.iter().filter(|s| s.get("invalid").is_some()).collect();
    assert!(
        invalid.is_empty(),
        "messages the ACP SDK's models refuse: {invalid:#?}"
    );
    seen
}

fn updates<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter_map(|s| s.get("update"))
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn stop_reasons(seen: &[Value]) -> Vec<Value> {
    seen.iter()
        .filter_map(|s| s.get("stopReason").or(s.get("error")).cloned())
        .collect()
}

fn asked(seen: &[Value]) -> Vec<(&Value, &Value)> {
    seen.iter()
        .filter_map(|s| Some((s.get("asked")?, s.get("chose")?)))
        .collect()
}

fn branch(world: &World) -> String {
    world
        .branches()
        .into_iter()
        .find(|b| b.starts_with("codehands/"))
        .expect("the session's branch")
}

/// The tests' own ACP agent as the three-line profile `acp-test` in the world's home.
fn with_acp_test_agent(world: &World) -> Option<()> {
    acp_test_profile(world, "acp-test", &[]);
    Some(())
}

/// The tests' own ACP agent as the profile `name`, run with `args`.
fn acp_test_profile(world: &World, name: &str, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agent-acp/tests/agent/acp_test_agent.py")
        .canonicalize()
        .unwrap();
    let agents = world.home.root().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join(format!("{name}.toml")),
        format!(
            "name = {name:?}\nprogram = {:?}\nprotocol = \"acp\"\nargs = {args:?}\n",
            script.display().to_string()
        ),
    )
    .unwrap();
}

/// The codehands session's record, as JSON.
fn record(world: &World, session: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(world.home.sessions_dir().join(format!("{session}.json")))
            .unwrap(),
    )
    .unwrap()
}

fn session_of(seen: &[Value]) -> String {
    seen.iter()
        .find_map(|s| s["session"].as_str())
        .expect("a session")
        .to_owned()
}

#[test]
fn a_prompt_runs_the_fake_agent_and_approve_commits_on_the_branch() {
    let Some(python) = python() else { return };
    let world = World::demo();
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "fake",
        serde_json::json!([
            {"new": cwd},
            {"prompt": runner_fake::demo_repo::PROMPT, "approval": "approve"},
        ]),
    );
    let init = &seen[0]["initialized"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentInfo"]["name"], "codehands");
    assert!(
        !updates(&seen, "agent_message_chunk").is_empty(),
        "{seen:#?}"
    );
    let calls = updates(&seen, "tool_call");
    assert!(calls.iter().any(|c| c["kind"] == "edit"), "{calls:#?}");
    assert!(calls.iter().any(|c| c["kind"] == "execute"), "{calls:#?}");
    let ends = updates(&seen, "tool_call_update");
    assert!(ends.iter().any(|u| u["status"] == "completed"), "{ends:#?}");
    let asked = asked(&seen);
    assert_eq!(asked.len(), 1, "the end-of-turn question only: {asked:#?}");
    let options: Vec<&Value> = asked[0].0["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["optionId"])
        .collect();
    assert_eq!(options, ["approve", "keep", "reject"]);
    assert_eq!(stop_reasons(&seen), ["end_turn"]);
    let said: String = updates(&seen, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(said.contains("Approved: commit"), "{said}");
    let branch = branch(&world);
    let fixed = world.git(&["show", &format!("{branch}:src/date.js")]);
    assert!(fixed.contains("getMonth() + 1"), "{fixed}");
    assert_eq!(seen.last().unwrap()["exit"], 0);
}

#[test]
fn a_relayed_permission_a_kept_turn_then_a_follow_up_approved() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-test",
        serde_json::json!([
            {"new": cwd},
            {"prompt": "Please ask first.", "permission": "allow", "approval": "keep"},
            {"prompt": "Now the tour.", "approval": "approve"},
        ]),
    );
    let asked = asked(&seen);
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert_eq!(asked[0].0["toolCall"]["title"], "touch allowed.txt");
    assert_eq!(asked[0].1, "allow");
    // Every request names its kind: the agent's command, then the approvals (a commit into
    // the repository, which a read-only client policy refuses).
    let kinds: Vec<&Value> = asked.iter().map(|(a, _)| &a["toolCall"]["kind"]).collect();
    assert_eq!(kinds, ["execute", "edit", "edit"], "{asked:#?}");
    assert!(
        asked[1].0["options"][1]["name"]
            .as_str()
            .unwrap()
            .contains("a next prompt follows up"),
        "{asked:#?}"
    );
    assert_eq!(
        (asked[1].1.as_str(), asked[2].1.as_str()),
        (Some("keep"), Some("approve"))
    );
    assert_eq!(stop_reasons(&seen), ["end_turn", "end_turn"]);
    let said: String = updates(&seen, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(said.contains("Allowed: I made allowed.txt."), "{said}");
    assert!(said.contains("Kept: codehands session"), "{said}");
    assert!(
        said.contains("I wrote acp.txt."),
        "the follow-up ran: {said}"
    );
    let usage = updates(&seen, "usage_update");
    assert_eq!(usage.len(), 1, "{usage:#?}");
    assert_eq!(usage[0]["cost"]["amount"], 0.0125, "{usage:#?}");
    // The context as the agent said it.
    assert_eq!(
        (&usage[0]["used"], &usage[0]["size"]),
        (&json!(1200), &json!(200000))
    );
    // Live, the person's prompt (and our repo notes ahead of it, which the agent echoes) is
    // not sent back to the client as the user's message.
    assert!(
        updates(&seen, "user_message_chunk").is_empty(),
        "{:#?}",
        updates(&seen, "user_message_chunk")
    );
    // One session, two turns, one commit with both changes.
    let branch = branch(&world);
    assert_eq!(world.git(&["show", &format!("{branch}:allowed.txt")]), "");
    assert!(
        world
            .git(&["show", &format!("{branch}:acp.txt")])
            .contains("ACP test agent")
    );
    assert_eq!(
        world
            .git(&["rev-list", "--count", &format!("main..{branch}")])
            .trim(),
        "1"
    );
}

#[test]
fn cancel_mid_turn_ends_the_prompt_cancelled_and_load_replays_the_session() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-test",
        serde_json::json!([
            {"new": cwd},
            {"prompt": "Please wait.", "cancel_after": "tool_call"},
        ]),
    );
    assert_eq!(stop_reasons(&seen), ["cancelled"], "{seen:#?}");
    assert!(
        asked(&seen).is_empty(),
        "a cancelled turn is not put to the client"
    );
    let session = seen
        .iter()
        .find_map(|s| s["session"].as_str())
        .unwrap()
        .to_owned();
    // The session is kept (awaiting approval) and a new connection loads it.
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(world.home.sessions_dir().join(format!("{session}.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["state"], "awaiting_approval");
    let seen = client(
        &world,
        &python,
        "acp-test",
        serde_json::json!([{"load": session, "cwd": cwd}]),
    );
    assert!(seen.iter().any(|s| s["loaded"] == true), "{seen:#?}");
    let said: Vec<&str> = updates(&seen, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(said.contains(&"Waiting for a long command."), "{said:?}");
    assert!(
        updates(&seen, "tool_call")
            .iter()
            .any(|c| c["title"] == "sleep 600"),
        "{seen:#?}"
    );
}

#[test]
fn a_turn_put_to_a_client_that_does_not_decide_is_kept() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    // The client answers no option to the end-of-turn question.
    let seen = client(
        &world,
        &python,
        "acp-test",
        serde_json::json!([
            {"new": cwd},
            {"prompt": "Write the file.", "approval": "none"},
        ]),
    );
    assert_eq!(stop_reasons(&seen), ["end_turn"]);
    let session = seen
        .iter()
        .find_map(|s| s["session"].as_str())
        .unwrap()
        .to_owned();
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(world.home.sessions_dir().join(format!("{session}.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["state"], "awaiting_approval", "kept, never lost");
    assert_eq!(record["isolation"], "box", "boxed by default");
    let plan = world
        .home
        .root()
        .join("runs")
        .join(&session)
        .join("box.json");
    assert!(
        plan.is_file(),
        "the box's plan is kept until the session is decided"
    );
    assert!(world.worktree_dirs().len() == 1);
}

#[test]
fn isolation_none_runs_every_prompt_unboxed() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client_with(
        &world,
        &python,
        &["--agent", "acp-test", "--isolation", "none"],
        serde_json::json!([
            {"new": cwd},
            {"prompt": "Write the file.", "approval": "none"},
        ]),
    );
    assert_eq!(stop_reasons(&seen), ["end_turn"]);
    let session = seen.iter().find_map(|s| s["session"].as_str()).unwrap();
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(world.home.sessions_dir().join(format!("{session}.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["isolation"], "none");
    assert!(
        !world
            .home
            .root()
            .join("runs")
            .join(session)
            .join("box.json")
            .exists(),
        "no box was made"
    );
}

#[test]
fn a_client_that_goes_away_mid_turn_leaves_the_session_kept_never_lost() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-test",
        serde_json::json!([
            {"new": cwd},
            // Slowly: the turn surely goes on when the client leaves, however loaded the
            // machine (the whole tour otherwise fits in the time the client takes to leave).
            {"prompt": "Take the tour slowly.", "leave_after": "agent_message_chunk"},
        ]),
    );
    assert!(seen.iter().any(|s| s["left"] == true), "{seen:#?}");
    let session = seen
        .iter()
        .find_map(|s| s["session"].as_str())
        .unwrap()
        .to_owned();
    // The turn goes on without the client, in its supervisor, to its end.
    let out = support::run(
        world
            .codehands()
            .args(["events", &session, "--json", "--follow"]),
    );
    let events = support::json_lines(&out);
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some("approval.requested".into()),
        "{events:#?}"
    );
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(world.home.sessions_dir().join(format!("{session}.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["state"], "awaiting_approval", "kept, never lost");
}

/// `codehands acp --agent fake` fed `input` as raw bytes, its stdin then closed: whether it
/// exited 0, and each line it wrote, as JSON.
fn raw(world: &World, input: Vec<u8>) -> (bool, Vec<Value>) {
    let mut child = world
        .codehands()
        .args(["acp", "--agent", "fake"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Written from a thread: a large input must not wait for output nobody reads yet.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let lines = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            serde_json::from_slice(line).unwrap_or_else(|e| {
                panic!(
                    "{e}: {}\n{}",
                    support::text(line),
                    support::text(&out.stderr)
                )
            })
        })
        .collect();
    (out.status.success(), lines)
}

/// A request as one line.
fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    let mut line =
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    line.push('\n');
    line.into_bytes()
}

fn initialize(id: u64) -> Vec<u8> {
    request(id, "initialize", json!({"protocolVersion": 1}))
}

/// The answer to the request `id`.
fn answer(seen: &[Value], id: u64) -> &Value {
    seen.iter()
        .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
        .unwrap_or_else(|| panic!("no answer to {id}: {seen:#?}"))
}

/// The parse errors' messages, in order (id null).
fn parse_errors(seen: &[Value]) -> Vec<String> {
    seen.iter()
        .filter(|m| m["id"].is_null() && m["error"]["code"] == -32700)
        .map(|m| m["error"]["message"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_line_that_is_no_message_is_a_parse_error_and_the_next_request_is_answered() {
    let world = World::new(&[("README.md", "# demo\n")]);
    let mut input = Vec::new();
    input.extend(b"{\"jsonrpc\":\"2.0\",\"id\":\xff\xfe}\n");
    input.extend(initialize(1));
    input.extend(b"{\"jsonrpc\":\"2.0\",\0\"id\":5,\"method\":\"initialize\"}\n");
    input.extend(initialize(2));
    // One byte over the cap (16 MiB), a request's shape at its start.
    let mut long = b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"initialize\",\"x\":\"".to_vec();
    long.resize(codehands::acp_wire::MAX_LINE + 1, b'a');
    input.extend(long);
    input.push(b'\n');
    input.extend(initialize(3));
    // The last line, cut by the end of input: a parse error, then a clean stop.
    input.extend(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initia");
    let (exited_0, seen) = raw(&world, input);
    assert!(exited_0, "{seen:#?}");
    let errors = parse_errors(&seen);
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].contains("not UTF-8"), "{errors:#?}");
    assert!(errors[1].contains("not a JSON-RPC message"), "{errors:#?}");
    assert!(
        errors[2].contains(&format!("{} bytes", codehands::acp_wire::MAX_LINE + 1)),
        "{errors:#?}"
    );
    assert!(errors[3].contains("EOF while parsing"), "{errors:#?}");
    for id in 1..=3 {
        assert_eq!(
            answer(&seen, id)["result"]["protocolVersion"],
            1,
            "{seen:#?}"
        );
    }
    for id in [4, 5, 6] {
        assert!(
            !seen.iter().any(|m| m["id"] == id),
            "a broken line is never taken as request {id}: {seen:#?}"
        );
    }
}

#[test]
fn a_whole_last_line_without_its_newline_is_answered_then_the_server_stops() {
    let world = World::new(&[("README.md", "# demo\n")]);
    let mut input = initialize(1);
    input.pop();
    let (exited_0, seen) = raw(&world, input);
    assert!(exited_0, "{seen:#?}");
    assert_eq!(answer(&seen, 1)["result"]["agentInfo"]["name"], "codehands");
}

/// Every file and folder under `dir`, relative to it.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(next) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            found.push(entry.path().strip_prefix(dir).unwrap().to_owned());
            if entry.file_type().unwrap().is_dir() {
                todo.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn session_new_in_a_folder_no_session_can_use_is_refused_saying_why_and_nothing_is_made() {
    let world = World::new(&[("README.md", "# demo\n")]);
    let plain = world.dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let empty = world.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    support::git(&empty, &["init", "--quiet"]);
    let missing = world.dir.path().join("missing");
    // A repo inside codehands' home (as a worktree of its is).
    let inside = world.home.root().join("a-repo");
    std::fs::create_dir_all(&inside).unwrap();
    support::git(&inside, &["init", "--quiet"]);
    support::git(
        &inside,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e.invalid",
            "commit",
            "--quiet",
            "--allow-empty",
            "-m",
            "base",
        ],
    );
    let (exited_0, _) = raw(&world, initialize(0));
    assert!(exited_0);
    let home_before = tree(world.home.root());

    let folders = [&plain, &empty, &missing, &inside];
    let mut input = initialize(0);
    for (id, folder) in (1..).zip(folders) {
        input.extend(request(
            id,
            "session/new",
            json!({"cwd": folder, "mcpServers": []}),
        ));
    }
    input.extend(request(
        9,
        "session/new",
        json!({"cwd": "relative/repo", "mcpServers": []}),
    ));
    let (exited_0, seen) = raw(&world, input);
    assert!(exited_0, "{seen:#?}");
    let refusals: Vec<(u64, String)> = (1..=4)
        .chain([9])
        .map(|id| {
            let error = &answer(&seen, id)["error"];
            assert_eq!(error["code"], -32602, "{seen:#?}");
            (id, error["message"].as_str().unwrap().to_owned())
        })
        .collect();
    let said = |id: u64| &refusals.iter().find(|(i, _)| *i == id).unwrap().1;
    for (id, folder) in (1..).zip(folders) {
        assert!(
            said(id).contains(&folder.display().to_string()),
            "{refusals:#?}"
        );
    }
    for id in [1, 2] {
        assert!(
            said(id).contains("is not a git repo or has no commits yet")
                && said(id).contains("at least one commit"),
            "{refusals:#?}"
        );
    }
    assert!(said(3).contains("does not exist"), "{refusals:#?}");
    assert!(said(4).contains("inside codehands' home"), "{refusals:#?}");
    assert!(said(9).contains("not an absolute path"), "{refusals:#?}");
    assert_eq!(
        tree(world.home.root()),
        home_before,
        "nothing made in the home"
    );

    // The repo itself is taken.
    let (_, seen) = raw(
        &world,
        [
            initialize(0),
            request(
                1,
                "session/new",
                json!({"cwd": world.repo, "mcpServers": []}),
            ),
        ]
        .concat(),
    );
    assert!(
        answer(&seen, 1)["result"]["sessionId"].is_string(),
        "{seen:#?}"
    );
}

#[tokio::test]
async fn session_load_of_a_session_whose_repo_is_gone_is_refused_naming_it() {
    use runner_contract::{AgentName, Runner, StartOptions};
    let world = World::demo();
    let runner = world.fake_runner("replay", 0);
    let id = support::new_id();
    let mut options = StartOptions::new(
        id,
        &world.repo,
        runner_fake::demo_repo::PROMPT,
        AgentName::parse("fake").unwrap(),
    );
    options.isolation = runner_contract::Isolation::None;
    let events = runner_testkit::runner::collect(runner.start(options).await.unwrap()).await;
    assert_eq!(support::types(&events).last(), Some(&"approval.requested"));
    let load = |cwd: &Path| {
        [
            initialize(0),
            request(
                1,
                "session/load",
                json!({"sessionId": id.to_string(), "cwd": cwd, "mcpServers": []}),
            ),
        ]
        .concat()
    };
    std::fs::rename(&world.repo, world.dir.path().join("moved")).unwrap();
    let (exited_0, seen) = raw(&world, load(&world.repo));
    assert!(exited_0, "{seen:#?}");
    let error = &answer(&seen, 1)["error"];
    assert_eq!(error["code"], -32602, "{seen:#?}");
    let said = error["message"].as_str().unwrap();
    assert!(
        said.contains(&world.repo.display().to_string())
            && said.contains("put the repository back there, or open a new session"),
        "{said}"
    );
    // Put back, it loads.
    std::fs::rename(world.dir.path().join("moved"), &world.repo).unwrap();
    let (_, seen) = raw(&world, load(&world.repo));
    assert_eq!(answer(&seen, 1)["result"], json!({}), "{seen:#?}");
}

#[test]
fn a_cancel_right_after_the_prompt_ends_the_turn_within_a_second_and_the_session_goes_on() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-test",
        json!([
            {"new": cwd},
            // The agent would wait ten minutes for a cancel: only the cancel ends this turn.
            {"prompt": "Please wait.", "cancel_after": "prompt"},
            {"prompt": "Write the file.", "approval": "approve"},
        ]),
    );
    assert_eq!(stop_reasons(&seen), ["cancelled", "end_turn"], "{seen:#?}");
    let answered_in = seen
        .iter()
        .find_map(|s| s["cancelToAnswerMs"].as_u64())
        .unwrap();
    assert!(
        answered_in < 1000,
        "the cancel was answered after {answered_in} ms"
    );
    let branch = branch(&world);
    assert!(
        world
            .git(&["show", &format!("{branch}:acp.txt")])
            .contains("ACP test agent")
    );
}

#[test]
fn an_agent_that_ignores_the_cancel_is_stopped_after_the_grace() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-test",
        json!([
            {"new": cwd},
            {"prompt": "Please wait, stubborn.", "cancel_after": "tool_call"},
        ]),
    );
    assert_eq!(stop_reasons(&seen), ["cancelled"], "{seen:#?}");
    let answered_in = seen
        .iter()
        .find_map(|s| s["cancelToAnswerMs"].as_u64())
        .unwrap();
    assert!(
        answered_in < 1000,
        "the cancel was answered after {answered_in} ms"
    );
    // The server waited for the stop before it exited: the agent is gone, the change kept.
    let session = session_of(&seen);
    assert_eq!(record(&world, &session)["state"], "stopped");
    assert_eq!(world.worktree_dirs().len(), 1);
}

#[test]
fn a_follow_up_to_an_agent_that_cannot_continue_is_refused_and_the_session_stays_approvable() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    acp_test_profile(&world, "acp-once", &["--no-load"]);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-once",
        json!([
            {"new": cwd},
            {"prompt": "Write the file.", "approval": "keep"},
            {"prompt": "And another one."},
        ]),
    );
    let asked = asked(&seen);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let keep = asked[0].0["options"][1]["name"].as_str().unwrap();
    assert!(
        !keep.contains("follows up") && keep.contains("codehands approve"),
        "keep is not offered as a way to continue: {keep}"
    );
    let refused = seen.iter().find(|s| s.get("error").is_some()).unwrap();
    assert_eq!(refused["code"], -32602, "{refused:#?}");
    let said = refused["error"].as_str().unwrap();
    assert!(
        said.contains("cannot continue") && said.contains("nothing was touched"),
        "{said}"
    );
    let session = session_of(&seen);
    assert_eq!(record(&world, &session)["state"], "awaiting_approval");
    assert_eq!(world.worktree_dirs().len(), 1, "the worktree is kept");
    let branch = branch(&world);

    // `codehands send` is refused the same way, before anything is touched.
    let out = support::run(world.codehands().args(["send", &session, "More."]));
    assert!(!out.status.success());
    let said = support::text(&out.stderr);
    assert!(said.contains("cannot continue"), "{said}");
    assert_eq!(record(&world, &session)["state"], "awaiting_approval");

    // `codehands agents` does not promise it resumes.
    let out = support::run(world.codehands().arg("agents"));
    let listed = support::text(&out.stdout);
    let resume = listed
        .lines()
        .skip_while(|l| !l.starts_with("acp-once"))
        .find(|l| l.contains("resume:"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        resume.contains("resume: if the agent offers session/load"),
        "{listed}"
    );

    // Still approvable: the one change becomes one commit.
    let out = support::run(world.codehands().args(["approve", &session, "-m", "once"]));
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    assert!(
        world
            .git(&["show", &format!("{branch}:acp.txt")])
            .contains("ACP test agent")
    );
}

#[test]
fn an_agent_that_says_cancelled_when_nobody_cancelled_fails_the_turn() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-test",
        json!([{"new": cwd}, {"prompt": "Please give up."}]),
    );
    assert!(asked(&seen).is_empty(), "nothing is put to the client");
    let failed = seen.iter().find(|s| s.get("error").is_some()).unwrap();
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("though nobody cancelled it"),
        "{failed:#?}"
    );
    assert_eq!(record(&world, &session_of(&seen))["state"], "failed");
}

#[test]
fn a_cancel_while_the_change_is_put_to_the_client_answers_cancelled_and_keeps_it() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(
        &world,
        &python,
        "acp-test",
        json!([
            {"new": cwd},
            {"prompt": "Write the file.", "cancel_after": "asked"},
        ]),
    );
    assert_eq!(stop_reasons(&seen), ["cancelled"], "{seen:#?}");
    assert_eq!(
        record(&world, &session_of(&seen))["state"],
        "awaiting_approval"
    );
}

#[test]
fn a_session_loaded_before_its_first_prompt_runs_it_and_the_cost_adds_up() {
    let Some(python) = python() else { return };
    let world = World::new(&[("README.md", "# demo\n")]);
    with_acp_test_agent(&world);
    let cwd = world.repo.display().to_string();
    let seen = client(&world, &python, "acp-test", json!([{"new": cwd}]));
    let session = session_of(&seen);
    // A new connection loads it, then runs two turns that each cost 0.0125.
    let seen = client(
        &world,
        &python,
        "acp-test",
        json!([
            {"load": session, "cwd": cwd},
            {"prompt": "Take the tour.", "approval": "keep"},
            {"prompt": "The tour again.", "approval": "approve"},
        ]),
    );
    assert_eq!(stop_reasons(&seen), ["end_turn", "end_turn"], "{seen:#?}");
    let costs: Vec<&Value> = updates(&seen, "usage_update")
        .iter()
        .map(|u| &u["cost"]["amount"])
        .collect();
    assert_eq!(
        costs,
        [0.0125, 0.025],
        "the session's cost so far, each time"
    );
    assert_eq!(record(&world, &session)["state"], "approved");
}

#[test]
fn json_rpc_edge_cases_are_answered_as_the_spec_says() {
    let world = World::new(&[("README.md", "# demo\n")]);
    let mut input = Vec::new();
    input.extend(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]\n");
    input.extend(b"{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n");
    input.extend(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n");
    input.extend(initialize(3));
    let (exited_0, seen) = raw(&world, input);
    assert!(exited_0, "{seen:#?}");
    let batch = seen
        .iter()
        .find(|m| m["error"]["code"] == -32600 && m["id"].is_null())
        .unwrap_or_else(|| panic!("{seen:#?}"));
    assert!(
        batch["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch")
    );
    assert_eq!(answer(&seen, 2)["error"]["code"], -32600, "{seen:#?}");
    let null_id = seen
        .iter()
        .find(|m| m["id"].is_null() && m.get("result").is_some())
        .unwrap_or_else(|| panic!("a request with id null is answered: {seen:#?}"));
    assert_eq!(null_id["result"]["protocolVersion"], 1);
    assert_eq!(answer(&seen, 3)["result"]["protocolVersion"], 1);
}
