//! The adapter against the real Claude Code 2.1.332 and the scripted model server:
//! the arguments it builds work, and what the binary prints today parses to the same
//! events as the recordings. Skips (failing under CI=true) when the binary is missing:
//! `cargo xtask agents` fetches it.

use crate::scenarios;

use agent_claude::ClaudeCode;
use agent_harness::{Fixtures, Harness, npm_available, parse_lines};
use runner_contract::{Agent, EventBody};
use runner_testkit::skip;

/// The adapter pointed at the installed Claude Code, or a skip (a failure under CI=true).
fn claude() -> Option<ClaudeCode> {
    let found = scenarios::installed();
    if found.is_none() {
        skip("Claude Code is not installed: run `cargo xtask agents` (or set CLAUDE_BIN)");
    }
    found.map(ClaudeCode::with_program)
}

fn event_types(lines: &[String]) -> Vec<&'static str> {
    parse_lines(&ClaudeCode::with_program("claude"), lines, Some(0))
        .iter()
        .map(|(e, _)| e.type_name())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_runs_give_the_events_of_their_recordings() {
    let Some(claude) = claude() else { return };
    let harness = Harness::new(&claude, &scenarios::provider_env);
    // Scenarios whose line order does not depend on tool timing.
    let mut names = vec![
        "edit-files",
        "refused-command",
        "tool-error",
        "error-401",
        "error-429",
        "budget-exhausted",
        "retry-then-success",
    ];
    if npm_available() {
        names.push("npm-test-failing-exit-0");
    } else {
        eprintln!("npm is not on PATH: the npm scenarios are checked from their recordings only");
    }
    for name in names {
        let scenario = scenarios::find(name).expect("a scenario");
        let output = harness.run(&scenario).await.unwrap();
        let recorded = Fixtures::of(env!("CARGO_MANIFEST_DIR")).lines(name);
        assert_eq!(
            event_types(&output.lines),
            event_types(&recorded),
            "{name}: the live run parses like its recording; stderr: {}",
            output.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arguments_reach_the_model_as_meant() {
    let Some(claude) = claude() else { return };
    let harness = Harness::new(&claude, &scenarios::provider_env);
    let scenario = scenarios::find("retry-then-success").unwrap();
    let notes = "--Repo notes: indent with two spaces.";
    // The runner's private notes file, read through `--append-system-prompt-file`.
    let notes_dir = tempfile::tempdir().unwrap();
    let notes_file = notes_dir.path().join("notes.md");
    std::fs::write(&notes_file, notes).unwrap();
    let prompt = "--dangerously-skip-permissions is only text here";
    let output = harness
        .run_with(&scenario, |request| {
            request.model = Some("claude-sonnet-4-5".into());
            request.notes = Some(notes.into());
            request.notes_file = Some(notes_file.clone());
            request.prompt = prompt.into();
        })
        .await
        .unwrap();
    let bodies: Vec<serde_json::Value> = output
        .requests
        .iter()
        .filter(|r| r.path.starts_with("/v1/messages"))
        .filter_map(|r| r.json())
        .collect();
    assert!(!bodies.is_empty(), "the CLI called the model");
    let last = bodies.last().unwrap();
    assert_eq!(last["model"], "claude-sonnet-4-5", "--model=… is honoured");
    assert!(
        last["system"]
            .to_string()
            .contains("indent with two spaces"),
        "the notes file is read into the system prompt"
    );
    assert!(
        last["messages"].to_string().contains(prompt),
        "the prompt is the first user message"
    );
    assert!(
        output
            .requests
            .iter()
            .all(|r| r.header("x-api-key") == Some(scenarios::DUMMY_KEY))
    );
    let mut parser = ClaudeCode::with_program("claude").parser();
    let started = output
        .lines
        .iter()
        .flat_map(|l| parser.parse_line(l))
        .find_map(|e| match e {
            EventBody::TaskStarted(s) => Some(s),
            _ => None,
        });
    let started = started.expect("task.started");
    assert_eq!(
        started.agent_session_id,
        Some(output.session_id.to_string()),
        "--session-id is ours"
    );
    assert_eq!(started.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(
        output.exit_code,
        Some(0),
        "the CLI exits on its own after the result"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_continues_our_session_id() {
    let Some(claude) = claude() else { return };
    let harness = Harness::new(&claude, &scenarios::provider_env);
    let scenario = scenarios::find("retry-then-success").unwrap();
    let first = harness.run(&scenario).await.unwrap();
    let id = first.session_id;
    let second = harness
        .resume(&scenario, first, "--and now the second part")
        .await
        .unwrap();
    assert_eq!(second.exit_code, Some(0), "stderr: {}", second.stderr);
    let mut parser = ClaudeCode::with_program("claude").parser();
    let events: Vec<EventBody> = second
        .lines
        .iter()
        .flat_map(|l| parser.parse_line(l))
        .collect();
    assert!(
        events.iter().any(
            |e| matches!(e, EventBody::TaskStarted(s) if s.agent_session_id == Some(id.to_string()))
        ),
        "the resumed run reports our session id: {:?}",
        second.lines.first()
    );
    assert!(matches!(events.last(), Some(EventBody::TaskFinished(_))));
    // The model saw the first conversation and the new prompt.
    let last = second
        .requests
        .iter()
        .rev()
        .find_map(|r| r.json())
        .expect("a request");
    let messages = last["messages"].to_string();
    assert!(
        messages.contains("Fix the month") && messages.contains("--and now the second part"),
        "{messages}"
    );
}
