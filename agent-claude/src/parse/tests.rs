//! Unit tests of the mapping on hand-written lines; the recordings are replayed in tests/.

use super::*;
use runner_contract::event::FailureKind;

fn parse(lines: &[&str]) -> Vec<EventBody> {
    let mut parser = ClaudeParser::default();
    lines.iter().flat_map(|l| parser.parse_line(l)).collect()
}

#[test]
fn a_line_that_is_not_json_is_a_message_with_its_text() {
    let events = parse(&["Error: something broke"]);
    assert_eq!(
        events,
        [system_message("Error: something broke".into(), None)]
    );
}

#[test]
fn unknown_types_and_shapes_are_skipped() {
    assert!(
        parse(&[
            r##"{"type":"rate_limit_event","rate_limit_info":{}}"##,
            r##"{"type":"stream_event"}"##,
            r##"{"type":"system","subtype":"thinking_tokens"}"##,
            r##"{"type":"assistant","message":"odd"}"##,
            r##"{"type":"user","message":{"content":"a plain prompt"}}"##,
            r##"{"type":{"nested":true}}"##,
            "[1,2,3]",
            "   ",
        ])
        .is_empty()
    );
}

#[test]
fn a_field_of_another_type_reads_as_absent() {
    let events = parse(&[
        r##"{"type":"system","subtype":"init","model":{"odd":1},"session_id":"s","tools":"none"}"##,
    ]);
    assert_eq!(
        events,
        [EventBody::TaskStarted(TaskStarted {
            agent_session_id: Some("s".into()),
            ..TaskStarted::default()
        })]
    );
}

#[test]
fn several_blocks_in_one_line_give_several_events() {
    let events = parse(&[
        r##"{"type":"system","subtype":"init","cwd":"/w","session_id":"s"}"##,
        r##"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/w/a.js"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"npm test"}}]}}"##,
        r##"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"# pass 1\n# fail 0"},{"type":"tool_result","tool_use_id":"t1","content":"1\tx"}]}}"##,
    ]);
    let types: Vec<&str> = events.iter().map(EventBody::type_name).collect();
    assert_eq!(
        types,
        [
            "task.started",
            "message",
            "file.read",
            "command.started",
            "command.finished",
            "test.result"
        ]
    );
    assert!(matches!(&events[2], EventBody::FileRead(r) if r.path == "a.js"));
    assert!(matches!(&events[5], EventBody::TestResult(t) if t.passed && t.exit_code == Some(0)));
}

#[test]
fn results_match_their_tool_use_by_id_in_any_order() {
    let events = parse(&[
        r##"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"echo a"}}]}}"##,
        r##"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"b","name":"Bash","input":{"command":"echo b"}}]}}"##,
        r##"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"b","content":"b"}]}}"##,
        r##"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"Exit code 3\n\na","is_error":true}]}}"##,
    ]);
    let finished: Vec<(String, Option<i32>)> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::CommandFinished(f) => Some((f.command.clone(), f.exit_code)),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        [("echo b".into(), Some(0)), ("echo a".into(), Some(3))]
    );
}

#[test]
fn cost_and_usage_pass_through_exactly() {
    let events = parse(&[
        r##"{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.00014000000000000001,"num_turns":2,"duration_ms":241,"usage":{"input_tokens":10,"weird":[1.5e-7,{"a":null}]}}"##,
    ]);
    let EventBody::TaskFinished(done) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(done.cost_usd, Some(0.00014000000000000001));
    assert_eq!(
        serde_json::to_string(&done.cost_usd).unwrap(),
        "0.00014000000000000001"
    );
    assert_eq!(
        done.usage.as_ref().unwrap().to_string(),
        r##"{"input_tokens":10,"weird":[1.5e-7,{"a":null}]}"##
    );
    assert_eq!((done.num_turns, done.duration_ms), (Some(2), Some(241)));
}

