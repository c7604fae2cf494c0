//! The `codehands` command line with the built-in `mistral-vibe`: the real Mistral Vibe
//! 2.26.1 (`vibe-acp`, pinned by `cargo xtask agents`) driven over the Agent Client Protocol,
//! talking to the scripted model server (OpenAI Chat Completions, streamed) on 127.0.0.1.
//! Approve commits its change, a permission request is allowed and denied from another
//! process (`codehands answer`), an interrupt ends the turn, and a follow-up loads Vibe's
//! session. The runner's side of Vibe's whole life (reject too) is agent-vibe's lifecycle
//! suite (`agent-vibe/tests/it/lifecycle.rs`).

use crate::support;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use model_server::{Block, ModelServer, Script, Turn};
use serde_json::{Value, json};
use support::World;

const ID: &str = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

/// The pinned `vibe-acp` from the cache (or `VIBE_ACP_BIN`), or a skip (a failure under CI).
fn vibe() -> Option<PathBuf> {
    let cached = agent_vibe::install::program(&agent_vibe::install::folder(
        &runner_testkit::agents::cache_root(),
    ));
    let found = runner_testkit::agents::find_program("VIBE_ACP_BIN", cached);
    if found.is_none() {
        runner_testkit::skip("Mistral Vibe is not installed: run `cargo xtask agents`");
    }
    found
}

/// `codehands` pointed at the scripted server, with this Vibe.
fn codehands(world: &World, vibe: &PathBuf, server: &ModelServer) -> Command {
    let mut cmd = world.codehands();
    cmd.current_dir(&world.repo)
        .env("NO_COLOR", "1")
        .env("VIBE_ACP_BIN", vibe)
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("OPENAI_API_KEY", "sk-dummy-for-tests");
    cmd
}

fn read(id: &str, path: &str) -> Block {
    Block::tool_use(id, "read_file", json!({ "path": path }))
}

fn fix_month(id: &str) -> Block {
    Block::tool_use(
        id,
        "edit",
        json!({ "file_path": "src/date.js", "old_string": "getMonth()}", "new_string": "getMonth() + 1}" }),
    )
}

fn bash(id: &str, command: &str) -> Block {
    Block::tool_use(id, "bash", json!({ "command": command }))
}

/// Reads the file, fixes the month, says so.
fn fix_script() -> Script {
    Script::new([
        Turn::blocks([Block::text("Let me look."), read("call_v1", "src/date.js")]),
        Turn::blocks([fix_month("call_v2")]),
        Turn::text("Fixed: the month now starts at one."),
    ])
}

