//! Conversations through the library, with the real Claude Code (2.1.332) and Codex
//! (0.163.0) against the scripted model server: a follow-up turn after approval was
//! requested, a message that steers a turn in flight, permission requests allowed, denied
//! and left unanswered, and an interrupt followed by a follow-up.

use crate::support;

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use model_server::{Block, ModelServer, Script, Turn};
use runner_contract::event::PermissionOutcome;
use runner_contract::{
    AgentName, ErrorKind, Event, EventBody, EventStream, PermissionAnswer, Permissions, Runner,
    Sent, SessionId, SessionState, StartOptions,
};
use runner_core::LocalRunner;
use runner_testkit::runner as suite;
use serde_json::json;
use support::{World, assert_contiguous, claude_runner, codex, tool_results, types};

fn options(world: &World, id: SessionId, prompt: &str) -> StartOptions {
    StartOptions::new(
        id,
        &world.repo,
        prompt,
        AgentName::parse("claude-code").unwrap(),
    )
}

fn write(id: &str, path: &str, text: &str) -> Turn {
    Turn::blocks([Block::tool_use(
        id,
        "Write",
        json!({ "file_path": path, "content": text }),
    )])
}

/// A model that writes `first` in the worktree `wt` (its answer held back `delay`), then,
/// from a user message holding `marker` on, writes `second`.
fn writes(wt: &Path, first: &str, delay: Duration, marker: &str, second: &str) -> Script {
    let file = |name: &str| wt.join(name).display().to_string();
    Script::new([
        write("toolu_w1", &file(first), "one\n").delayed(delay),
        Turn::text(format!("Wrote {first}.")),
    ])
    .follow_up(
        marker,
        Script::new([
            write("toolu_w2", &file(second), "two\n"),
            Turn::text(format!("Wrote {second} as asked.")),
        ]),
    )
}

/// The paths a diff stat names, in its order.
fn paths(stat: &runner_contract::DiffStat) -> Vec<&str> {
    stat.files.iter().map(|f| f.path.as_str()).collect()
}

/// Whether a user message the server was sent holds `text`.
fn server_saw(server: &ModelServer, text: &str) -> bool {
    server
        .message_requests()
        .iter()
        .any(|r| r["messages"].to_string().contains(text))
}

