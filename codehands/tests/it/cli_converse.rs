//! Conversations on the command line (issue 21): `codehands send` (a follow-up turn),
//! `answer` and `interrupt` and the mistakes they refuse, a follow-up typed at the end of
//! an interactive run, and `run --ask` on a terminal with the real Claude Code against the
//! scripted model server.

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use model_server::{Block, ModelServer, Script, Turn};
use serde_json::json;
use support::terminal::OnTerminal;
use support::{World, ok, run, text};

const ID: &str = "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42";
const UNKNOWN: &str = "0b7d4c55-3f2a-4c55-9a57-2f0d8e6b1a42";
const DECIDE: &str = "[a]pprove, [r]eject, [k]eep, or type a follow-up (Enter keeps): ";

fn codehands(world: &World) -> Command {
    let mut cmd = world.codehands();
    cmd.env("CODEHANDS_FAKE_MODE", "replay")
        .env("CODEHANDS_NO_SPINNER", "1")
        .env("NO_COLOR", "1")
        .current_dir(&world.repo);
    cmd
}

/// `codehands` for the real Claude Code at `claude`, talking to `server`.
fn codehands_claude(world: &World, claude: &Path, server: &ModelServer) -> Command {
    let mut cmd = codehands(world);
    cmd.env("CLAUDE_BIN", claude)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy-for-tests");
    cmd
}

fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

/// A demo session of the fake agent, kept awaiting approval.
fn kept(world: &World) -> Vec<serde_json::Value> {
    let out = run(codehands(world).args([
        "run",
        ".",
        "--agent",
        "fake",
        "--json",
        "--then",
        "keep",
        "--session-id",
        ID,
    ]));
    ok(&out);
    json_lines(&out)
}