#[test]
fn the_outcome_comes_from_is_error_not_subtype() {
    let events = parse(&[
        r##"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key","total_cost_usd":0}"##,
    ]);
    let EventBody::TaskFailed(failed) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(failed.reason, FailureKind::AuthFailed);
    assert!(
        failed
            .message
            .starts_with("Invalid API key — check ANTHROPIC_API_KEY")
    );
}

#[test]
fn pending_commands_and_changes_are_owed_at_the_end() {
    let mut parser = ClaudeParser::default();
    parser.parse_line(r##"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c","name":"Bash","input":{"command":"sleep 9"}},{"type":"tool_use","id":"e","name":"Edit","input":{"file_path":"x"}}]}}"##);
    let owed: Vec<&str> = parser
        .finish(Some(0))
        .iter()
        .map(EventBody::type_name)
        .collect();
    assert_eq!(owed, ["command.finished", "file.changed"]);
    assert!(parser.finish(Some(0)).is_empty());
}

#[test]
fn a_huge_output_keeps_its_end() {
    let big = format!(
        "{}\n# fail 1",
        "x".repeat(runner_contract::testrun::OUTPUT_KEEP * 2)
    );
    let line = serde_json::json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":big}]}}).to_string();
    let events = parse(&[
        r##"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"npm test"}}]}}"##,
        &line,
    ]);
    let EventBody::CommandFinished(done) = &events[1] else {
        panic!()
    };
    assert!(
        done.output.len() <= runner_contract::testrun::OUTPUT_KEEP + 3
            && done.output.ends_with("# fail 1")
    );
    assert!(matches!(&events[2], EventBody::TestResult(t) if !t.passed));
}

/// The conversation lines of Claude Code 2.1.332 with `--input-format stream-json
/// --replay-user-messages --permission-prompt-tool stdio`, as seen against the scripted server.
#[test]
fn a_conversation_gives_the_inputs_taken_in_the_permission_requests_and_one_start() {
    let events = parse(&[
        r##"{"type":"control_response","response":{"subtype":"success","request_id":"codehands-initialize","response":{"commands":[]}}}"##,
        r##"{"type":"system","subtype":"init","cwd":"/w","session_id":"s1","tools":["Bash"],"model":"m"}"##,
        r##"{"type":"user","message":{"role":"user","content":"hello FIRST"},"session_id":"s1","parent_tool_use_id":null,"uuid":"u1","isReplay":true}"##,
        r##"{"type":"command_lifecycle","command_uuid":"u2","state":"queued","uuid":"x","session_id":"s1"}"##,
        r##"{"type":"control_request","request_id":"r-1","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"python3 -c \"print(42)\"","description":"run it"},"permission_suggestions":[{"type":"addRules","behavior":"allow"}],"decision_reason":"This command requires approval","tool_use_id":"toolu_01bash"}}"##,
        r##"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"also MIDTURN"}]},"isReplay":true}"##,
        r##"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}"##,
        r##"{"type":"system","subtype":"init","cwd":"/w","session_id":"s1","tools":["Bash"],"model":"m"}"##,
        r##"{"type":"control_request","request_id":"r-2","request":{"subtype":"hook_callback"}}"##,
    ]);
    let user = |text: &str| {
        EventBody::Message(Message {
            text: text.into(),
            role: MessageRole::User,
            denied: false,
            tool: None,
        })
    };
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(
        matches!(&events[0], EventBody::TaskStarted(s) if s.agent_session_id.as_deref() == Some("s1"))
    );
    assert_eq!(events[1], user("hello FIRST"));
    let EventBody::PermissionRequested(asked) = &events[2] else {
        panic!("{:?}", events[2]);
    };
    assert_eq!(asked.request_id, "r-1");
    assert_eq!(asked.tool, "Bash");
    assert_eq!(asked.input["command"], "python3 -c \"print(42)\"");
    assert_eq!(asked.tool_use_id.as_deref(), Some("toolu_01bash"));
    assert_eq!(asked.suggestions.as_ref().unwrap()[0]["type"], "addRules");
    assert_eq!(events[3], user("also MIDTURN"));
}

/// Claude Code 2.1.332's `total_cost_usd` counts the whole session (earlier results of the
/// process, and the runs a resume continues); each result's own share is in
/// `model_usage_since_last_result`.
#[test]
fn a_processs_results_cost_their_own_share_summed() {
    let result = |total: f64, own: f64, input: u64| {
        format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":{total},"usage":{{"input_tokens":{input},"output_tokens":20,"service_tier":"standard"}},"model_usage_since_last_result":{{"m":{{"costUSD":{own}}}}}}}"#
        )
    };
    let cost = |events: &[EventBody]| match events.last() {
        Some(EventBody::TaskFinished(f)) => (f.cost_usd, f.usage.clone().unwrap_or_default()),
        other => panic!("{other:?}"),
    };
    // A resumed session's run: its own share only, not the first run's.
    let (spent, _) = cost(&parse(&[&result(0.0016, 0.0008, 100)]));
    assert_eq!(spent, Some(0.0008));
    // Two turns in one process (a message taken in after a result): both shares, and the
    // tokens of both.
    let (spent, usage) = cost(&parse(&[
        &result(0.0024, 0.0008, 100),
        &result(0.0032, 0.0008, 50),
    ]));
    assert_eq!(spent, Some(0.0016));
    assert_eq!(usage["input_tokens"], 150);
    assert_eq!(usage["output_tokens"], 40);
    assert_eq!(usage["service_tier"], "standard");
    // An older line without the share: its total.
    let old = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5}"#;
    assert_eq!(cost(&parse(&[old])).0, Some(0.5));
}