/// Reads `stream` until an event `until` says stop; returns the events read.
async fn read_until(stream: &mut EventStream, until: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    let read = async {
        while let Some(event) = stream.next().await {
            let stop = until(&event);
            seen.push(event);
            if stop {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(90), read)
        .await
        .expect("the events came within 90 s");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_turn_continues_the_conversation_and_approve_commits_both_changes() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let id = SessionId::new_random();
    let wt = support::worktree_for(&world, &id).await;
    let script = writes(
        &wt,
        "first.txt",
        Duration::ZERO,
        "FOLLOW-UP-MARK",
        "second.txt",
    );
    let server = ModelServer::start(script).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let events = suite::collect(
        runner
            .start(options(&world, id, "Write first.txt"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&events)
    );

    let Sent::FollowUp(stream) = runner
        .send(&id, "FOLLOW-UP-MARK: now write second.txt too".into())
        .await
        .unwrap()
    else {
        panic!("a session awaiting approval takes a follow-up turn");
    };
    let more = suite::collect(stream).await;
    assert_eq!(
        types(&more).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&more)
    );
    let all = runner.logged_events(&id, 0).unwrap();
    assert_contiguous(&all);
    assert_eq!(
        all.len(),
        events.len() + more.len(),
        "the follow-up's events continue the seq"
    );
    let Some(EventBody::ApprovalRequested(asked)) = more.last().map(|e| &e.body) else {
        unreachable!()
    };
    assert_eq!(
        paths(&asked.diff_stat),
        ["first.txt", "second.txt"],
        "the second diff holds both changes"
    );
    // The follow-up continued the same conversation: the server saw the first exchange.
    let last = server.message_requests().pop().unwrap();
    assert!(
        last["messages"].to_string().contains("Wrote first.txt."),
        "{last}"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.script.as_deref() == Some("FOLLOW-UP-MARK")),
        "the follow-up's script answered"
    );

    let approved = runner.approve(&id, "Both files").await.unwrap();
    let files = world.git(&["show", "--name-only", "--format=%s", &approved.commit]);
    assert_eq!(files.trim(), "Both files\n\nfirst.txt\nsecond.txt");
    let parent = world.git(&["rev-parse", &format!("{}^", approved.commit)]);
    assert_eq!(
        parent.trim(),
        runner.session(&id).await.unwrap().base_commit,
        "one commit on the base"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_mid_turn_steers_the_turn_in_flight() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let id = SessionId::new_random();
    let wt = support::worktree_for(&world, &id).await;
    // The first answer takes a while: the message arrives while the model "thinks".
    let script = writes(
        &wt,
        "first.txt",
        Duration::from_secs(3),
        "STEER-MARK",
        "steered.txt",
    );
    let server = ModelServer::start(script).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let mut stream = runner
        .start(options(&world, id, "Write first.txt"))
        .await
        .unwrap();
    read_until(&mut stream, |e| matches!(e.body, EventBody::TaskStarted(_))).await;
    let sent = runner
        .send(&id, "STEER-MARK: also write steered.txt".into())
        .await
        .unwrap();
    assert!(matches!(sent, Sent::Steered), "{sent:?}");
    let rest = suite::collect(stream).await;
    assert_eq!(
        types(&rest).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&rest)
    );
    let finished = rest
        .iter()
        .filter(|e| matches!(e.body, EventBody::TaskFinished(_)))
        .count();
    assert_eq!(finished, 1, "one turn: {:?}", types(&rest));
    assert!(
        rest.iter().any(|e| matches!(&e.body, EventBody::Message(m)
            if m.role == runner_contract::event::MessageRole::User && m.text.contains("STEER-MARK"))),
        "the message comes back as the agent took it in: {:?}",
        types(&rest)
    );
    let diff = runner.diff(&id).await.unwrap();
    assert_eq!(paths(&diff.stat), ["first.txt", "steered.txt"]);
    assert!(server_saw(&server, "STEER-MARK"));
    assert_contiguous(&runner.logged_events(&id, 0).unwrap());
}

/// A script whose model runs a command outside the allow list, then says what it got.
fn asks_for_python() -> Script {
    Script::new([
        Turn::blocks([Block::tool_use(
            "toolu_p1",
            "Bash",
            json!({ "command": "python3 -c \"print(6*7)\"", "description": "Compute" }),
        )]),
        Turn::text("Done."),
    ])
}

/// Starts an asking run of `asks_for_python` and reads up to its permission request.
async fn asking_run(
    world: &World,
    runner: &LocalRunner,
    permissions: Permissions,
) -> (SessionId, EventStream, String) {
    let id = SessionId::new_random();
    let mut options = options(world, id, "Compute six times seven with python");
    options.permissions = permissions;
    // Unboxed: in its box Claude Code may run any command, so nothing would be asked.
    options.isolation = runner_contract::Isolation::None;
    let mut stream = runner.start(options).await.unwrap();
    let seen = read_until(&mut stream, |e| {
        matches!(e.body, EventBody::PermissionRequested(_))
    })
    .await;
    let Some(EventBody::PermissionRequested(asked)) = seen.last().map(|e| &e.body) else {
        panic!("a permission request: {:?}", types(&seen));
    };
    assert_eq!(asked.tool, "Bash");
    assert_eq!(asked.input["command"], "python3 -c \"print(6*7)\"");
    (id, stream, asked.request_id.clone())
}

fn resolved(events: &[Event]) -> Vec<(String, PermissionOutcome)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::PermissionResolved(r) => Some((r.request_id.clone(), r.outcome)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_permission_request_runs_the_tool() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(asks_for_python()).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let (id, stream, request) = asking_run(&world, &runner, Permissions::ask()).await;
    runner
        .answer(
            &id,
            &request,
            PermissionAnswer::Allow {
                updated_input: None,
            },
        )
        .await
        .unwrap();
    let rest = suite::collect(stream).await;
    assert_eq!(
        types(&rest).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&rest)
    );
    assert_eq!(
        resolved(&rest),
        [(request.clone(), PermissionOutcome::Allowed)]
    );
    let results = tool_results(&server);
    assert!(
        results.iter().any(|r| r.contains("42")),
        "the tool ran: {results:?}"
    );
    // An answer counts once.
    let again = runner
        .answer(&id, &request, PermissionAnswer::Deny { message: None })
        .await
        .unwrap_err();
    assert_eq!(again.kind(), ErrorKind::InvalidInput, "{again}");
    assert!(again.to_string().contains("already allowed"), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_permission_request_tells_the_agent_why() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(asks_for_python()).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let (id, stream, request) = asking_run(&world, &runner, Permissions::ask()).await;
    runner
        .answer(
            &id,
            &request,
            PermissionAnswer::Deny {
                message: Some("No python today, please.".into()),
            },
        )
        .await
        .unwrap();
    let rest = suite::collect(stream).await;
    assert_eq!(resolved(&rest), [(request, PermissionOutcome::Denied)]);
    let results = tool_results(&server);
    assert!(
        results.iter().any(|r| r.contains("No python today")),
        "the server saw the refusal: {results:?}"
    );
    assert!(
        !results.iter().any(|r| r.contains("42")),
        "the tool never ran"
    );
    assert_eq!(
        runner.session(&id).await.unwrap().state,
        SessionState::AwaitingApproval
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_permission_request_is_denied_after_its_timeout() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(asks_for_python()).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let permissions = Permissions {
        timeout_secs: Some(1),
        ..Permissions::ask()
    };
    let (id, stream, request) = asking_run(&world, &runner, permissions).await;
    let rest = suite::collect(stream).await;
    assert_eq!(
        resolved(&rest),
        [(request.clone(), PermissionOutcome::TimedOut)]
    );
    let results = tool_results(&server);
    assert!(
        results.iter().any(|r| r.contains("nobody answered")),
        "the server saw the denial: {results:?}"
    );
    let late = runner
        .answer(
            &id,
            &request,
            PermissionAnswer::Allow {
                updated_input: None,
            },
        )
        .await
        .unwrap_err();
    assert!(late.to_string().contains("for want of an answer"), "{late}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_the_turn_and_a_follow_up_redirects_the_agent() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let id = SessionId::new_random();
    let wt = support::worktree_for(&world, &id).await;
    let script = writes(
        &wt,
        "slow.txt",
        Duration::from_secs(20),
        "REDIRECT-MARK",
        "other.txt",
    );
    let server = ModelServer::start(script).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let mut stream = runner
        .start(options(&world, id, "Write slow.txt"))
        .await
        .unwrap();
    read_until(&mut stream, |e| matches!(e.body, EventBody::TaskStarted(_))).await;
    // The model is "thinking" (the server holds its answer back) when the interrupt comes.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.message_requests().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked = std::time::Instant::now();
    runner.interrupt(&id).await.unwrap();
    let rest = suite::collect(stream).await;
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "the turn ended at the interrupt, not after the model's answer"
    );
    assert_eq!(
        types(&rest).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&rest)
    );
    let interrupted = rest
        .iter()
        .any(|e| matches!(&e.body, EventBody::TaskFinished(f) if f.interrupted));
    assert!(
        interrupted,
        "task.finished says interrupted: {:?}",
        types(&rest)
    );
    assert!(
        !wt.join("slow.txt").exists(),
        "the interrupted turn wrote nothing"
    );

    let Sent::FollowUp(stream) = runner
        .send(&id, "REDIRECT-MARK: write other.txt instead".into())
        .await
        .unwrap()
    else {
        panic!("an interrupted session takes a follow-up");
    };
    let more = suite::collect(stream).await;
    assert_eq!(
        types(&more).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&more)
    );
    let diff = runner.diff(&id).await.unwrap();
    assert_eq!(paths(&diff.stat), ["other.txt"]);
    assert_contiguous(&runner.logged_events(&id, 0).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_takes_a_follow_up_through_exec_resume_and_refuses_what_it_cannot_do() {
    let Some(codex) = codex() else { return };
    let world = World::demo();
    let exec = |id: &str, cmd: &str| {
        Turn::blocks([Block::tool_use(id, "exec_command", json!({ "cmd": cmd }))])
    };
    let script = Script::new([
        // Slow enough to be asked things while it runs.
        exec("call_c1", "echo one > first.txt").delayed(Duration::from_secs(2)),
        Turn::text("Wrote first.txt."),
    ])
    .follow_up(
        "CODEX-FOLLOW-UP",
        Script::new([
            exec("call_c2", "echo two > second.txt"),
            Turn::text("Wrote second.txt."),
        ]),
    );
    let server = ModelServer::start(script).await.unwrap();
    let runner = support::codex_runner(&world, &codex, &server);
    let id = SessionId::new_random();
    let mut start = StartOptions::new(
        id,
        &world.repo,
        "Write first.txt",
        AgentName::parse("codex").unwrap(),
    );
    start.model = Some("scripted-model".into());
    let mut asking = start.clone();
    asking.session_id = SessionId::new_random();
    asking.permissions = Permissions::ask();
    let refused = runner.start(asking).await.err().expect("codex cannot ask");
    assert_eq!(refused.kind(), ErrorKind::Unsupported, "{refused}");
    assert!(refused.to_string().contains("cannot ask"), "{refused}");

    let stream = runner.start(start).await.unwrap();
    runner
        .wait_for_agent(&id, Duration::from_secs(20))
        .await
        .unwrap();
    // `codex exec` reads its prompt and takes nothing more: both are refused, saying so.
    let steer = runner.send(&id, "and faster".into()).await.unwrap_err();
    assert_eq!(steer.kind(), ErrorKind::Unsupported, "{steer}");
    assert!(
        steer
            .to_string()
            .contains("cannot take a message while it runs"),
        "{steer}"
    );
    let stop = runner.interrupt(&id).await.unwrap_err();
    assert_eq!(stop.kind(), ErrorKind::Unsupported, "{stop}");
    let events = suite::collect(stream).await;
    assert_eq!(
        types(&events).last(),
        Some(&"approval.requested"),
        "{events:#?}"
    );
    let Sent::FollowUp(stream) = runner
        .send(&id, "CODEX-FOLLOW-UP: and second.txt".into())
        .await
        .unwrap()
    else {
        panic!("a follow-up");
    };
    let more = suite::collect(stream).await;
    assert_eq!(
        types(&more).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&more)
    );
    let diff = runner.diff(&id).await.unwrap();
    assert_eq!(paths(&diff.stat), ["first.txt", "second.txt"]);
    // `exec resume` carried the first exchange.
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.script.as_deref() == Some("CODEX-FOLLOW-UP")
                && r.body.contains("Wrote first.txt.")),
        "the follow-up continued the thread"
    );
    assert_contiguous(&runner.logged_events(&id, 0).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_outlives_the_runner_that_saw_it() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(asks_for_python()).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let (id, stream, request) = asking_run(&world, &runner, Permissions::ask()).await;
    // The daemon goes away while the agent waits for an answer: its supervisor with it.
    drop(stream);
    drop(runner);
    let runner = claude_runner(&world, &claude, &server, &[]);
    // The dropped runner's supervisor task ends at its next await: until then it holds the
    // run's lock, as a dying daemon would for a moment.
    let mut adopted = Vec::new();
    for _ in 0..50 {
        adopted = runner.recover().await.unwrap().adopted;
        if !adopted.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(adopted, vec![id], "the new runner took the turn over");
    runner
        .answer(
            &id,
            &request,
            PermissionAnswer::Allow {
                updated_input: None,
            },
        )
        .await
        .unwrap();
    let all = suite::collect(runner.events(&id, 0).await.unwrap()).await;
    assert_eq!(
        types(&all).last(),
        Some(&"approval.requested"),
        "{:?}",
        types(&all)
    );
    assert_contiguous(&all);
    let asked = all
        .iter()
        .filter(|e| matches!(e.body, EventBody::PermissionRequested(_)))
        .count();
    assert_eq!(asked, 1, "asked once, whoever watched: {:?}", types(&all));
    assert_eq!(resolved(&all), [(request, PermissionOutcome::Allowed)]);
    assert!(tool_results(&server).iter().any(|r| r.contains("42")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_deadline_runs_from_the_request_across_a_takeover() {
    let Some(claude) = support::claude() else {
        return;
    };
    let world = World::demo();
    let server = ModelServer::start(asks_for_python()).await.unwrap();
    let runner = claude_runner(&world, &claude, &server, &[]);
    let permissions = Permissions {
        timeout_secs: Some(4),
        ..Permissions::ask()
    };
    let (id, stream, request) = asking_run(&world, &runner, permissions).await;
    drop(stream);
    drop(runner);
    // Nobody watches for 3 of the 4 seconds.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let runner = claude_runner(&world, &claude, &server, &[]);
    let all = suite::collect(runner.events(&id, 0).await.unwrap()).await;
    assert_eq!(
        resolved(&all),
        [(request.clone(), PermissionOutcome::TimedOut)]
    );
    let at = |wanted: fn(&EventBody) -> bool| {
        let event = all.iter().find(|e| wanted(&e.body)).unwrap();
        humantime::parse_rfc3339(&event.ts).unwrap()
    };
    let asked = at(|b| matches!(b, EventBody::PermissionRequested(_)));
    let denied = at(|b| matches!(b, EventBody::PermissionResolved(_)));
    let waited = denied.duration_since(asked).unwrap();
    // From the request (4 s), not from the takeover (3 s + 4 s).
    assert!(
        waited < Duration::from_secs(6),
        "denied {waited:?} after it was asked"
    );
    assert_contiguous(&all);
}
