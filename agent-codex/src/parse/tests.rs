//! The parser on single lines, including shapes the recordings cannot show
//! (todo lists, MCP calls, failed patches, commands without a start).

use super::*;

fn parse(lines: &[&str]) -> Vec<EventBody> {
    let mut parser = CodexParser::default();
    lines.iter().flat_map(|l| parser.parse_line(l)).collect()
}

#[test]
fn unwraps_the_shell_codex_adds() {
    assert_eq!(unwrap_shell("/bin/bash -lc 'npm test'"), "npm test");
    assert_eq!(
        unwrap_shell("/bin/bash -lc 'npm test 2>&1 | tail -n 20'"),
        "npm test 2>&1 | tail -n 20"
    );
    assert_eq!(unwrap_shell(r#"bash -lc "echo \"hi\"""#), r#"echo "hi""#);
    assert_eq!(
        unwrap_shell(r#"/bin/bash -lc 'echo '"'"'x'"'"''"#),
        "echo 'x'"
    );
    assert_eq!(unwrap_shell("ls -la"), "ls -la", "no shell: kept");
    assert_eq!(
        unwrap_shell("/bin/bash -lc 'open"),
        "/bin/bash -lc 'open",
        "open quote: kept"
    );
    assert_eq!(
        unwrap_shell("python -c 'print(1)'"),
        "python -c 'print(1)'",
        "not a shell"
    );
}

#[test]
fn a_command_completed_without_a_start_still_starts_first() {
    let events = parse(&[
        r#"{"type":"item.completed","item":{"id":"item_9","type":"command_execution","command":"/bin/bash -lc 'rm -rf /'","aggregated_output":"","exit_code":null,"status":"declined"}}"#,
    ]);
    assert!(matches!(&events[0], EventBody::CommandStarted(s) if s.command == "rm -rf /"));
    assert!(
        matches!(&events[1], EventBody::CommandFinished(f) if f.is_error && f.exit_code.is_none()),
        "{events:?}"
    );
}

#[test]
fn a_failing_test_behind_exit_code_zero_fails() {
    let events = parse(&[
        r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'npm test | tail'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        r##"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'npm test | tail'","aggregated_output":"# pass 1\n# fail 1\n","exit_code":0,"status":"completed"}}"##,
    ]);
    let result = events
        .iter()
        .find_map(|e| match e {
            EventBody::TestResult(t) => Some(t),
            _ => None,
        })
        .expect("a test result");
    assert!(!result.passed);
    assert_eq!(result.exit_code, Some(0));
    assert_eq!(result.summary.as_deref(), Some("fail 1"));
}

#[test]
fn a_plan_becomes_a_checklist_message() {
    let events = parse(&[
        r#"{"type":"item.started","item":{"id":"item_2","type":"todo_list","items":[{"text":"read","completed":true},{"text":"fix","completed":false}]}}"#,
        r#"{"type":"item.updated","item":{"id":"item_2","type":"todo_list","items":[{"text":"read","completed":true},{"text":"fix","completed":true}]}}"#,
        r#"{"type":"item.completed","item":{"id":"item_2","type":"todo_list","items":[{"text":"read","completed":true},{"text":"fix","completed":true}]}}"#,
    ]);
    assert_eq!(
        events.len(),
        2,
        "started and updated, not completed: {events:?}"
    );
    assert!(matches!(&events[0], EventBody::Message(m) if m.text == "Plan:\n[x] read\n[ ] fix"));
    assert!(matches!(&events[1], EventBody::Message(m) if m.text.ends_with("[x] fix")));
}

#[test]
fn an_mcp_call_names_its_tool_and_error() {
    let events = parse(&[
        r#"{"type":"item.started","item":{"id":"item_3","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"status":"in_progress"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"result":null,"error":{"message":"timed out"},"status":"failed"}}"#,
    ]);
    assert_eq!(events.len(), 1);
    assert!(
        matches!(&events[0], EventBody::Message(m) if m.text == "MCP tool docs.search failed: timed out" && m.tool.as_deref() == Some("docs.search"))
    );
}

#[test]
fn a_failed_patch_changes_no_file() {
    let events = parse(&[
        r#"{"type":"item.completed","item":{"id":"item_4","type":"file_change","changes":[{"path":"/r/a.js","kind":"update"}],"status":"failed"}}"#,
    ]);
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], EventBody::Message(m) if m.text.contains("/r/a.js")));
}

#[test]
fn files_change_one_event_per_path() {
    let events = parse(&[
        r#"{"type":"item.completed","item":{"id":"item_5","type":"file_change","changes":[{"path":"/r/a.js","kind":"add"},{"path":"/r/b.js","kind":"delete"},{"path":"/r/c.js","kind":"update"}],"status":"completed"}}"#,
    ]);
    let kinds: Vec<_> = events
        .iter()
        .map(|e| match e {
            EventBody::FileChanged(f) => (f.path.as_str(), f.change),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("/r/a.js", Some(FileChangeKind::Added)),
            ("/r/b.js", Some(FileChangeKind::Deleted)),
            ("/r/c.js", Some(FileChangeKind::Modified)),
        ]
    );
}

#[test]
fn the_result_is_the_last_message_and_usage_passes_through() {
    let events = parse(&[
        r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"first"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"second"}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":7,"cached_input_tokens":1,"output_tokens":2,"future_field":3}}"#,
    ]);
    let EventBody::TaskFinished(done) = events.last().unwrap() else {
        panic!("{events:?}")
    };
    assert_eq!(done.result.as_deref(), Some("second"));
    assert_eq!(
        done.usage,
        Some(
            serde_json::json!({"input_tokens":7,"cached_input_tokens":1,"output_tokens":2,"future_field":3})
        )
    );
}

#[test]
fn a_turn_failed_on_auth_is_an_auth_failure() {
    let events = parse(&[
        r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Incorrect API key provided."}}"#,
        r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}"#,
        r#"{"type":"turn.failed"}"#,
    ]);
    let reasons: Vec<_> = events
        .iter()
        .map(|e| match e {
            EventBody::TaskFailed(f) => f.reason,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        reasons,
        [
            FailureKind::AuthFailed,
            FailureKind::AgentError,
            FailureKind::AgentError
        ]
    );
}

#[test]
fn unknown_items_and_reasoning_are_skipped() {
    let events = parse(&[
        r#"{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"hmm"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_1","type":"a_new_item","x":1}}"#,
        r#"{"type":"turn.started"}"#,
        r#"{"type":"item.completed"}"#,
    ]);
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn a_command_cut_off_is_finished_as_an_error_at_the_end() {
    let mut parser = CodexParser::default();
    parser.parse_line(r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"sleep 100","status":"in_progress"}}"#);
    let owed = parser.finish(Some(0));
    assert!(
        matches!(owed.as_slice(), [EventBody::CommandFinished(f)] if f.is_error && f.command == "sleep 100")
    );
    assert!(parser.finish(Some(0)).is_empty(), "owed once");
}
