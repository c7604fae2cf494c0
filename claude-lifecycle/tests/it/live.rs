//! The real Claude Code 2.1.332 against the scripted model server: sessions of several
//! turns, a steer mid-turn, a close mid-turn, a job and a job's timeout. Skips (failing
//! under CI=true) when the binary is missing: `cargo xtask agents` fetches it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use claude_lifecycle::{
    ClaudeRunner, Defaults, Job, Session, SessionEvent, SessionOptions, SessionState,
};
use model_server::{Block, ModelServer, Script, Turn};
use runner_testkit::skip;
use serde_json::json;
use tokio::sync::broadcast;

/// The installed Claude Code, or a skip (a failure under CI=true).
fn claude() -> Option<PathBuf> {
    let found = runner_testkit::agents::find_pinned("CLAUDE_BIN", agent_claude::pinned::path_in);
    if found.is_none() {
        skip("Claude Code is not installed: run `cargo xtask agents` (or set CLAUDE_BIN)");
    }
    found
}

/// A server, a fresh HOME and a fresh working folder for one test.
struct Live {
    server: ModelServer,
    home: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

impl Live {
    /// `script` is given the path of the folder's README.md, for tools to read.
    async fn start(script: impl FnOnce(String) -> Script) -> Self {
        let cwd = tempfile::tempdir().unwrap();
        let readme = cwd.path().join("README.md");
        std::fs::write(&readme, "hello readme\n").unwrap();
        Self {
            server: ModelServer::start(script(readme.display().to_string()))
                .await
                .unwrap(),
            home: tempfile::tempdir().unwrap(),
            cwd,
        }
    }

    /// A runner of `claude` pointed at the server; the grace period is the default's.
    fn runner(&self, claude: PathBuf) -> ClaudeRunner {
        let home = self.home.path().display().to_string();
        ClaudeRunner::new(
            Defaults::default()
                .program(claude)
                .cwd(self.cwd.path())
                .env("HOME", &home)
                .env("CLAUDE_CONFIG_DIR", format!("{home}/.claude"))
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("ANTHROPIC_API_KEY", "sk-ant-dummy-for-tests")
                .env("ANTHROPIC_BASE_URL", self.server.base_url())
                .args(["--strict-mcp-config", "--allowedTools", "Read"]),
        )
    }

