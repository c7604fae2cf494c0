//! Replays every recording of the real Codex through the adapter's parser and
//! snapshots the events (temp paths, thread ids and the server's port redacted),
//! then checks what each recording is there to show.

use agent_codex::Codex;
use agent_harness::Fixtures;
use agent_harness::snapshot::{redact_runs, without_durations};
use runner_contract::EventBody;
use runner_contract::event::FailureKind;
use serde_json::{Value, json};

fn fixtures() -> Fixtures {
    Fixtures::of(env!("CARGO_MANIFEST_DIR"))
}

/// The events of a fixture, each with the line it came from.
fn replay(name: &str) -> Vec<(EventBody, String)> {
    fixtures().replay(&Codex::with_program("codex"), name)
}

/// The events as JSON, with the temp folder and the server's port made stable.
fn snapshot_value(name: &str) -> Value {
    let events: Vec<EventBody> = replay(name).into_iter().map(|(e, _)| e).collect();
    let text = serde_json::to_string(&events).unwrap();
    let text = agent_harness::snapshot::as_tmp(&text);
    let text = redact_runs(&text, "/tmp/.tmp", char::is_alphanumeric, "[tmp]");
    let text = redact_runs(
        &text,
        "127.0.0.1:",
        |c| c.is_ascii_digit(),
        "127.0.0.1:[port]",
    );
    serde_json::from_str(&text).unwrap()
}

fn check(name: &str) {
    let value = snapshot_value(name);
    insta::assert_json_snapshot!(name, value, {
        "[].payload.agentSessionId" => "[thread]",
        "[].payload.output" => insta::dynamic_redaction(without_durations),
    });
}

agent_harness::fixture_tests! { check;
    write_file => "write-file",
    run_command => "run-command",
    failing_test => "failing-test",
    failing_test_exit_0 => "failing-test-exit-0",
    failing_command => "failing-command",
    several_turns => "several-turns",
    error_401 => "error-401",
    error_429 => "error-429",
    error_500 => "error-500",
    error_quota => "error-quota",
    notes => "notes",
    retry_then_success => "retry-then-success",
}

fn types(name: &str) -> Vec<&'static str> {
    replay(name).iter().map(|(e, _)| e.type_name()).collect()
}

fn payloads(name: &str, type_name: &str) -> Vec<Value> {
    replay(name)
        .iter()
        .filter(|(e, _)| e.type_name() == type_name)
        .map(|(e, _)| serde_json::to_value(e).unwrap()["payload"].clone())
        .collect()
}

#[test]
fn every_run_starts_with_its_thread_id_and_ends_once() {
    for name in fixtures().names() {
        let events = replay(&name);
        let EventBody::TaskStarted(started) = &events[0].0 else {
            panic!("{name}: starts with task.started: {:?}", events[0].0)
        };
        let thread = started.agent_session_id.as_deref().expect("a thread id");
        assert!(
            events[0].1.contains(thread),
            "{name}: the id is the thread's"
        );
        let terminals = events.iter().filter(|(e, _)| e.is_terminal()).count();
        assert_eq!(terminals, 1, "{name}: exactly one terminal event");
        assert!(
            events.last().unwrap().0.is_terminal(),
            "{name}: it is the last"
        );
        let text = fixtures().text(&name);
        for (event, raw) in &events {
            assert!(
                text.lines().any(|l| l == raw),
                "{name}: {} comes from a line of the recording",
                event.type_name()
            );
        }
    }
}

#[test]
fn a_patch_changes_each_of_its_files() {
    let changed = payloads("write-file", "file.changed");
    let short: Vec<(String, Value)> = changed
        .iter()
        .map(|c| {
            let path = c["path"].as_str().unwrap();
            let tail = path.rsplit_once("/repo/").map(|(_, t)| t).unwrap_or(path);
            (tail.to_owned(), c["change"].clone())
        })
        .collect();
    assert_eq!(
        short,
        [
            ("src/date.js".to_owned(), json!("modified")),
            ("src/hello.js".to_owned(), json!("added")),
        ]
    );
    assert!(changed.iter().all(|c| c["tool"] == "apply_patch"));
    assert_eq!(
        types("write-file"),
        [
            "task.started",
            "message",
            "message",
            "file.changed",
            "file.changed",
            "message",
            "task.finished"
        ],
        "the patch run through exec_command is a file change, not a command"
    );
}

#[test]
fn a_command_starts_and_finishes_with_its_output() {
    let started = payloads("run-command", "command.started");
    let finished = payloads("run-command", "command.finished");
    assert_eq!(
        started,
        [json!({"command": "cat src/date.js", "toolUseId": "item_1"})]
    );
    assert_eq!(finished[0]["exitCode"], 0);
    assert_eq!(finished[0]["isError"], false);
    assert!(
        finished[0]["output"]
            .as_str()
            .unwrap()
            .contains("getMonth()")
    );
}

