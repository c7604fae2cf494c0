use serde_json::{Value, json};

use super::*;
use runner_contract::event::{FailureKind, ProviderState};

/// What mini prints: each trajectory as indented JSON with no final newline, so
/// the next write starts on the line of the last `}`.
fn stdout_of(trajectories: &[Value]) -> Vec<String> {
    let mut text =
        String::from("Building agent config from specs: ['/x/mini.yaml', '/x/task.yaml']\n");
    for t in trajectories {
        text.push_str(&serde_json::to_string_pretty(t).unwrap());
    }
    text.push_str("\n\u{1b}[1;31mProvider List: https://docs.litellm.ai/docs/providers\u{1b}[0m\n\nSaved trajectory to '/dev/stdout'\n");
    text.lines().map(str::to_owned).collect()
}

fn events_of(lines: &[String]) -> Vec<EventBody> {
    let mut parser = MiniParser::default();
    let mut events: Vec<EventBody> = lines.iter().flat_map(|l| parser.parse_line(l)).collect();
    events.extend(parser.finish(Some(0)));
    events
}

fn trajectory(messages: &[Value], cost: f64, calls: u64) -> Value {
    json!({
        "info": {
            "model_stats": { "instance_cost": cost, "api_calls": calls },
            "config": { "model": { "model_name": "openai/scripted-model" }, "agent": { "cost_limit": 0.5 },
                        "environment": { "cwd": "" } },
            "mini_version": "2.4.6", "exit_status": "", "submission": "",
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    })
}

fn assistant(text: &str, commands: &[(&str, &str)]) -> Value {
    json!({
        "role": "assistant", "content": text,
        "tool_calls": commands.iter().map(|(id, c)| json!({ "id": id, "type": "function",
            "function": { "name": "bash", "arguments": json!({ "command": c }).to_string() } })).collect::<Vec<_>>(),
        "extra": {
            "actions": commands.iter().map(|(id, c)| json!({ "command": c, "tool_call_id": id })).collect::<Vec<_>>(),
            "response": { "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 } },
            "cost": 0.0,
        },
    })
}

fn tool(id: &str, code: i32, output: &str) -> Value {
    json!({ "role": "tool", "tool_call_id": id,
            "content": json!({ "returncode": code, "output": output }).to_string(),
            "extra": { "raw_output": output, "returncode": code, "exception_info": "" } })
}

fn start() -> Vec<Value> {
    vec![
        json!({ "role": "system", "content": "You are a helpful assistant." }),
        json!({ "role": "user", "content": "Please solve this issue: fix it" }),
    ]
}

fn exit(status: &str, content: &str) -> Value {
    json!({ "role": "exit", "content": content, "extra": { "exit_status": status, "submission": "" } })
}

fn types(events: &[EventBody]) -> Vec<&'static str> {
    events.iter().map(EventBody::type_name).collect()
}

#[test]
fn each_write_adds_only_its_new_messages() {
    let mut step1 = start();
    step1.push(assistant(
        "Looking.",
        &[("call_1", "cat a.txt"), ("call_2", "false")],
    ));
    step1.push(tool("call_1", 0, "hello\n"));
    step1.push(tool("call_2", 1, ""));
    let mut step2 = step1.clone();
    step2.push(assistant(
        "Done.",
        &[("call_3", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")],
    ));
    step2.push(exit("Submitted", ""));
    let events = events_of(&stdout_of(&[
        trajectory(&step1, 0.0, 1),
        trajectory(&step2, 0.0, 2),
    ]));
    assert_eq!(
        types(&events),
        [
            "task.started",
            "message",
            "command.started",
            "command.started",
            "command.finished",
            "command.finished",
            "message",
            "command.started",
            "command.finished",
            "task.finished",
        ]
    );
    let EventBody::TaskStarted(started) = &events[0] else {
        panic!()
    };
    assert_eq!(started.model.as_deref(), Some("openai/scripted-model"));
    let EventBody::CommandFinished(failed) = &events[5] else {
        panic!()
    };
    assert_eq!(
        (
            failed.command.as_str(),
            failed.exit_code,
            failed.is_error,
            failed.tool_use_id.as_deref()
        ),
        ("false", Some(1), true, Some("call_2"))
    );
    let EventBody::CommandFinished(submit) = &events[8] else {
        panic!()
    };
    assert_eq!((submit.exit_code, submit.is_error), (Some(0), false));
    let EventBody::TaskFinished(finished) = &events[9] else {
        panic!()
    };
    assert_eq!(finished.result.as_deref(), Some("Done."));
    assert_eq!(finished.num_turns, Some(2));
    assert_eq!(finished.cost_usd, None, "litellm could not price the model");
    assert_eq!(finished.usage.as_ref().unwrap()["total_tokens"], 240);
}

#[test]
fn a_test_run_that_fails_behind_exit_code_0_did_not_pass() {
    let mut messages = start();
    messages.push(assistant("", &[("call_t", "npm test 2>&1 | tail -n 5")]));
    messages.push(tool("call_t", 0, "# tests 2\n# pass 1\n# fail 1\n"));
    let events = events_of(&stdout_of(&[trajectory(&messages, 0.0, 1)]));
    assert_eq!(
        types(&events),
        [
            "task.started",
            "command.started",
            "command.finished",
            "test.result"
        ]
    );
    let EventBody::TestResult(result) = &events[3] else {
        panic!()
    };
    assert!(!result.passed);
    assert_eq!(result.summary.as_deref(), Some("fail 1"));
}

#[test]
fn an_authentication_error_is_a_provider_status_and_a_failure() {
    let mut messages = start();
    messages.push(exit(
        "AuthenticationError",
        "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key provided.",
    ));
    let events = events_of(&stdout_of(&[trajectory(&messages, 0.0, 0)]));
    assert_eq!(
        types(&events),
        ["task.started", "provider.status", "task.failed"]
    );
    let EventBody::ProviderStatus(status) = &events[1] else {
        panic!()
    };
    assert_eq!(
        (status.status, status.http_status),
        (ProviderState::AuthExpired, Some(401))
    );
    let EventBody::TaskFailed(failed) = &events[2] else {
        panic!()
    };
    assert_eq!(failed.reason, FailureKind::AuthFailed);
}

#[test]
fn a_format_error_is_said_and_the_run_goes_on() {
    let mut messages = start();
    messages.push(json!({ "role": "user", "content": "Tool call error:\n\n<error>\nNo tool calls found.\n</error>\n\nHere is general guidance", "extra": { "interrupt_type": "FormatError" } }));
    let events = events_of(&stdout_of(&[trajectory(&messages, 0.0, 1)]));
    assert_eq!(types(&events), ["task.started", "message"]);
    let EventBody::Message(said) = &events[1] else {
        panic!()
    };
    assert_eq!(said.role, MessageRole::System);
    assert_eq!(said.text, "FormatError: No tool calls found.");
}

#[test]
fn nothing_counts_after_the_exit_and_open_commands_finish_at_the_end() {
    let mut messages = start();
    messages.push(assistant("", &[("call_1", "sleep 100")]));
    let events = events_of(&stdout_of(&[trajectory(&messages, 0.0, 1)]));
    assert_eq!(
        types(&events),
        ["task.started", "command.started", "command.finished"]
    );
    let EventBody::CommandFinished(open) = &events[2] else {
        panic!()
    };
    assert!(open.is_error && open.exit_code.is_none());

    let mut ended = start();
    ended.push(exit("LimitsExceeded", "LimitsExceeded"));
    let mut more = ended.clone();
    more.push(assistant("after the end", &[]));
    let events = events_of(&stdout_of(&[
        trajectory(&ended, 0.62, 4),
        trajectory(&more, 0.62, 4),
    ]));
    assert_eq!(types(&events), ["task.started", "task.failed"]);
    let EventBody::TaskFailed(failed) = &events[1] else {
        panic!()
    };
    assert_eq!(failed.reason, FailureKind::BudgetExhausted);
    assert_eq!(failed.cost_usd, Some(0.62));
}

#[test]
fn lines_outside_the_trajectory() {
    let mut parser = MiniParser::default();
    assert!(
        parser
            .parse_line("Saved trajectory to '/dev/stdout'")
            .is_empty()
    );
    assert!(
        parser
            .parse_line(
                "\u{1b}[1;31mProvider List: https://docs.litellm.ai/docs/providers\u{1b}[0m"
            )
            .is_empty()
    );
    assert!(
        parser.parse_line("{\"type\":\"x\"}").is_empty(),
        "JSON is skipped"
    );
    let said = parser.parse_line("\u{1b}[31mTraceback (most recent call last):\u{1b}[0m");
    let [EventBody::Message(message)] = said.as_slice() else {
        panic!("{said:?}")
    };
    assert_eq!(message.text, "Traceback (most recent call last):");
    assert_eq!(message.role, MessageRole::System);
    assert!(parser.parse_line("{").is_empty());
    assert!(parser.parse_line("  \"not\": \"closed\"").is_empty());
    let cut = parser.finish(Some(0));
    assert!(
        matches!(cut.as_slice(), [EventBody::Message(m)] if m.text.contains("cut short after 2 lines"))
    );
}