    /// Waits until the server has received `n` message requests.
    async fn requests(&self, n: usize) -> Vec<serde_json::Value> {
        for _ in 0..1000 {
            let requests = self.server.message_requests();
            if requests.len() >= n {
                return requests;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the server never got {n} message requests");
    }
}

/// Events until `stop`, for 60 s at most.
async fn until(
    events: &mut broadcast::Receiver<SessionEvent>,
    mut stop: impl FnMut(&SessionEvent) -> bool,
) -> Vec<SessionEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no matching event in 60 s; saw {seen:#?}"))
            .expect("the events go on");
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn is_result(event: &SessionEvent) -> bool {
    matches!(event, SessionEvent::Result(_))
}

fn result_text(events: &[SessionEvent]) -> String {
    match events.last() {
        Some(SessionEvent::Result(result)) => {
            assert!(result.ok, "{result:?}");
            result.text.clone()
        }
        other => panic!("a result, got {other:?}"),
    }
}

/// The uuids of the inputs the last event, a result, says its turn took.
fn result_inputs(events: &[SessionEvent]) -> Vec<uuid::Uuid> {
    match events.last() {
        Some(SessionEvent::Result(result)) => result.inputs.clone(),
        other => panic!("a result, got {other:?}"),
    }
}

fn inputs(events: &[SessionEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Input(input) => Some(input.text.clone()),
            _ => None,
        })
        .collect()
}

async fn session(live: &Live, claude: PathBuf) -> (Session, broadcast::Receiver<SessionEvent>) {
    let session = live
        .runner(claude)
        .create_session(&SessionOptions::new())
        .await
        .unwrap();
    let events = session.subscribe();
    (session, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_in_one_session_share_the_conversation() {
    let Some(claude) = claude() else { return };
    let script = Script::new([Turn::text("first answer")])
        .follow_up("SECOND", Script::new([Turn::text("second answer")]));
    let live = Live::start(|_| script).await;
    let (session, mut events) = session(&live, claude).await;
    let one = session.send("hello FIRST").await.unwrap();
    let first = until(&mut events, is_result).await;
    assert_eq!(
        result_inputs(&first),
        [one],
        "the result names the input it took"
    );
    assert_eq!(result_text(&first), "first answer");
    assert_eq!(
        inputs(&first),
        ["hello FIRST"],
        "the input is replayed as taken"
    );
    let two = session.send("now SECOND").await.unwrap();
    let second = until(&mut events, is_result).await;
    assert_eq!(result_inputs(&second), [two]);
    assert_eq!(result_text(&second), "second answer");
    assert_eq!(inputs(&second), ["now SECOND"]);
    let requests = live.server.message_requests();
    let last = requests.last().unwrap()["messages"].to_string();
    for part in ["hello FIRST", "first answer", "now SECOND"] {
        assert!(
            last.contains(part),
            "the second request holds {part:?}: {last}"
        );
    }
    let id = session
        .session_id()
        .expect("the session id, from Claude's output");
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    let exit = session.close().await;
    assert_eq!(exit.code, Some(0), "Claude leaves at the end of its stdin");
    assert_eq!(session.state(), SessionState::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_sent_mid_turn_steers_that_turn() {
    let Some(claude) = claude() else { return };
    // The first reply is slow and uses a tool; the steer arrives while it waits, so
    // Claude adds it after the tool result, in the same turn.
    let live = Live::start(|readme| {
        let read = Turn::blocks([Block::tool_use(
            "toolu_01read",
            "Read",
            json!({ "file_path": readme }),
        )]);
        Script::new([
            read.delayed(Duration::from_millis(2500)),
            Turn::text("read it"),
        ])
        .follow_up("MIDTURN", Script::new([Turn::text("steered answer")]))
    })
    .await;
    let (session, mut events) = session(&live, claude).await;
    let first = session.send("hello FIRST").await.unwrap();
    live.requests(1).await;
    let steer = session.send("also MIDTURN").await.unwrap();
    assert_eq!(session.state(), SessionState::Running);
    let turn = until(&mut events, is_result).await;
    assert_eq!(
        inputs(&turn),
        ["hello FIRST", "also MIDTURN"],
        "the steer came back as an input before the turn's result"
    );
    assert_eq!(result_text(&turn), "steered answer");
    assert_eq!(
        result_inputs(&turn),
        [first, steer],
        "one result for both inputs"
    );
    let requests = live.server.message_requests();
    let steered = requests
        .iter()
        .find(|r| r["messages"].to_string().contains("MIDTURN"))
        .expect("the steer reached the server");
    assert!(
        steered["messages"].to_string().contains("tool_result"),
        "in the same turn, after the tool's result"
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_during_a_turn_returns_once_claude_is_reaped() {
    let Some(claude) = claude() else { return };
    let live = Live::start(|_| {
        Script::new([Turn::text("never in time").delayed(Duration::from_secs(60))])
    })
    .await;
    let (session, mut events) = session(&live, claude).await;
    session.send("hello").await.unwrap();
    live.requests(1).await;
    let grace = session.config().shutdown_grace;
    let started = Instant::now();
    let exit = session.close().await;
    let took = started.elapsed();
    assert!(
        exit.code.is_some() || exit.signal.is_some(),
        "reaped: {exit:?}"
    );
    // stdin's grace, TERM's grace, then at most a grace of draining (and slack for a busy machine).
    assert!(
        took < 3 * grace + Duration::from_secs(5),
        "close took {took:?}"
    );
    assert_eq!(session.state(), SessionState::Closed);
    let rest = until(&mut events, |e| matches!(e, SessionEvent::Exit(_))).await;
    assert!(!rest.iter().any(is_result), "the turn had no result");
    eprintln!("Claude closed mid-turn ended with {exit:?} after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_gives_the_result() {
    let Some(claude) = claude() else { return };
    let live = Live::start(|_| Script::new([Turn::text("job answer")])).await;
    let result = live
        .runner(claude)
        .run(&Job::new("hello job"))
        .await
        .unwrap();
    assert!(result.ok, "{result:?}");
    assert_eq!(result.text, "job answer");
    let raw = result.raw.unwrap();
    assert_eq!(raw["type"], "result");
    assert!(raw["session_id"].is_string());
    let requests = live.server.message_requests();
    assert!(
        requests.last().unwrap()["messages"]
            .to_string()
            .contains("hello job")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_timeout_is_ended() {
    let Some(claude) = claude() else { return };
    let live =
        Live::start(|_| Script::new([Turn::text("too late").delayed(Duration::from_secs(60))]))
            .await;
    let runner = live.runner(claude);
    let started = Instant::now();
    let result = runner
        .run(&Job::new("hello").timeout(Duration::from_secs(3)))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(result.timed_out && !result.ok);
    assert_eq!((result.text.as_str(), result.raw.as_ref()), ("", None));
    assert!(result.exit.signal.is_some() || result.exit.code.is_some());
    assert!(
        took < Duration::from_secs(3)
            + 2 * runner.defaults().shutdown_grace
            + Duration::from_secs(5),
        "{took:?}"
    );
    eprintln!(
        "Claude timed out ended with {:?} after {took:?}",
        result.exit
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_the_turn_and_the_session_goes_on() {
    let Some(claude) = claude() else { return };
    let live = Live::start(|_| {
        Script::new([Turn::text("too slow").delayed(Duration::from_secs(60))])
            .follow_up("AFTER", Script::new([Turn::text("after answer")]))
    })
    .await;
    let (session, mut events) = session(&live, claude).await;
    session.send("hello FIRST").await.unwrap();
    live.requests(1).await;
    session.interrupt().await.unwrap();
    let cut = until(&mut events, is_result).await;
    let Some(SessionEvent::Result(result)) = cut.last() else {
        unreachable!()
    };
    assert!(
        !result.ok,
        "an interrupted turn's result is an error: {result:?}"
    );
    assert_eq!(result.raw["terminal_reason"], "aborted_streaming");
    until(&mut events, |e| {
        matches!(
            e,
            SessionEvent::State {
                to: SessionState::Ready,
                ..
            }
        )
    })
    .await;
    session.send("then AFTER").await.unwrap();
    let after = until(&mut events, is_result).await;
    assert_eq!(
        result_text(&after),
        "after answer",
        "the same process takes the next input"
    );
    let exit = session.close().await;
    assert_eq!(exit.code, Some(0), "the last result was a success");
}
