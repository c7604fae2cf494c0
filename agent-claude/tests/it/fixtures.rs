//! Replays every recording of the real Claude Code through the adapter's parser
//! and snapshots the events (temp paths, ids and clock times redacted).

use agent_claude::{ClaudeCode, Frame, JsonlDecoder};
use agent_harness::Fixtures;
use agent_harness::snapshot::without_durations;
use runner_contract::{Agent, EventBody};
use serde_json::{Value, json};

fn fixtures() -> Fixtures {
    Fixtures::of(env!("CARGO_MANIFEST_DIR"))
}

/// The events of a fixture, each with the line it came from.
fn replay(name: &str) -> Vec<(EventBody, String)> {
    let bytes = std::fs::read(fixtures().path(name)).expect("fixture");
    let mut decoder = JsonlDecoder::new();
    let mut frames = Vec::new();
    // Small chunks, so lines arrive in fragments as they do from a pipe.
    for chunk in bytes.chunks(97) {
        decoder.push(chunk, &mut frames);
    }
    decoder.finish(&mut frames);
    let mut parser = ClaudeCode::with_program("claude").parser();
    let mut events = Vec::new();
    for frame in &frames {
        let Frame::Line(line) = frame else {
            panic!("{name}: every recorded line is whole UTF-8: {frame:?}")
        };
        for event in parser.parse_line(line) {
            events.push((event, line.clone()));
        }
    }
    for event in parser.finish(Some(0)) {
        events.push((event, String::new()));
    }
    events
}

/// The events as JSON, with the temp repo path and the server's port made stable.
fn snapshot_value(name: &str) -> Value {
    let events = replay(name);
    let cwd = events.iter().find_map(|(e, _)| match e {
        EventBody::TaskStarted(s) => s.cwd.clone(),
        _ => None,
    });
    let mut text =
        serde_json::to_string(&events.iter().map(|(e, _)| e).collect::<Vec<_>>()).unwrap();
    if let Some(cwd) = cwd {
        text = text.replace(&cwd, "[repo]");
    }
    let port = regex_free_port(&text);
    if let Some(port) = port {
        text = text.replace(&port, "127.0.0.1:[port]");
    }
    serde_json::from_str(&text).unwrap()
}

/// Finds "127.0.0.1:<digits>" without a regex crate.
fn regex_free_port(text: &str) -> Option<String> {
    text.match_indices("127.0.0.1:").find_map(|(at, _)| {
        let digits: String = text[at + 10..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        // Only the server's ephemeral port, not a port a scenario's command names.
        (digits.len() >= 4).then(|| format!("127.0.0.1:{digits}"))
    })
}

fn check(name: &str) {
    let value = snapshot_value(name);
    insta::assert_json_snapshot!(name, value, {
        "[].payload.agentSessionId" => "[session]",
        "[].payload.resetsAt" => "[time]",
        "[].payload.output" => insta::dynamic_redaction(without_durations),
    });
}

agent_harness::fixture_tests! { check;
    edit_files => "edit-files",
    read_files => "read-files",
    npm_test_passing => "npm-test-passing",
    npm_test_failing => "npm-test-failing",
    npm_test_failing_exit_0 => "npm-test-failing-exit-0",
    refused_command => "refused-command",
    tool_error => "tool-error",
    several_blocks => "several-blocks",
    tool_results_out_of_order => "tool-results-out-of-order",
    error_401 => "error-401",
    error_403 => "error-403",
    error_429 => "error-429",
    error_500 => "error-500",
    error_529 => "error-529",
    error_credit => "error-credit",
    budget_exhausted => "budget-exhausted",
    retry_then_success => "retry-then-success",
}

fn types(name: &str) -> Vec<&'static str> {
    replay(name).iter().map(|(e, _)| e.type_name()).collect()
}

#[test]
fn every_event_comes_from_a_line_of_the_recording() {
    for name in fixtures().names() {
        let text = fixtures().text(&name);
        for (event, raw) in replay(&name) {
            assert!(
                text.lines().any(|l| l == raw),
                "{name}: {} has a raw line that is in the recording",
                event.type_name()
            );
        }
    }
}

