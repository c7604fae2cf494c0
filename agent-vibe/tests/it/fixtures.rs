//! Replays every recording of the real Mistral Vibe through the adapter's parser and
//! snapshots the events, then checks what each recording is there to show.

use agent_harness::Fixtures;
use agent_harness::snapshot::{redact_runs, without_durations};
use agent_vibe::MistralVibe;
use runner_contract::EventBody;
use serde_json::Value;

fn fixtures() -> Fixtures {
    Fixtures::of(env!("CARGO_MANIFEST_DIR"))
}

/// The events of a fixture.
fn replay(name: &str) -> Vec<EventBody> {
    fixtures()
        .replay(&MistralVibe::new("vibe-acp", None), name)
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

fn check(name: &str) {
    // The recording's temp folder changes with every recording.
    let text = serde_json::to_string(&replay(name)).unwrap();
    let text = redact_runs(&text, "/tmp/.tmp", char::is_alphanumeric, "[tmp]");
    let events: Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!(name, events, {
        "[].payload.output" => insta::dynamic_redaction(without_durations),
    });
}

agent_harness::fixture_tests! { check;
    fix_the_month => "fix-the-month",
    write_a_new_file => "write-a-new-file",
    command_allowed => "command-allowed",
    command_denied => "command-denied",
    plan => "plan",
    notes => "notes",
    error_401 => "error-401",
}

fn types(name: &str) -> Vec<&'static str> {
    replay(name).iter().map(EventBody::type_name).collect()
}

fn payloads(name: &str, type_name: &str) -> Vec<Value> {
    replay(name)
        .iter()
        .filter(|e| e.type_name() == type_name)
        .map(|e| serde_json::to_value(e).unwrap()["payload"].clone())
        .collect()
}

#[test]
fn every_run_starts_once_and_ends_once() {
    for name in fixtures().names() {
        let events = replay(&name);
        assert!(
            matches!(&events[0], EventBody::TaskStarted(s) if s.agent_session_id.is_some()),
            "{name}: starts with task.started naming Vibe's session: {:?}",
            events[0]
        );
        assert_eq!(
            events.iter().filter(|e| e.is_terminal()).count(),
            1,
            "{name}: exactly one terminal event"
        );
        assert!(
            events.last().unwrap().is_terminal(),
            "{name}: it is the last"
        );
    }
}

#[test]
fn a_fix_is_read_and_made_and_chunks_are_whole_messages() {
    assert_eq!(
        types("fix-the-month"),
        [
            "task.started",
            "message",
            "message",
            "file.read",
            "message",
            "file.changed",
            "message",
            "task.finished",
        ]
    );
    let said: Vec<Value> = payloads("fix-the-month", "message")
        .iter()
        .map(|m| m["text"].clone())
        .collect();
    assert_eq!(
        said,
        [
            "Fix the month in src/date.js.",
            "Let me look at the file.",
            "getMonth() starts at 0; fixing.",
            "The month is fixed."
        ],
        "the prompt as Vibe took it, then each streamed answer whole"
    );
    assert_eq!(payloads("fix-the-month", "message")[0]["role"], "user");
    let changed = &payloads("fix-the-month", "file.changed")[0];
    assert_eq!(changed["change"], "modified");
    assert_eq!(changed["tool"], "edit");
    assert!(
        changed["path"]
            .as_str()
            .unwrap()
            .ends_with("/repo/src/date.js")
    );
    let done = &payloads("fix-the-month", "task.finished")[0];
    assert_eq!(done["result"], "The month is fixed.");
    assert_eq!(done["usage"]["input_tokens"], 300);
    assert_eq!(done["usage"]["output_tokens"], 60);
    assert!(
        done.get("costUsd").is_none(),
        "Vibe sends no cost for this model"
    );
}

#[test]
fn a_new_file_is_added() {
    let changed = &payloads("write-a-new-file", "file.changed")[0];
    assert_eq!(changed["change"], "added");
    assert!(
        changed["path"]
            .as_str()
            .unwrap()
            .ends_with("/repo/NOTES.md")
    );
}

#[test]
fn a_command_asks_first_and_runs_when_allowed() {
    assert_eq!(
        types("command-allowed"),
        [
            "task.started",
            "message",
            "message",
            "command.started",
            "permission.requested",
            "command.finished",
            "test.result",
            "message",
            "task.finished",
        ]
    );
    let asked = &payloads("command-allowed", "permission.requested")[0];
    assert_eq!(asked["tool"], "bash: npm test");
    assert_eq!(
        asked["input"]["toolCall"]["rawInput"]["command"],
        "npm test"
    );
    let kinds: Vec<&str> = asked["input"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
        "{kinds:?}"
    );
    let test = &payloads("command-allowed", "test.result")[0];
    assert_eq!(test["passed"], false, "npm test fails: {test}");
    assert!(test["exitCode"].is_null(), "ACP carries no exit code");
}

#[test]
fn a_denied_command_runs_nothing() {
    let finished = &payloads("command-denied", "command.finished")[0];
    assert_eq!(finished["command"], "rm -rf src");
    assert_eq!(finished["isError"], true);
    assert_eq!(
        finished["output"],
        "Tool execution denied by approval callback"
    );
    assert_eq!(
        payloads("command-denied", "task.finished")[0]["result"],
        "I will leave src alone."
    );
}

#[test]
fn a_todo_list_is_a_plan() {
    let said: Vec<String> = payloads("plan", "message")
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        said.contains(&"Plan:\n[x] Read src/date.js\n[~] Fix the month".to_owned()),
        "{said:?}"
    );
    assert_eq!(
        said.iter().filter(|t| t.starts_with("Plan:")).count(),
        1,
        "the same plan twice is said once: {said:?}"
    );
}

#[test]
fn a_refused_key_fails_the_turn_with_vibes_words() {
    let status = &payloads("error-401", "provider.status")[0];
    assert_eq!(
        (status["status"].as_str(), status["httpStatus"].as_u64()),
        (Some("auth_expired"), Some(401)),
        "{status}"
    );
    let failed = &payloads("error-401", "task.failed")[0];
    assert_eq!(failed["reason"], "auth_failed");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("Invalid API key (from env var OPENAI_API_KEY)"),
        "{failed}"
    );
}