fn record(world: &World) -> serde_json::Value {
    let path = world.home.sessions_dir().join(format!("{ID}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Everything under the home, as relative paths (what a refused command must not add to).
fn files_under(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(root).unwrap().display().to_string());
            if path.is_dir() {
                walk(&path, root, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn answer_refuses_bad_arguments_before_anything_and_unknown_sessions_clearly() {
    let world = World::demo();
    for (args, says) in [
        (vec!["allow", "--input", "{not json"], "--input is not JSON"),
        (
            vec!["allow", "--input", "[\"ls\"]"],
            "--input is an array, not a JSON object",
        ),
        (
            vec!["deny", "--input", "{\"command\":\"ls\"}"],
            "--input goes with allow",
        ),
        (
            vec!["allow", "--message", "why not"],
            "--message goes with deny",
        ),
    ] {
        let out = run(codehands(&world)
            .args(["answer", UNKNOWN, "req-1"])
            .args(&args));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("Usage: codehands answer"),
            "{}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
    assert!(
        files_under(world.home.root()).is_empty(),
        "nothing made: {:?}",
        files_under(world.home.root())
    );
    for args in [
        vec!["answer", UNKNOWN, "req-1", "allow"],
        vec!["interrupt", UNKNOWN],
        vec!["send", UNKNOWN, "Also fix the README."],
        vec!["send", &UNKNOWN[..8], "Also fix the README."],
    ] {
        let out = run(codehands(&world).args(&args));
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            text(&out.stderr).contains("no session"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    assert!(
        world
            .home
            .sessions_dir()
            .read_dir()
            .map_or(true, |mut d| d.next().is_none()),
        "no session record"
    );
    assert!(world.worktree_dirs().is_empty());
    let out = run(codehands(&world).args(["run", ".", "--permission-timeout", "5"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--ask"), "{}", text(&out.stderr));
}

#[test]
fn interrupt_and_answer_refuse_a_session_that_is_not_running() {
    let world = World::demo();
    kept(&world);
    // What a refusal must leave as it was (the supervisor tidies other run files away
    // once the turn is over, at its own pace).
    let log = world
        .home
        .run_dir(&ID.parse().unwrap())
        .join("events.jsonl");
    let saved = |world: &World| {
        let record = world.home.sessions_dir().join(format!("{ID}.json"));
        (std::fs::read(record).unwrap(), std::fs::read(&log).unwrap())
    };
    let before = saved(&world);
    let out = run(codehands(&world).args(["interrupt", &ID[..8]]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is awaiting_approval: no turn is running to interrupt"),
        "{}",
        text(&out.stderr)
    );
    let out = run(codehands(&world).args(["answer", &ID[..8], "req-1", "deny", "-m", "no"]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "is awaiting_approval: no turn is running, so no permission request waits for an answer"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(record(&world)["state"], "awaiting_approval");
    assert!(
        saved(&world) == before,
        "the record and the event log are as they were"
    );
}

#[test]
fn send_to_a_kept_session_streams_a_follow_up_turn_and_approve_commits_once() {
    let world = World::demo();
    let first = kept(&world);
    let last_seq = first.last().unwrap()["seq"].as_u64().unwrap();
    let out = run(codehands(&world).args([
        "send",
        &ID[..8],
        "Also check the other dates.",
        "--json",
        "--then",
        "keep",
    ]));
    ok(&out);
    let events = json_lines(&out);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (last_seq + 1..=last_seq + events.len() as u64).collect::<Vec<_>>(),
        "seq continues"
    );
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"task.started"), "{types:?}");
    assert!(
        types.ends_with(&["task.finished", "approval.requested"]),
        "{types:?}"
    );
    assert_eq!(record(&world)["state"], "awaiting_approval");
    // The human view of one more follow-up, approved at the end.
    let out = run(codehands(&world).args([
        "send",
        ID,
        "One more look.",
        "--then",
        "approve",
        "-m",
        "Fix the month",
    ]));
    let shown = ok(&out);
    assert!(shown.contains("approval.requested"), "{shown}");
    assert!(shown.contains("approved: "), "{shown}");
    let branch = record(&world)["branch"].as_str().unwrap().to_owned();
    assert_eq!(
        world
            .git(&["rev-list", "--count", &format!("main..{branch}")])
            .trim(),
        "1",
        "every turn's change is one commit"
    );
    let out = run(codehands(&world).args(["send", ID, "And another."]));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is approved: it takes no more messages"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn ask_off_a_terminal_without_json_denies_and_says_why() {
    let world = World::demo();
    let out = run(codehands(&world).args([
        "run",
        ".",
        "--agent",
        "fake",
        "--ask",
        "--then",
        "keep",
        "--session-id",
        ID,
    ]));
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("note: --ask asks at a terminal, and this is none"),
        "{stderr}"
    );
    assert!(
        record(&world)["permissions"].is_null() || record(&world)["permissions"]["mode"] == "deny",
        "{}",
        record(&world)
    );
}

/// Runs `codehands stop` on the session when the test ends, however it ends, so a failed
/// test leaves no agent running.
struct StopOnDrop(Command);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self
            .0
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn a_follow_up_typed_at_the_question_runs_another_turn_then_the_question_comes_again() {
    let world = World::demo();
    let mut cmd = codehands(&world);
    cmd.args(["run", ".", "--agent", "fake", "--session-id", ID]);
    let mut term = OnTerminal::start(&mut cmd, false);
    term.wait_for_times(DECIDE, 1);
    term.type_line("Also check the other dates.");
    term.wait_for_times(DECIDE, 2);
    term.type_line("k");
    let (code, seen) = term.finish();
    assert_eq!(code, Some(0), "{seen}");
    assert_eq!(
        seen.matches("task.started").count(),
        2,
        "two turns were watched: {seen}"
    );
    assert!(seen.contains("kept. Decide later"), "{seen}");
    let events = json_lines(&run(codehands(&world).args(["events", ID, "--json"])));
    let approvals = events
        .iter()
        .filter(|e| e["type"] == "approval.requested")
        .count();
    assert_eq!(approvals, 2);
    assert_eq!(record(&world)["state"], "awaiting_approval");
}

/// `codehands run --json` going on in the background, its events read as they come.
struct Streaming {
    child: std::process::Child,
    events: std::sync::mpsc::Receiver<serde_json::Value>,
    seen: Vec<serde_json::Value>,
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
                let event: serde_json::Value = serde_json::from_str(&line).unwrap();
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

    /// The next event, `None` once the run's output has ended; panics after a minute of
    /// silence (the run is killed first).
    fn next(&mut self) -> Option<serde_json::Value> {
        match self.events.recv_timeout(Duration::from_secs(60)) {
            Ok(event) => {
                self.seen.push(event.clone());
                Some(event)
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                panic!("no event for 60 s after {:?}", self.seen);
            }
        }
    }

    /// Reads until the first event of type `kind`, and returns it.
    fn until(&mut self, kind: &str) -> serde_json::Value {
        while let Some(event) = self.next() {
            if event["type"] == kind {
                return event;
            }
        }
        panic!("no {kind} in {:?}", self.seen);
    }

    /// Every event read, once the run has ended successfully.
    fn rest(mut self) -> Vec<serde_json::Value> {
        while self.next().is_some() {}
        assert!(self.child.wait().unwrap().success(), "{:?}", self.seen);
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

/// What the terminal showed, with the parts that change from run to run redacted.
fn redacted(seen: &str, request_ids: &[String]) -> String {
    let mut out = seen.replace("\r\x1b[2K", "").replace("\r\n", "\n");
    for id in request_ids {
        out = out.replace(id, "[request]");
    }
    out.lines()
        .map(|line| {
            // The cost of the turn, whatever the server's usage comes to.
            match line.find(" · $") {
                Some(at) if line.contains("task.finished") => {
                    let rest = &line[at + 4..];
                    let end = rest.find(' ').unwrap_or(rest.len());
                    format!("{} · $[cost]{}", &line[..at], &rest[end..])
                }
                _ => line.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_ask_on_a_terminal_asks_and_an_allowed_tool_runs_with_its_result_sent_back() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(Script::new([
        Turn::blocks([
            Block::text("I'll ask Python."),
            Block::tool_use(
                "toolu_1",
                "Bash",
                json!({"command": "python3 -c \"print(42)\"", "description": "Print 42"}),
            ),
        ]),
        Turn::text("Python says 42."),
    ]))
    .await
    .unwrap();
    let mut stop = codehands(&world);
    stop.args(["stop", ID]);
    let _stop = StopOnDrop(stop);
    let mut cmd = codehands_claude(&world, &claude, &server);
    // Unboxed: in its box Claude Code may run any command, so nothing would be asked.
    cmd.args(["run", ".", "What does Python print?", "--ask"])
        .args(["--agent", "claude-code", "--session-id", ID])
        .args(["--isolation", "none"]);
    let asked = "allow Bash: python3 -c \"print(42)\"? [y/N] ";
    let (code, seen) = tokio::task::spawn_blocking(move || {
        let mut term = OnTerminal::start(&mut cmd, false);
        term.wait_for_times(asked, 1);
        term.type_line("y");
        term.wait_for_times(DECIDE, 1);
        term.type_line("r");
        term.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{seen}");
    let requests = server.message_requests();
    let results: Vec<String> = requests
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result" && c["tool_use_id"] == "toolu_1")
        .map(|c| c["content"].to_string())
        .collect();
    assert!(
        results
            .iter()
            .any(|r| r.contains("42") && !r.contains("denied")),
        "the tool ran and its result reached the server: {results:?}"
    );
    let events = json_lines(&run(codehands(&world).args(["events", ID, "--json"])));
    let request_ids: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "permission.requested")
        .map(|e| e["payload"]["requestId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(request_ids.len(), 1, "{events:?}");
    let resolved: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "permission.resolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["payload"]["outcome"], "allowed");
    assert_eq!(world.branches(), vec!["main".to_owned()], "rejected");
    insta::assert_snapshot!("run_ask_on_a_terminal", redacted(&seen, &request_ids));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_ask_json_waits_for_another_process_to_answer_and_a_denial_reaches_the_model() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(Script::new([
        Turn::blocks([Block::tool_use(
            "toolu_1",
            "Bash",
            json!({"command": "python3 -c \"print(42)\""}),
        )]),
        Turn::text("Fine, I will not."),
    ]))
    .await
    .unwrap();
    let mut stop = codehands(&world);
    stop.args(["stop", ID]);
    let _stop = StopOnDrop(stop);
    let mut cmd = codehands_claude(&world, &claude, &server);
    // Unboxed: in its box Claude Code may run any command, so nothing would be asked.
    cmd.args(["run", ".", "What does Python print?", "--ask", "--json"])
        .args(["--isolation", "none"])
        .args([
            "--then",
            "reject",
            "--agent",
            "claude-code",
            "--session-id",
            ID,
        ]);
    let mut run_json = Streaming::start(&mut cmd);
    let request = run_json.until("permission.requested");
    assert_eq!(request["payload"]["tool"], "Bash");
    assert_eq!(
        request["payload"]["input"]["command"],
        "python3 -c \"print(42)\""
    );
    let request_id = request["payload"]["requestId"].as_str().unwrap().to_owned();
    let out = run(codehands(&world).args([
        "answer",
        &ID[..8],
        &request_id,
        "deny",
        "--message",
        "not today",
        "--json",
    ]));
    let answered = json_lines(&out);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(answered[0]["outcome"], "denied");
    let out = run(codehands(&world).args(["answer", ID, &request_id, "allow"]));
    assert_eq!(out.status.code(), Some(1), "an answer counts once");
    assert!(
        text(&out.stderr).contains("was already denied"),
        "{}",
        text(&out.stderr)
    );
    let events = run_json.rest();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"permission.resolved"), "{types:?}");
    assert!(
        types.ends_with(&["task.finished", "approval.requested"]),
        "{types:?}"
    );
    let refused = server
        .message_requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .any(|c| {
            c["type"] == "tool_result"
                && c["tool_use_id"] == "toolu_1"
                && c["content"].to_string().contains("not today")
        });
    assert!(
        refused,
        "the model was told why: {:?}",
        server.message_requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_to_a_running_turn_steers_it_and_says_so_in_one_line() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let key = runner_contract::Vcs::repo_key(&vcs_git::GitVcs::new(), &world.repo)
        .await
        .unwrap();
    let worktree = world
        .home
        .worktree_path(&key, &ID.parse().unwrap())
        .unwrap();
    let write = |id: &str, name: &str| {
        Turn::blocks([Block::tool_use(
            id,
            "Write",
            json!({"file_path": worktree.join(name).display().to_string(), "content": "x\n"}),
        )])
    };
    // The first answer takes a while: the message arrives while the model "thinks".
    let script = Script::new([
        write("toolu_1", "first.txt").delayed(Duration::from_secs(3)),
        Turn::text("Wrote first.txt."),
    ])
    .follow_up(
        "STEER-MARK",
        Script::new([
            write("toolu_2", "steered.txt"),
            Turn::text("Wrote steered.txt."),
        ]),
    );
    let server = ModelServer::start(script).await.unwrap();
    let mut stop = codehands(&world);
    stop.args(["stop", ID]);
    let _stop = StopOnDrop(stop);
    let mut cmd = codehands_claude(&world, &claude, &server);
    cmd.args(["run", ".", "Write first.txt", "--json", "--then", "keep"])
        .args(["--agent", "claude-code", "--session-id", ID]);
    let mut run_json = Streaming::start(&mut cmd);
    run_json.until("task.started");
    let out = run(codehands_claude(&world, &claude, &server).args([
        "send",
        &ID[..8],
        "STEER-MARK: also write steered.txt",
    ]));
    assert_eq!(ok(&out), format!("sent to the running turn of {ID}\n"));
    let events = run_json.rest();
    assert!(
        events.iter().any(|e| e["type"] == "message"
            && e["payload"]["role"] == "user"
            && e["payload"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("STEER-MARK"))),
        "the steer came back as the agent took it in: {events:?}"
    );
    let finished = events
        .iter()
        .filter(|e| e["type"] == "task.finished")
        .count();
    assert_eq!(finished, 1, "one turn: {events:?}");
    let diff = json_lines(&run(codehands(&world).args(["diff", ID, "--json"])));
    let paths: Vec<&str> = diff[0]["stat"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["first.txt", "steered.txt"]);
}