/// The `message`s with `denied: true` among `events`, their text.
fn refusals(events: &[EventBody]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EventBody::Message(m) if m.denied => Some(m.text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_refusal_is_said_once_whichever_line_says_it_with_the_setting_that_allows_it() {
    let tool_use = r##"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo build --offline"}}]}}"##;
    let result = r##"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Permission denied"}]},"tool_result_meta":[{"id":"t1","non_execution_kind":"permission-rule","permission_decision":{"decision":"reject"}}]}"##;
    let end = r##"{"type":"result","subtype":"success","is_error":false,"result":"ok","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"cargo build --offline"}},{"tool_name":"WebFetch","tool_use_id":"t2","tool_input":{"url":"https://example.com"}}]}"##;
    let events = parse(&[tool_use, result, end]);
    let said = refusals(&events);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0].starts_with("Claude Code was refused Bash: cargo build --offline — ")
            && said[0].contains("[agent] allow = [\"Bash(cargo build:*)\"]"),
        "{said:?}"
    );
    assert!(
        said[1].contains("[agent] allow = [\"WebFetch\"]"),
        "{said:?}"
    );
    // The refused command ran nothing: no exit code, and its refusal before its end.
    let types: Vec<&str> = events.iter().map(EventBody::type_name).collect();
    assert_eq!(
        types,
        [
            "command.started",
            "message",
            "command.finished",
            "message",
            "task.finished"
        ]
    );
}

#[test]
fn a_refusal_by_a_deny_rule_names_the_rule_to_remove() {
    let mut parser = ClaudeParser::with_deny_rules(vec!["Bash(curl:*)".into()]);
    let events: Vec<EventBody> = [
        r##"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -s http://x/"}}]}}"##,
        r##"{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"t1","decision_reason":"a deny rule"}"##,
        r##"{"type":"result","subtype":"success","is_error":false,"permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"curl -s http://x/"}}]}"##,
    ]
    .iter()
    .flat_map(|l| parser.parse_line(l))
    .collect();
    let said = refusals(&events);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("[agent] deny = [\"Bash(curl:*)\"] refuses it"),
        "{said:?}"
    );
}

#[test]
fn a_tool_the_caller_was_asked_about_is_not_a_refusal_of_the_settings() {
    let events = parse(&[
        r##"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"curl x"},"tool_use_id":"t1"}}"##,
        r##"{"type":"result","subtype":"success","is_error":false,"permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"curl x"}}]}"##,
    ]);
    assert!(refusals(&events).is_empty(), "{events:?}");
}