fn events_of(out: &Output) -> Vec<Value> {
    support::json_lines(out)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn branch(world: &World) -> Option<String> {
    world
        .branches()
        .into_iter()
        .find(|b| b.starts_with("codehands/"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_is_listed_and_its_fix_is_approved_as_one_commit() {
    let Some(vibe) = vibe() else { return };
    let world = World::demo();
    let server = ModelServer::start(fix_script()).await.unwrap();
    let out = support::run(codehands(&world, &vibe, &server).args(["agents", "--json"]));
    let listed = events_of(&out);
    let entry = listed.iter().find(|a| a["name"] == "mistral-vibe").unwrap();
    assert_eq!(entry["protocol"], "acp");
    assert_eq!(entry["version"], agent_vibe::install::VERSION, "{entry}");

    let out = support::run(codehands(&world, &vibe, &server).args([
        "run",
        ".",
        "Fix the month in src/date.js.",
        "--agent",
        "mistral-vibe",
        "--then",
        "approve",
        "-m",
        "Fix the month",
        "--json",
        "--session-id",
        ID,
    ]));
    let events = events_of(&out);
    assert!(
        out.status.success(),
        "{events:#?}\n{}",
        support::text(&out.stderr)
    );
    assert_eq!(
        types(&events)[types(&events).len() - 2..],
        ["task.finished", "approval.requested"]
    );
    let read = &of_type(&events, "file.read")[0]["payload"];
    assert_eq!(read["path"], "src/date.js", "relative to the worktree");
    let changed = &of_type(&events, "file.changed")[0]["payload"];
    assert_eq!(
        (changed["path"].as_str(), changed["change"].as_str()),
        (Some("src/date.js"), Some("modified"))
    );
    let finished = &of_type(&events, "task.finished")[0]["payload"];
    assert_eq!(finished["result"], "Fixed: the month now starts at one.");
    assert_eq!(finished["diffStat"]["filesChanged"], 1);
    let branch = branch(&world).expect("the session's branch");
    let fixed = world.git(&["show", &format!("{branch}:src/date.js")]);
    assert!(fixed.contains("getMonth() + 1"), "{fixed}");
    assert_eq!(
        world.git(&["log", "--format=%s", "-1", &branch]).trim(),
        "Fix the month"
    );
    assert_eq!(
        world
            .git(&["rev-list", "--count", &format!("main..{branch}")])
            .trim(),
        "1"
    );
    // Vibe called the scripted server only, with the key it was given.
    let requests = server.requests();
    assert!(requests.len() >= 3, "{requests:?}");
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some("Bearer sk-dummy-for-tests")
        );
    }
    // Boxed (the default), Vibe's home was the box's private one, removed with the session's
    // box once approved: nothing in codehands' own agent home, nothing in the user's ~/.vibe.
    let vibe_home = world.home.root().join("agent-homes/mistral-vibe");
    let outside = std::fs::read_dir(vibe_home.join("logs/session")).map_or(0, |d| d.count());
    assert_eq!(outside, 0, "no session outside the box");
    // (`vibe-acp --version`, the version probe of `agents`, makes an empty ~/.vibe: no session.)
    let user_sessions = world.agent_home.join(".vibe/logs/session");
    let kept = std::fs::read_dir(&user_sessions).map_or(0, |d| d.count());
    assert_eq!(kept, 0, "no session in the user's ~/.vibe");
    assert!(
        !world
            .home
            .root()
            .join("runs")
            .join(ID)
            .join("home")
            .exists(),
        "the box's private home went with the decided session"
    );
}

/// `codehands run --json` in the background, its events read as they come.
struct Streaming {
    child: std::process::Child,
    events: std::sync::mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Streaming {
    fn start(cmd: &mut Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, events) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok)
            {
                if let Ok(event) = serde_json::from_str::<Value>(&line)
                    && tx.send(event).is_err()
                {
                    return;
                }
            }
        });
        Self {
            child,
            events,
            seen: Vec::new(),
        }
    }

    fn until(&mut self, kind: &str) -> Value {
        loop {
            match self.events.recv_timeout(Duration::from_secs(90)) {
                Ok(event) => {
                    self.seen.push(event.clone());
                    if event["type"] == kind {
                        return event;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    panic!("no {kind} ({e:?}) in {:#?}", self.seen);
                }
            }
        }
    }

    fn rest(mut self) -> Vec<Value> {
        while let Ok(event) = self.events.recv_timeout(Duration::from_secs(90)) {
            self.seen.push(event);
        }
        assert!(self.child.wait().unwrap().success(), "{:#?}", self.seen);
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Vibe asks to run `touch made.txt` in a run that asks; the answer comes from another
/// process. Returns the run's events and the server.
async fn asked(answer: &str, then: &str) -> Option<(World, Vec<Value>, ModelServer)> {
    let vibe = vibe()?;
    let world = World::demo();
    let server = ModelServer::start(Script::new([
        Turn::blocks([bash("call_a1", "touch made.txt")]),
        Turn::text("Done asking."),
    ]))
    .await
    .unwrap();
    let mut cmd = codehands(&world, &vibe, &server);
    cmd.args([
        "run",
        ".",
        "Make made.txt.",
        "--agent",
        "mistral-vibe",
        "--json",
        "--ask",
    ])
    .args(["--session-id", ID, "--then", then]);
    let events = tokio::task::block_in_place(|| {
        let mut stream = Streaming::start(&mut cmd);
        let request = stream.until("permission.requested");
        assert_eq!(request["payload"]["tool"], "bash: touch made.txt");
        let request_id = request["payload"]["requestId"].as_str().unwrap().to_owned();
        let out = support::run(codehands(&world, &vibe, &server).args([
            "answer",
            ID,
            &request_id,
            answer,
        ]));
        assert!(out.status.success(), "{}", support::text(&out.stderr));
        stream.rest()
    });
    Some((world, events, server))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_allowed_runs_the_command() {
    let Some((world, events, _server)) = asked("allow", "approve").await else {
        return;
    };
    assert_eq!(
        of_type(&events, "permission.resolved")[0]["payload"]["outcome"],
        "allowed"
    );
    let finished = &of_type(&events, "command.finished")[0]["payload"];
    assert_eq!(
        (finished["command"].as_str(), finished["isError"].as_bool()),
        (Some("touch made.txt"), Some(false))
    );
    let branch = branch(&world).expect("approved");
    assert_eq!(world.git(&["show", &format!("{branch}:made.txt")]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_denied_runs_nothing_and_the_model_is_told() {
    let Some((world, events, server)) = asked("deny", "reject").await else {
        return;
    };
    assert_eq!(
        of_type(&events, "permission.resolved")[0]["payload"]["outcome"],
        "denied"
    );
    let finished = &of_type(&events, "command.finished")[0]["payload"];
    assert_eq!(finished["isError"], true);
    assert_eq!(
        of_type(&events, "approval.requested")[0]["payload"]["diffStat"]["filesChanged"],
        0
    );
    assert!(world.worktree_dirs().is_empty());
    let told = server.requests().iter().any(|r| {
        r.json().is_some_and(|body| {
            body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["role"] == "tool" && m["content"].to_string().contains("denied"))
        })
    });
    assert!(told, "the model saw the refusal: {:?}", server.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_vibes_turn_and_its_change_awaits_approval() {
    let Some(vibe) = vibe() else { return };
    let world = World::demo();
    // The fix first, then an answer that takes long: the interrupt comes meanwhile.
    let server = ModelServer::start(Script::new([
        Turn::blocks([fix_month("call_i1")]),
        Turn::text("This takes a while.").delayed(Duration::from_secs(120)),
    ]))
    .await
    .unwrap();
    let mut cmd = codehands(&world, &vibe, &server);
    cmd.args([
        "run",
        ".",
        "Fix the month.",
        "--agent",
        "mistral-vibe",
        "--json",
    ])
    .args(["--session-id", ID, "--then", "keep"]);
    let events = tokio::task::block_in_place(|| {
        let mut stream = Streaming::start(&mut cmd);
        stream.until("file.changed");
        let out = support::run(codehands(&world, &vibe, &server).args(["interrupt", ID]));
        assert!(out.status.success(), "{}", support::text(&out.stderr));
        stream.rest()
    });
    let finished = &of_type(&events, "task.finished")[0]["payload"];
    assert_eq!(finished["interrupted"], true, "{events:#?}");
    assert_eq!(finished["diffStat"]["filesChanged"], 1);
    assert_eq!(types(&events).last(), Some(&"approval.requested"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_loads_vibes_session() {
    let Some(vibe) = vibe() else { return };
    let world = World::demo();
    let server = ModelServer::start(
        Script::new([Turn::blocks([fix_month("call_f1")]), Turn::text("Fixed.")])
            .follow_up("FOLLOW-UP-MARK", Script::new([Turn::text("Still fixed.")])),
    )
    .await
    .unwrap();
    let out = support::run(codehands(&world, &vibe, &server).args([
        "run",
        ".",
        "Fix the month.",
        "--agent",
        "mistral-vibe",
        "--json",
        "--session-id",
        ID,
        "--then",
        "keep",
    ]));
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    let first = events_of(&out);
    let session = of_type(&first, "task.started")[0]["payload"]["agentSessionId"].clone();
    let out = support::run(codehands(&world, &vibe, &server).args([
        "send",
        ID,
        "FOLLOW-UP-MARK: is it still fixed?",
        "--json",
        "--then",
        "approve",
    ]));
    let events = events_of(&out);
    assert!(
        out.status.success(),
        "{events:#?}\n{}",
        support::text(&out.stderr)
    );
    let started = &of_type(&events, "task.started")[0]["payload"];
    assert_eq!(started["agentSessionId"], session);
    assert_eq!(started["resumed"], true);
    assert_eq!(
        of_type(&events, "task.finished")[0]["payload"]["result"],
        "Still fixed."
    );
    assert!(
        of_type(&events, "file.changed").is_empty(),
        "the first turn's edit, replayed by session/load, is not this turn's: {events:#?}"
    );
    // The follow-up's request carried the first turn: Vibe loaded its session.
    let last = server.requests().last().unwrap().body.clone();
    assert!(last.contains("getMonth() + 1"), "{last}");
    let branch = branch(&world).expect("approved");
    assert!(
        world
            .git(&["show", &format!("{branch}:src/date.js")])
            .contains("getMonth() + 1")
    );
}
