//! The JSON-lines parser over a map like a profile's.

use super::*;

/// A CLI that prints `{"event": …}` lines with its own field names.
fn map() -> JsonLinesMap {
    serde_json::from_value(serde_json::json!({
        "kind": "event",
        "message": {"when": "say", "text": "text"},
        "command": {"when": "ran", "command": "cmd", "exit-code": "status.code",
                    "output": "stdout", "id": "call", "test": "is_test"},
        "result": {"when": "done", "text": "summary", "cost-usd": "usage.usd",
                   "input-tokens": "usage.in", "output-tokens": "usage.out"},
        "error": {"when": "fail", "message": "why"},
    }))
    .unwrap()
}

fn parse(lines: &[&str], exit: Option<i32>) -> Vec<EventBody> {
    let mut parser = JsonLinesParser::new(map());
    let mut events: Vec<EventBody> = lines.iter().flat_map(|l| parser.parse_line(l)).collect();
    events.extend(parser.finish(exit));
    events
}

#[test]
fn maps_messages_commands_tests_and_cost_by_field_names() {
    let events = parse(
        &[
            r#"{"event":"say","text":"Looking at the tests."}"#,
            r#"{"event":"ran","cmd":"ls","status":{"code":0},"stdout":"a.py\n","call":"c1"}"#,
            r#"{"event":"ran","cmd":"./check","status":{"code":1},"stdout":"1 failed\n","is_test":true}"#,
            r#"{"event":"ran","cmd":"pytest -q","status":{"code":0},"stdout":"ok","is_test":false}"#,
            r#"{"event":"heartbeat"}"#,
            r#"{"event":"done","summary":"Fixed it.","usage":{"usd":0.0012,"in":120,"out":30}}"#,
        ],
        Some(0),
    );
    let types: Vec<&str> = events.iter().map(EventBody::type_name).collect();
    assert_eq!(
        types,
        [
            "message",
            "command.started",
            "command.finished",
            "command.started",
            "command.finished",
            "test.result",
            "command.started",
            "command.finished",
            "task.finished",
        ]
    );
    match &events[2] {
        EventBody::CommandFinished(c) => {
            assert_eq!((c.command.as_str(), c.exit_code), ("ls", Some(0)));
            assert_eq!(c.tool_use_id.as_deref(), Some("c1"));
        }
        other => panic!("{other:?}"),
    }
    match &events[5] {
        EventBody::TestResult(t) => assert!(!t.passed && t.command == "./check"),
        other => panic!("{other:?}"),
    }
    match &events[8] {
        EventBody::TaskFinished(f) => {
            assert_eq!(f.result.as_deref(), Some("Fixed it."));
            assert_eq!(f.cost_usd, Some(0.0012));
            assert_eq!(
                f.usage,
                Some(serde_json::json!({"input_tokens": 120, "output_tokens": 30}))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_error_line_fails_the_run_and_a_line_not_json_is_a_message() {
    let events = parse(
        &["plain words", r#"{"event":"fail","why":"no key"}"#],
        Some(1),
    );
    match &events[..] {
        [EventBody::Message(m), EventBody::TaskFailed(f)] => {
            assert_eq!(m.text, "plain words");
            assert_eq!(f.message, "no key");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_result_line_the_exit_code_ends_the_run() {
    match &parse(&[r#"{"event":"say","text":"All done."}"#], Some(0))[..] {
        [_, EventBody::TaskFinished(f)] => assert_eq!(f.result.as_deref(), Some("All done.")),
        other => panic!("{other:?}"),
    }
    match &parse(&[r#"{"event":"say","text":"Oops."}"#], Some(3))[..] {
        [_, EventBody::TaskFailed(f)] => {
            assert_eq!(f.exit_code, Some(3));
            assert_eq!(f.stderr, None, "the runner adds the real stderr");
        }
        other => panic!("{other:?}"),
    }
    assert!(parse(&[], Some(0)).is_empty(), "nothing seen, nothing owed");
}

#[test]
fn the_map_is_checked_whole() {
    let mut bad = map();
    bad.error.as_mut().unwrap().when = "say".into();
    let why = bad.check().unwrap_err();
    assert!(why.contains("`message.when` and `error.when`"), "{why}");
    let mut bad = map();
    bad.result.as_mut().unwrap().cost_usd = Some("usage..usd".into());
    assert!(bad.check().unwrap_err().contains("result.cost-usd"));
    let empty = JsonLinesMap {
        kind: "type".into(),
        message: None,
        command_started: None,
        command: None,
        result: None,
        error: None,
    };
    assert!(empty.check().unwrap_err().contains("maps no kind of line"));
    assert!(map().check().is_ok());
    let unknown = serde_json::from_value::<JsonLinesMap>(serde_json::json!({
        "kind": "type", "message": {"when": "m", "text": "t", "colour": "red"}
    }));
    assert!(unknown.unwrap_err().to_string().contains("colour"));
}
