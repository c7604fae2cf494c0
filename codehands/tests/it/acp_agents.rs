//! Any agent that speaks the Agent Client Protocol runs from a profile of three lines: the
//! tests' own ACP agent (`agent-acp/tests/agent/acp_test_agent.py`, a Python script that
//! calls no model) through `codehands`, from `agents` to an approved commit, with every kind
//! of session update, a follow-up that loads the session, permission requests allowed and
//! denied, an interrupt, a request codehands does not serve, and a malformed line.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::World;

const ID: &str = "5f0e4c1a-7b2d-4e8f-9a3c-1d2e3f4a5b6c";

/// The tests' ACP agent, or a skip (a failure under CI) when no `python3` runs it.
fn test_agent() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agent-acp/tests/agent/acp_test_agent.py")
        .canonicalize()
        .unwrap();
    let python = Command::new("python3").arg("--version").output();
    if python.is_ok_and(|o| o.status.success()) {
        Some(script)
    } else {
        runner_testkit::skip("python3 is not on PATH: the tests' ACP agent needs it");
        None
    }
}

/// A world whose home holds the three-line profile `acp-test.toml`.
fn world() -> Option<World> {
    let script = test_agent()?;
    let world = World::new(&[("README.md", "# demo\n"), ("a.txt", "a\n")]);
    let agents = world.home.root().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("acp-test.toml"),
        format!(
            "name = \"acp-test\"\nprogram = {:?}\nprotocol = \"acp\"\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    Some(world)
}

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.current_dir(&world.repo).env("NO_COLOR", "1");
    cmd
}