#[test]
fn test_runs_pass_fail_and_fail_behind_exit_code_zero() {
    let verdict = |name: &str| {
        replay(name)
            .into_iter()
            .find_map(|(e, _)| match e {
                EventBody::TestResult(t) => Some((t.passed, t.exit_code, t.summary)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{name} has a test.result"))
    };
    assert_eq!(
        verdict("npm-test-passing"),
        (true, Some(0), Some("pass 1".into()))
    );
    assert_eq!(
        verdict("npm-test-failing"),
        (
            false,
            Some(1),
            Some("not ok 2 - months start at one".into())
        )
    );
    let (passed, exit_code, _) = verdict("npm-test-failing-exit-0");
    assert_eq!(
        (passed, exit_code),
        (false, Some(0)),
        "the pipe's exit code 0 does not hide the failure"
    );
}

#[test]
fn a_refused_command_is_a_denied_message_and_a_failed_command() {
    let events = replay("refused-command");
    let denied: Vec<_> = events
        .iter()
        .filter_map(|(e, _)| match e {
            EventBody::Message(m) if m.denied => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0].tool.as_deref(), Some("Bash"));
    assert!(
        denied[0].text.contains("curl -s http://127.0.0.1:9/"),
        "{}",
        denied[0].text
    );
    assert!(
        events
            .iter()
            .any(|(e, _)| matches!(e, EventBody::CommandFinished(f) if f.is_error))
    );
    assert!(
        !events
            .iter()
            .any(|(e, _)| matches!(e, EventBody::TestResult(_)))
    );
}

#[test]
fn api_errors_give_provider_status_live_and_a_failed_task() {
    for (name, state, reason) in [
        ("error-401", "auth_expired", "auth_failed"),
        ("error-403", "auth_expired", "auth_failed"),
        ("error-429", "rate_limited", "agent_error"),
        ("error-529", "down", "agent_error"),
        ("error-500", "down", "agent_error"),
        ("error-credit", "subscription_inactive", "agent_error"),
    ] {
        let events = replay(name);
        let statuses: Vec<Value> = events
            .iter()
            .filter(|(e, _)| matches!(e, EventBody::ProviderStatus(_)))
            .map(|(e, _)| serde_json::to_value(e).unwrap()["payload"].clone())
            .collect();
        assert!(!statuses.is_empty(), "{name}: a provider.status");
        assert!(
            statuses.iter().all(|s| s["status"] == state),
            "{name}: {statuses:?}"
        );
        let last = serde_json::to_value(&events.last().unwrap().0).unwrap();
        assert_eq!(last["type"], "task.failed", "{name}");
        assert_eq!(last["payload"]["reason"], reason, "{name}");
    }
    // The first provider.status comes from the first retry line, before the final error.
    let events = replay("error-429");
    let first = events
        .iter()
        .position(|(e, _)| matches!(e, EventBody::ProviderStatus(_)))
        .unwrap();
    assert!(events[first].1.contains("\"api_retry\""));
    assert!(
        matches!(&events[first].0, EventBody::ProviderStatus(s) if s.resets_at.is_some() && s.retry_attempt == Some(1))
    );
}

#[test]
fn a_run_that_retried_and_then_answered_finishes() {
    assert_eq!(
        types("retry-then-success"),
        [
            "task.started",
            "provider.status",
            // The prompt, as Claude Code took it in (`--replay-user-messages`), once the
            // request went through.
            "message",
            "message",
            "task.finished"
        ]
    );
}

#[test]
fn the_budget_running_out_fails_the_task_with_its_cost() {
    let (last, _) = replay("budget-exhausted").pop().unwrap();
    let EventBody::TaskFailed(failed) = last else {
        panic!("{last:?}")
    };
    assert_eq!(
        failed.reason,
        runner_contract::event::FailureKind::BudgetExhausted
    );
    assert_eq!(failed.cost_usd, Some(0.8400000000000001));
    assert!(
        failed.message.contains("Reached maximum budget ($0.01)"),
        "{}",
        failed.message
    );
}

#[test]
fn tool_results_out_of_order_still_match_their_uses() {
    let events = replay("tool-results-out-of-order");
    let reads: Vec<(String, String)> = events
        .iter()
        .filter_map(|(e, _)| match e {
            EventBody::FileRead(r) => Some((r.tool.clone(), r.tool_use_id.clone().unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(
        reads,
        [
            ("Read".into(), "toolu_81read".into()),
            ("Grep".into(), "toolu_82grep".into()),
            ("Glob".into(), "toolu_83glob".into()),
        ]
    );
    // The recorded results came back Glob, Grep, Read: nothing is left pending.
    let mut parser = ClaudeCode::with_program("claude").parser();
    let text = fixtures().text("tool-results-out-of-order");
    for line in text.lines() {
        parser.parse_line(line);
    }
    assert!(parser.finish(Some(0)).is_empty());
}

#[test]
fn edits_are_reported_once_they_worked() {
    let changed: Vec<Value> = replay("edit-files")
        .iter()
        .filter(|(e, _)| matches!(e, EventBody::FileChanged(_)))
        .map(|(e, _)| serde_json::to_value(e).unwrap()["payload"].clone())
        .collect();
    assert_eq!(
        changed,
        [
            json!({"path": "src/date.js", "tool": "Edit", "change": "modified", "toolUseId": "toolu_02edit"}),
            json!({"path": "src/hello.js", "tool": "Write", "change": "added", "toolUseId": "toolu_03write"}),
        ],
        "MultiEdit is not a tool of 2.1.332: its error is a message, not a change"
    );
}
