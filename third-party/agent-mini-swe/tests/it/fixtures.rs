//! Replays every recording of the real mini-swe-agent through the adapter's
//! parser and snapshots the events, then checks what each recording is there to show.

use agent_harness::Fixtures;
use agent_harness::snapshot::{redact_runs, without_durations};
use agent_mini_swe::MiniSweAgent;
use runner_contract::EventBody;
use runner_contract::event::{FailureKind, ProviderState};
use serde_json::Value;

fn fixtures() -> Fixtures {
    Fixtures::of(env!("CARGO_MANIFEST_DIR"))
}

/// The events of a fixture.
fn replay(name: &str) -> Vec<EventBody> {
    fixtures()
        .replay(&MiniSweAgent::without_config("mini"), name)
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

fn check(name: &str) {
    // The recording's temp folder changes with every recording.
    let text = serde_json::to_string(&replay(name)).unwrap();
    let text = agent_harness::snapshot::as_tmp(&text);
    let text = redact_runs(&text, "/tmp/.tmp", char::is_alphanumeric, "[tmp]");
    let events: Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!(name, events, {
        "[].payload.output" => insta::dynamic_redaction(without_durations),
    });
}

agent_harness::fixture_tests! { check;
    fix_and_submit => "fix-and-submit",
    two_commands_in_one_turn => "two-commands-in-one-turn",
    failing_test => "failing-test",
    failing_test_exit_0 => "failing-test-exit-0",
    no_command => "no-command",
    error_401 => "error-401",
    error_429 => "error-429",
    error_quota => "error-quota",
    error_500 => "error-500",
    retry_then_success => "retry-then-success",
    notes => "notes",
    prompt_as_text => "prompt-as-text",
    budget_exhausted => "budget-exhausted",
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

fn fixture_names() -> Vec<String> {
    fixtures().names()
}

#[test]
fn every_run_starts_once_and_ends_once_with_every_command_finished() {
    for name in fixture_names() {
        let events = replay(&name);
        assert!(
            matches!(&events[0], EventBody::TaskStarted(s) if s.model.as_deref().is_some_and(|m| m.starts_with("openai/"))),
            "{name}: starts with task.started naming the model: {:?}",
            events[0]
        );
        let terminals = events.iter().filter(|e| e.is_terminal()).count();
        assert_eq!(terminals, 1, "{name}: exactly one terminal event");
        assert!(
            events.last().unwrap().is_terminal(),
            "{name}: it is the last"
        );
        let started = types(&name)
            .iter()
            .filter(|t| **t == "command.started")
            .count();
        let finished = types(&name)
            .iter()
            .filter(|t| **t == "command.finished")
            .count();
        assert_eq!(started, finished, "{name}: every command finishes");
        let chatter = events.iter().any(|e| {
            matches!(e, EventBody::Message(m) if m.text.contains("Provider List") || m.text.contains("Saved trajectory"))
        });
        assert!(!chatter, "{name}: mini's and litellm's chatter is skipped");
    }
}

#[test]
fn a_fix_is_read_made_checked_and_submitted() {
    assert_eq!(
        types("fix-and-submit"),
        [
            "task.started",
            "message",
            "command.started",
            "command.finished",
            "message",
            "command.started",
            "command.finished",
            "message",
            "command.started",
            "command.finished",
            "message",
            "command.started",
            "command.finished",
            "task.finished",
        ]
    );
    let finished = payloads("fix-and-submit", "command.finished");
    assert!(
        finished[0]["output"]
            .as_str()
            .unwrap()
            .contains("getMonth()")
    );
    assert_eq!(
        finished[1]["command"],
        "sed -i 's/getMonth()}/getMonth() + 1}/' src/date.js"
    );
    assert!(
        finished[2]["output"]
            .as_str()
            .unwrap()
            .contains("1 file changed")
    );
    assert!(
        finished
            .iter()
            .all(|f| f["exitCode"] == 0 && f["isError"] == false)
    );
    let done = &payloads("fix-and-submit", "task.finished")[0];
    assert_eq!(done["result"], "The month is fixed.");
    assert_eq!(done["numTurns"], 4);
    assert_eq!(
        done["usage"]["total_tokens"], 480,
        "4 responses of 120 tokens"
    );
    assert!(
        done.get("costUsd").is_none(),
        "litellm cannot price the scripted model"
    );
}

#[test]
fn two_tool_calls_of_one_answer_are_matched_by_id() {
    let finished = payloads("two-commands-in-one-turn", "command.finished");
    assert_eq!(finished[0]["toolUseId"], "call_p1");
    assert_eq!(finished[0]["exitCode"], 0);
    assert_eq!(finished[1]["toolUseId"], "call_p2");
    assert_eq!(finished[1]["command"], "ls src/missing.js");
    assert_ne!(finished[1]["exitCode"], 0);
    assert_eq!(finished[1]["isError"], true);
}

#[test]
fn failing_tests_fail_even_behind_exit_code_0() {
    let failing = payloads("failing-test", "test.result");
    assert_eq!(failing.len(), 1);
    assert_eq!(
        (failing[0]["passed"].clone(), failing[0]["exitCode"].clone()),
        (false.into(), 1.into())
    );
    let hidden = payloads("failing-test-exit-0", "test.result");
    assert_eq!(hidden.len(), 1);
    assert_eq!(hidden[0]["passed"], false);
    assert_eq!(hidden[0]["exitCode"], 0, "the pipe said 0");
    assert_eq!(hidden[0]["summary"], "fail 1");
}

#[test]
fn a_model_that_never_runs_a_command_ends_in_a_failure() {
    let said = payloads("no-command", "message");
    let format_errors = said
        .iter()
        .filter(|m| m["role"] == "system" && m["text"].as_str().unwrap().starts_with("FormatError"))
        .count();
    assert_eq!(format_errors, 3, "{said:#?}");
    assert_eq!(
        said[0]["text"],
        "FormatError: No tool calls found in the response. Every response MUST include at least one tool call."
    );
    let failed = &payloads("no-command", "task.failed")[0];
    assert_eq!(failed["reason"], "agent_error");
}

fn provider_state(name: &str) -> (ProviderState, Option<u16>) {
    let status = replay(name)
        .into_iter()
        .find_map(|e| match e {
            EventBody::ProviderStatus(s) => Some(s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: a provider.status"));
    (status.status, status.http_status)
}

fn failure(name: &str) -> FailureKind {
    replay(name)
        .into_iter()
        .find_map(|e| match e {
            EventBody::TaskFailed(f) => Some(f.reason),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: a task.failed"))
}

#[test]
fn provider_errors_are_named() {
    assert_eq!(
        provider_state("error-401"),
        (ProviderState::AuthExpired, Some(401))
    );
    assert_eq!(failure("error-401"), FailureKind::AuthFailed);
    assert_eq!(
        provider_state("error-429"),
        (ProviderState::RateLimited, Some(429))
    );
    assert_eq!(
        provider_state("error-quota"),
        (ProviderState::UsageLimit, Some(429))
    );
    assert_eq!(provider_state("error-500").0, ProviderState::Down);
    for name in ["error-429", "error-quota", "error-500"] {
        assert_eq!(failure(name), FailureKind::AgentError, "{name}");
    }
    assert_eq!(types("retry-then-success").last(), Some(&"task.finished"));
}

#[test]
fn the_cost_limit_ends_a_priced_run() {
    let failed = &payloads("budget-exhausted", "task.failed")[0];
    assert_eq!(failed["reason"], "budget_exhausted");
    assert!(failed["costUsd"].as_f64().unwrap() > 0.00001, "{failed}");
}