fn run(cmd: &mut Command) -> Output {
    support::run(cmd)
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

/// `codehands run . PROMPT --agent acp-test --json` with more arguments.
fn run_acp(world: &World, prompt: &str, more: &[&str]) -> Output {
    run(codehands(world)
        .args(["run", ".", prompt, "--agent", "acp-test", "--json"])
        .args(["--session-id", ID])
        .args(more))
}

fn branch_file(world: &World, file: &str) -> String {
    let branch = world
        .branches()
        .into_iter()
        .find(|b| b.starts_with("codehands/"))
        .expect("the session's branch");
    world.git(&["show", &format!("{branch}:{file}")])
}

#[test]
fn a_three_line_profile_lists_an_acp_agent() {
    let Some(world) = world() else { return };
    let out = run(codehands(&world).args(["agents", "--json"]));
    let listed = events_of(&out);
    let acp = listed
        .iter()
        .find(|a| a["name"] == "acp-test")
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(acp["origin"]["kind"], "profile");
    assert_eq!(acp["protocol"], "acp");
    assert_eq!(acp["capabilities"]["resume"], true);
    assert_eq!(acp["capabilities"]["interrupt"], true);
    assert_eq!(acp["capabilities"]["askPermission"], true);
    let vibe = listed.iter().find(|a| a["name"] == "mistral-vibe").unwrap();
    assert_eq!(vibe["origin"]["kind"], "built-in");
    assert_eq!(vibe["protocol"], "acp");
}

#[test]
fn every_update_kind_maps_onto_events_and_approve_commits_the_change() {
    let Some(world) = world() else { return };
    let out = run_acp(
        &world,
        "Take the tour.",
        &["--then", "approve", "-m", "The tour"],
    );
    let events = events_of(&out);
    assert!(
        out.status.success(),
        "{events:#?}{}",
        support::text(&out.stderr)
    );
    let kinds = types(&events);
    for kind in [
        "task.started",
        "message",
        "file.read",
        "file.changed",
        "command.started",
        "command.finished",
        "test.result",
        "task.finished",
        "approval.requested",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let started = &of_type(&events, "task.started")[0]["payload"];
    assert!(
        started["agentSessionId"]
            .as_str()
            .unwrap()
            .starts_with("acp-test-")
    );
    assert_eq!(started["model"], "no-model");
    let texts: Vec<(&str, &str)> = of_type(&events, "message")
        .iter()
        .map(|m| {
            (
                m["payload"]["role"].as_str().unwrap_or("assistant"),
                m["payload"]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(texts.contains(&("user", "Take the tour.")), "{texts:?}");
    assert!(
        texts.contains(&("assistant", "Let me look around.")),
        "two chunks of one message are one message: {texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|(_, t)| t.starts_with("Plan:\n[x] Read the README")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|(r, t)| *r == "system" && t.starts_with("Fetching the docs failed")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|(_, t)| t.contains("Thinking about it")),
        "thoughts are skipped"
    );
    let read: Vec<&Value> = of_type(&events, "file.read")
        .iter()
        .map(|e| &e["payload"]["path"])
        .collect();
    assert_eq!(
        read,
        ["README.md", "TODO"],
        "paths relative to the worktree"
    );
    let changed: Vec<(&Value, &Value)> = of_type(&events, "file.changed")
        .iter()
        .map(|e| (&e["payload"]["path"], &e["payload"]["change"]))
        .collect();
    assert_eq!(
        changed,
        [
            (&Value::from("acp.txt"), &Value::from("added")),
            (&Value::from("old.log"), &Value::from("deleted")),
            (&Value::from("b.txt"), &Value::from("renamed")),
        ]
    );
    let test = &of_type(&events, "test.result")[0]["payload"];
    assert_eq!(
        (test["command"].as_str(), test["passed"].as_bool()),
        (Some("npm test"), Some(true))
    );
    let finished = &of_type(&events, "task.finished")[0]["payload"];
    assert_eq!(finished["result"], "I wrote acp.txt.");
    assert_eq!(finished["costUsd"], 0.0125);
    assert_eq!(finished["usage"]["input_tokens"], 20);
    assert_eq!(finished["diffStat"]["filesChanged"], 1);
    assert_eq!(
        branch_file(&world, "acp.txt"),
        "written by the ACP test agent\n"
    );
}

#[test]
fn a_follow_up_loads_the_session_without_repeating_its_history() {
    let Some(world) = world() else { return };
    let out = run_acp(&world, "Write the file.", &["--then", "keep"]);
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    let first = events_of(&out);
    let session = of_type(&first, "task.started")[0]["payload"]["agentSessionId"].clone();
    let out =
        run(codehands(&world).args(["send", ID, "And the tour.", "--json", "--then", "approve"]));
    let events = events_of(&out);
    assert!(
        out.status.success(),
        "{events:#?}{}",
        support::text(&out.stderr)
    );
    let started = &of_type(&events, "task.started")[0]["payload"];
    assert_eq!(
        started["agentSessionId"], session,
        "the same session, loaded"
    );
    assert_eq!(started["resumed"], true);
    let said: Vec<&str> = of_type(&events, "message")
        .iter()
        .filter_map(|m| m["payload"]["text"].as_str())
        .collect();
    assert!(
        !said.contains(&"Wrote acp.txt."),
        "the replayed history is not this turn's: {said:?}"
    );
    assert!(said.contains(&"I wrote acp.txt."), "{said:?}");
    let finished = &of_type(&events, "task.finished")[0]["payload"];
    assert!(
        finished["usage"]["input_tokens"].is_null()
            && finished["usage"]["sessionTotals"].is_object(),
        "a loaded session's totals are not counted again: {finished}"
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
                let Ok(event) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send(event).is_err() {
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
            match self.events.recv_timeout(Duration::from_secs(60)) {
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
        while let Ok(event) = self.events.recv_timeout(Duration::from_secs(60)) {
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

/// Asks for permission in a run that asks, answers `answer` from another process, and
/// returns the run's events.
fn asked_and_answered(world: &World, answer: &str, then: &str) -> Vec<Value> {
    let mut cmd = codehands(world);
    cmd.args([
        "run",
        ".",
        "Please ask first.",
        "--agent",
        "acp-test",
        "--json",
    ])
    .args(["--session-id", ID, "--ask", "--then", then]);
    let mut stream = Streaming::start(&mut cmd);
    let asked = stream.until("permission.requested");
    assert_eq!(asked["payload"]["tool"], "touch allowed.txt");
    assert_eq!(
        asked["payload"]["input"]["toolCall"]["rawInput"]["command"],
        "touch allowed.txt"
    );
    let request = asked["payload"]["requestId"].as_str().unwrap().to_owned();
    assert_eq!(request, "exec-ask");
    let out = run(codehands(world).args(["answer", &ID[..8], &request, answer]));
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    stream.rest()
}

#[test]
fn a_permission_request_allowed_runs_the_tool() {
    let Some(world) = world() else { return };
    let events = asked_and_answered(&world, "allow", "approve");
    let resolved = &of_type(&events, "permission.resolved")[0]["payload"];
    assert_eq!(resolved["outcome"], "allowed");
    let finished = &of_type(&events, "command.finished")[0]["payload"];
    assert_eq!(finished["isError"], false);
    assert_eq!(
        of_type(&events, "task.finished")[0]["payload"]["result"],
        "Allowed: I made allowed.txt."
    );
    assert_eq!(branch_file(&world, "allowed.txt"), "");
}

#[test]
fn a_permission_request_denied_runs_nothing() {
    let Some(world) = world() else { return };
    let events = asked_and_answered(&world, "deny", "reject");
    assert_eq!(
        of_type(&events, "permission.resolved")[0]["payload"]["outcome"],
        "denied"
    );
    let finished = &of_type(&events, "command.finished")[0]["payload"];
    assert_eq!(finished["isError"], true);
    assert_eq!(finished["output"], "The user refused this command.");
    assert_eq!(
        of_type(&events, "task.finished")[0]["payload"]["result"],
        "Denied: I made nothing."
    );
    let diff = &of_type(&events, "approval.requested")[0]["payload"]["diffStat"];
    assert_eq!(diff["filesChanged"], 0, "nothing was made: {diff}");
}

#[test]
fn a_run_that_does_not_ask_denies_at_once() {
    let Some(world) = world() else { return };
    let out = run_acp(&world, "Please ask first.", &["--then", "reject"]);
    let events = events_of(&out);
    assert!(out.status.success(), "{events:#?}");
    let resolved = &of_type(&events, "permission.resolved")[0]["payload"];
    assert_eq!(resolved["outcome"], "denied");
    assert!(
        resolved["message"]
            .as_str()
            .unwrap()
            .contains("does not ask")
    );
    assert_eq!(
        of_type(&events, "task.finished")[0]["payload"]["result"],
        "Denied: I made nothing."
    );
}

#[test]
fn an_interrupt_cancels_the_turn_and_its_change_awaits_approval() {
    let Some(world) = world() else { return };
    let mut cmd = codehands(&world);
    cmd.args(["run", ".", "Please wait.", "--agent", "acp-test", "--json"])
        .args(["--session-id", ID, "--then", "keep"]);
    let mut stream = Streaming::start(&mut cmd);
    stream.until("command.started");
    let out = run(codehands(&world).args(["interrupt", &ID[..8]]));
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    let events = stream.rest();
    let finished = &of_type(&events, "task.finished")[0]["payload"];
    assert_eq!(finished["interrupted"], true, "{events:#?}");
    let cut = &of_type(&events, "command.finished")[0]["payload"];
    assert_eq!(
        (cut["command"].as_str(), cut["isError"].as_bool()),
        (Some("sleep 600"), Some(true))
    );
    assert_eq!(types(&events).last(), Some(&"approval.requested"));
}

#[test]
fn a_request_codehands_does_not_serve_is_refused_and_the_turn_goes_on() {
    let Some(world) = world() else { return };
    let out = run_acp(&world, "Read it with fs please.", &["--then", "reject"]);
    let events = events_of(&out);
    assert!(out.status.success(), "{events:#?}");
    let said: Vec<&str> = of_type(&events, "message")
        .iter()
        .filter_map(|m| m["payload"]["text"].as_str())
        .collect();
    assert!(
        said.iter()
            .any(|t| t.contains("fs/read_text_file, which codehands does not serve")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|t| t.starts_with("The client would not read it: codehands does not serve")),
        "{said:?}"
    );
}

#[test]
fn a_malformed_line_fails_the_turn_clearly_and_loses_nothing() {
    let Some(world) = world() else { return };
    let out = run_acp(&world, "Now be malformed.", &[]);
    let events = events_of(&out);
    assert!(!out.status.success());
    let said: Vec<&str> = of_type(&events, "message")
        .iter()
        .filter_map(|m| m["payload"]["text"].as_str())
        .collect();
    assert!(
        said.contains(&"About to misbehave."),
        "said before: {said:?}"
    );
    assert!(
        said.contains(&"this line is not JSON-RPC"),
        "the line itself: {said:?}"
    );
    let failed = &of_type(&events, "task.failed")[0]["payload"];
    assert_eq!(failed["reason"], "agent_error");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("broke the Agent Client Protocol")
            && message.contains("this line is not JSON-RPC"),
        "{message}"
    );
    assert_eq!(types(&events).last(), Some(&"task.failed"));
    // The transcript keeps every line the agent printed, the ones after the bad one too.
    let transcript = std::fs::read_to_string(
        world
            .home
            .run_dir(&ID.parse().unwrap())
            .join("transcript.jsonl"),
    )
    .unwrap_or_default();
    assert!(
        transcript.contains("this line is not JSON-RPC"),
        "{transcript}"
    );
    assert!(
        world.worktree_dirs().is_empty(),
        "a failed run leaves no worktree"
    );
}

/// The pid of the detached supervisor of session `id`, if one runs.
fn supervisor_of(id: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let text = String::from_utf8_lossy(&cmdline);
        (text.contains("__supervise") && text.contains(id)).then_some(pid)
    })
}

#[test]
fn a_supervisor_taking_the_turn_over_gives_the_agent_nothing_twice() {
    let Some(world) = world() else { return };
    let mut cmd = codehands(&world);
    cmd.args([
        "run",
        ".",
        "Please ask first.",
        "--agent",
        "acp-test",
        "--json",
    ])
    .args(["--session-id", ID, "--ask", "--then", "keep"]);
    let mut stream = Streaming::start(&mut cmd);
    stream.until("permission.requested");
    // The run's supervisor dies while the agent waits for the answer; the agent and its
    // stdin's relay go on.
    let pid = supervisor_of(ID).expect("the run's supervisor");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    drop(stream);
    // A kill is delivered, not done: the supervisor's lock is free once it is gone.
    while supervisor_of(ID) == Some(pid) {
        std::thread::sleep(Duration::from_millis(10));
    }
    // The answer heals the session: a new supervisor adopts the agent, replays its output
    // through a fresh parser (which owes the same handshake again) and gives the answer.
    let out = run(codehands(&world).args(["answer", ID, "exec-ask", "allow"]));
    let dir = world.home.run_dir(&ID.parse().unwrap());
    let file = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    assert!(
        out.status.success(),
        "{}\nevents:\n{}\nsupervisor:\n{}\ninbox:\n{}\nstdin:\n{}",
        support::text(&out.stderr),
        file("events.jsonl"),
        file("supervisor.log"),
        file("inbox.jsonl"),
        file("turn-1.stdin"),
    );
    let out = run(codehands(&world).args(["events", ID, "--json", "--follow"]));
    let events = events_of(&out);
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{events:#?}"
    );
    assert_eq!(of_type(&events, "task.started").len(), 1, "{events:#?}");
    assert_eq!(of_type(&events, "permission.requested").len(), 1);
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let given = std::fs::read_to_string(
        world
            .home
            .run_dir(&ID.parse().unwrap())
            .join("turn-1.stdin"),
    )
    .unwrap();
    let methods: Vec<String> = given
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["method"].as_str().unwrap_or("(answer)").to_owned()
        })
        .collect();
    assert_eq!(
        methods,
        ["initialize", "session/new", "session/prompt", "(answer)"],
        "each line once: {given}"
    );
    assert_eq!(
        of_type(&events, "task.finished")[0]["payload"]["result"],
        "Allowed: I made allowed.txt."
    );
}