#[test]
fn test_runs_fail_also_behind_exit_code_zero() {
    let verdict = |name: &str| {
        replay(name)
            .into_iter()
            .find_map(|(e, _)| match e {
                EventBody::TestResult(t) => Some((t.passed, t.exit_code, t.summary)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{name} has a test.result"))
    };
    let (passed, exit_code, summary) = verdict("failing-test");
    assert_eq!((passed, exit_code), (false, Some(1)));
    assert!(
        summary.unwrap().starts_with("not ok 1 - "),
        "the failing line is the summary"
    );
    let (passed, exit_code, _) = verdict("failing-test-exit-0");
    assert_eq!(
        (passed, exit_code),
        (false, Some(0)),
        "the pipe's exit code 0 does not hide the failure"
    );
}

#[test]
fn a_failing_command_is_an_error_and_a_sandbox_refusal_shows_in_no_event() {
    let finished = payloads("failing-command", "command.finished");
    assert_eq!(finished.len(), 1, "only `ls` has an item: {finished:?}");
    assert_eq!(finished[0]["command"], "ls src/missing.js");
    assert_eq!(finished[0]["exitCode"], 2);
    assert_eq!(finished[0]["isError"], true);
    // Codex 0.163.0 prints no item for the `touch /etc/…` its sandbox refused, and still
    // completes the turn: the run finishes.
    assert!(
        !fixtures()
            .text("failing-command")
            .contains("/etc/codehands-probe")
    );
    assert_eq!(types("failing-command").last(), Some(&"task.finished"));
}

#[test]
fn several_turns_keep_their_order_and_skip_reasoning() {
    assert_eq!(
        types("several-turns"),
        [
            "task.started",
            "message",
            "message",
            "command.started",
            "command.finished",
            "file.changed",
            "file.changed",
            "command.started",
            "command.finished",
            "message",
            "task.finished",
        ]
    );
    let (last, _) = replay("several-turns").pop().unwrap();
    let EventBody::TaskFinished(done) = last else {
        panic!("{last:?}")
    };
    assert_eq!(done.result.as_deref(), Some("Done: the month is fixed."));
    assert_eq!(
        done.usage,
        Some(
            json!({"input_tokens":400,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":80,"reasoning_output_tokens":0})
        ),
        "usage exactly as Codex reports it"
    );
}

#[test]
fn api_errors_give_provider_status_at_every_retry_and_a_failed_task() {
    for (name, state, reason, http) in [
        (
            "error-401",
            "auth_expired",
            FailureKind::AuthFailed,
            json!(401),
        ),
        (
            "error-429",
            "rate_limited",
            FailureKind::AgentError,
            json!(429),
        ),
        // Codex prints its own words for a 5xx, without the status.
        ("error-500", "down", FailureKind::AgentError, Value::Null),
    ] {
        let events = replay(name);
        let statuses = payloads(name, "provider.status");
        assert_eq!(
            statuses.len(),
            6,
            "{name}: five retries and the final error: {statuses:?}"
        );
        assert!(
            statuses
                .iter()
                .all(|s| s["status"] == state && s["httpStatus"] == http),
            "{name}: {statuses:?}"
        );
        let attempts: Vec<Value> = statuses.iter().map(|s| s["retryAttempt"].clone()).collect();
        assert_eq!(
            attempts,
            [
                json!(1),
                json!(2),
                json!(3),
                json!(4),
                json!(5),
                Value::Null
            ],
            "{name}"
        );
        // The first one comes from the first retry line, before anything has failed.
        let first = events
            .iter()
            .position(|(e, _)| e.type_name() == "provider.status")
            .unwrap();
        assert!(events[first].1.contains("Reconnecting... 1/5"), "{name}");
        let (last, _) = events.last().unwrap();
        let EventBody::TaskFailed(failed) = last else {
            panic!("{name}: {last:?}")
        };
        assert_eq!(failed.reason, reason, "{name}");
        if let Some(code) = http.as_u64() {
            assert!(
                failed.message.contains(&code.to_string()),
                "{name}: {}",
                failed.message
            );
        }
    }
}

#[test]
fn a_run_that_retried_and_then_answered_finishes() {
    assert_eq!(
        types("retry-then-success"),
        [
            "task.started",
            "message",
            "provider.status",
            "message",
            "task.finished"
        ]
    );
}

#[test]
fn the_unknown_model_warning_is_a_system_message() {
    let messages = payloads("notes", "message");
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["text"]
            .as_str()
            .unwrap()
            .contains("Model metadata for `scripted-model` not found")
    );
    assert_eq!(messages[1], json!({"text": "Noted.", "role": "assistant"}));
}

#[test]
fn running_out_of_quota_is_a_usage_limit_without_retries() {
    let statuses = payloads("error-quota", "provider.status");
    assert_eq!(
        statuses,
        [
            json!({"status": "usage_limit", "message": "Quota exceeded. Check your plan and billing details."})
        ],
        "Codex does not retry it"
    );
    assert_eq!(types("error-quota").last(), Some(&"task.failed"));
}
