use super::*;

fn plan(resume: Option<&str>) -> TurnPlan {
    TurnPlan {
        cwd: "/w".into(),
        blocks: vec!["Fix it.".into()],
        resume: resume.map(str::to_owned),
    }
}

fn update(kind_and_fields: Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": { "sessionId": "s1", "update": kind_and_fields },
    })
    .to_string()
}

fn result(id: u64, result: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string()
}

const INIT_OK: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#;

fn types(events: &[EventBody]) -> Vec<&'static str> {
    events.iter().map(EventBody::type_name).collect()
}

fn methods(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["method"].as_str().unwrap_or("(answer)").to_owned()
        })
        .collect()
}

/// A parser past the handshake of a new session `s1`.
fn prompting() -> AcpParser {
    let mut parser = AcpParser::driving(plan(None));
    parser.parse_line(INIT_OK);
    parser.parse_line(&result(2, json!({ "sessionId": "s1" })));
    parser.owed_input();
    parser
}

#[test]
fn the_handshake_owes_the_next_request_after_each_answer() {
    let mut parser = AcpParser::driving(plan(None));
    assert!(
        parser.owed_input().is_empty(),
        "initialize is the invocation's"
    );
    assert!(parser.parse_line(INIT_OK).is_empty());
    let owed = parser.owed_input();
    assert_eq!(methods(&owed), ["session/new"]);
    let new: Value = serde_json::from_str(&owed[0]).unwrap();
    assert_eq!(new["params"]["cwd"], "/w");
    let events = parser.parse_line(&result(
        2,
        json!({ "sessionId": "s1", "configOptions": [{"id": "model", "category": "model", "currentValue": "m1"}] }),
    ));
    let EventBody::TaskStarted(started) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(started.agent_session_id.as_deref(), Some("s1"));
    assert_eq!(started.model.as_deref(), Some("m1"));
    let owed = parser.owed_input();
    assert_eq!(methods(&owed), ["session/prompt"]);
    let prompt: Value = serde_json::from_str(&owed[0]).unwrap();
    assert_eq!(prompt["params"]["sessionId"], "s1");
    assert_eq!(prompt["params"]["prompt"][0]["text"], "Fix it.");
    assert!(parser.owed_input().is_empty(), "owed once");
}

#[test]
fn a_replay_owes_the_same_lines_and_a_reader_owes_none() {
    let lines = [INIT_OK.to_owned(), result(2, json!({ "sessionId": "s1" }))];
    let owed = |mut parser: AcpParser| {
        let mut all = Vec::new();
        for line in &lines {
            parser.parse_line(line);
            all.extend(parser.owed_input());
        }
        all
    };
    assert_eq!(
        owed(AcpParser::driving(plan(None))),
        owed(AcpParser::driving(plan(None)))
    );
    assert!(owed(AcpParser::reading()).is_empty());
}

#[test]
fn a_follow_up_loads_the_session_and_skips_the_history_it_replays() {
    let mut parser = AcpParser::driving(plan(Some("s1")));
    parser.parse_line(INIT_OK);
    let owed = parser.owed_input();
    assert_eq!(methods(&owed), ["session/load"]);
    let replayed = [
        update(
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "old"}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "t0", "kind": "execute", "status": "completed", "rawInput": {"command": "ls"}}),
        ),
        update(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "old answer"}}),
        ),
    ];
    for line in &replayed {
        assert!(parser.parse_line(line).is_empty(), "{line}");
    }
    let events = parser.parse_line(&result(2, json!({})));
    let EventBody::TaskStarted(started) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(started.agent_session_id.as_deref(), Some("s1"));
    assert_eq!(methods(&parser.owed_input()), ["session/prompt"]);
}

#[test]
fn resume_is_preferred_and_neither_is_a_clear_failure() {
    let mut parser = AcpParser::driving(plan(Some("s1")));
    parser.parse_line(
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"sessionCapabilities":{"resume":{}}}}}"#,
    );
    assert_eq!(methods(&parser.owed_input()), ["session/resume"]);

    let mut parser = AcpParser::driving(plan(Some("s1")));
    let events = parser.parse_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#);
    let EventBody::TaskFailed(failed) = &events[0] else {
        panic!("{events:?}")
    };
    assert!(
        failed.message.contains("cannot continue a conversation"),
        "{failed:?}"
    );
    assert!(parser.owed_input().is_empty());
}

#[test]
fn chunks_of_one_message_are_one_message() {
    let mut parser = prompting();
    let chunk = |text: &str, id: &str| {
        update(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": id, "content": {"type": "text", "text": text}}),
        )
    };
    assert!(parser.parse_line(&chunk("Hel", "m1")).is_empty());
    assert!(parser.parse_line(&chunk("lo.", "m1")).is_empty());
    // Thoughts are skipped without cutting the message.
    assert!(parser
        .parse_line(&update(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})))
        .is_empty());
    let events = parser.parse_line(&chunk("Next.", "m2"));
    assert!(
        matches!(&events[..], [EventBody::Message(m)] if m.text == "Hello." && m.role == MessageRole::Assistant)
    );
    let events = parser.parse_line(&result(3, json!({"stopReason": "end_turn"})));
    assert_eq!(types(&events), ["message", "task.finished"]);
    let EventBody::TaskFinished(finished) = &events[1] else {
        unreachable!()
    };
    assert_eq!(finished.result.as_deref(), Some("Next."));
}

#[test]
fn tool_calls_map_by_kind_and_status() {
    let mut parser = prompting();
    let mut all = Vec::new();
    for line in [
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "r", "title": "Reading a.txt", "kind": "read", "status": "in_progress", "locations": [{"path": "/w/a.txt"}]}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "r", "status": "completed"}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "e", "kind": "edit", "status": "in_progress", "content": [{"type": "diff", "path": "b.txt", "newText": "x"}]}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed", "content": [{"type": "diff", "path": "/w/b.txt", "newText": "x"}, {"type": "diff", "path": "/w/a.txt", "oldText": "a", "newText": "b"}]}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "x", "title": "bash: npm test", "kind": "execute", "status": "pending", "rawInput": {"command": "npm test"}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "in_progress"}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "failed", "content": [{"type": "content", "content": {"type": "text", "text": "1 failing"}}]}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "d", "kind": "delete", "status": "completed", "locations": [{"path": "/w/old.txt"}]}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "f", "title": "Fetching", "kind": "fetch", "status": "failed", "rawOutput": {"error": "offline"}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "kind": "think", "status": "completed"}),
        ),
    ] {
        all.extend(parser.parse_line(&line));
    }
    assert_eq!(
        types(&all),
        [
            "file.read",
            "file.changed",
            "file.changed",
            "command.started",
            "command.finished",
            "test.result",
            "file.changed",
            "message",
        ]
    );
    let payload = |i: usize| serde_json::to_value(&all[i]).unwrap()["payload"].clone();
    assert_eq!(payload(0)["path"], "/w/a.txt");
    assert_eq!(payload(1)["change"], "added");
    assert_eq!(payload(2)["change"], "modified");
    assert_eq!(payload(3)["command"], "npm test");
    assert_eq!(payload(4)["isError"], true);
    assert_eq!(payload(4)["output"], "1 failing");
    assert_eq!(payload(5)["passed"], false);
    assert_eq!(payload(6)["change"], "deleted");
    assert_eq!(payload(7)["text"], "Fetching failed: offline");
}

#[test]
fn a_permission_request_names_what_its_answer_needs() {
    let mut parser = prompting();
    parser.parse_line(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "x1", "title": "bash: rm -rf build", "kind": "execute", "status": "pending", "rawInput": {"command": "rm -rf build"}})));
    let events = parser.parse_line(
        r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"x1"},"options":[{"optionId":"a1","name":"Allow once","kind":"allow_once"},{"optionId":"r1","name":"Deny","kind":"reject_once"}]}}"#,
    );
    let EventBody::PermissionRequested(asked) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(asked.request_id, "x1");
    assert_eq!(asked.tool, "bash: rm -rf build");
    assert_eq!(asked.input["rpcId"], 0);
    assert_eq!(
        asked.input["toolCall"]["rawInput"]["command"],
        "rm -rf build"
    );
    assert_eq!(asked.input["options"][1]["optionId"], "r1");
    assert!(parser.owed_input().is_empty(), "the caller answers");
}

#[test]
fn a_request_we_do_not_serve_is_answered_with_an_error() {
    let mut parser = prompting();
    let events = parser.parse_line(
        r#"{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"path":"/etc/passwd"}}"#,
    );
    assert_eq!(types(&events), ["message"]);
    let owed = parser.owed_input();
    let answer: Value = serde_json::from_str(&owed[0]).unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32601);
}

#[test]
fn a_line_that_is_not_json_rpc_is_kept_and_fails_the_turn_once() {
    let mut parser = prompting();
    parser.parse_line(&update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Working."}})));
    let events = parser.parse_line("DEBUG: connected");
    assert_eq!(types(&events), ["message", "message", "task.failed"]);
    let EventBody::TaskFailed(failed) = &events[2] else {
        unreachable!()
    };
    assert!(failed.message.contains("DEBUG: connected"), "{failed:?}");
    assert_eq!(types(&parser.parse_line("again")), ["message"]);
    assert!(types(&parser.parse_line(&result(3, json!({"stopReason": "end_turn"})))).is_empty());
    assert!(parser.finish(Some(0)).is_empty());
}

#[test]
fn errors_fail_the_turn_with_the_agents_words() {
    let mut parser = AcpParser::driving(plan(None));
    parser.parse_line(INIT_OK);
    let events = parser.parse_line(
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Missing API key for mistral provider"}}"#,
    );
    let EventBody::TaskFailed(failed) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(failed.reason, FailureKind::AuthFailed);
    assert!(failed.message.contains("Missing API key"));

    let mut parser = AcpParser::driving(plan(None));
    let events = parser.parse_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2}}"#);
    assert!(matches!(&events[0], EventBody::TaskFailed(f) if f.message.contains("version 2")));

    let mut parser = prompting();
    let events = parser.parse_line(&result(3, json!({"stopReason": "refusal"})));
    assert!(matches!(&events[0], EventBody::TaskFailed(f) if f.reason == FailureKind::AgentError));
}

#[test]
fn plans_are_messages_and_the_same_plan_says_nothing_again() {
    let mut parser = prompting();
    let plan = update(
        json!({"sessionUpdate": "plan", "entries": [{"content": "read", "status": "completed", "priority": "high"}, {"content": "fix", "status": "in_progress"}]}),
    );
    let events = parser.parse_line(&plan);
    assert!(matches!(&events[..], [EventBody::Message(m)] if m.text == "Plan:\n[x] read\n[~] fix"));
    assert!(parser.parse_line(&plan).is_empty());
}

#[test]
fn cost_and_tokens_are_the_turns() {
    let mut parser = AcpParser::driving(plan(None));
    parser.parse_line(INIT_OK);
    let cost = |amount: f64| {
        update(
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 9, "cost": {"amount": amount, "currency": "USD"}}),
        )
    };
    parser.parse_line(&cost(0.5));
    parser.parse_line(&result(2, json!({ "sessionId": "s1" })));
    parser.parse_line(&cost(0.75));
    let events = parser.parse_line(&result(
        3,
        json!({"stopReason": "end_turn", "usage": {"totalTokens": 15, "inputTokens": 10, "outputTokens": 5}}),
    ));
    let EventBody::TaskFinished(finished) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(finished.cost_usd, Some(0.25));
    let usage = finished.usage.as_ref().unwrap();
    assert_eq!(usage["input_tokens"], 10);
    assert_eq!(usage["output_tokens"], 5);

    // A continued session's totals are not the turn's: kept apart.
    let mut parser = AcpParser::driving(plan(Some("s1")));
    parser.parse_line(INIT_OK);
    parser.parse_line(&result(2, json!({})));
    let events = parser.parse_line(&result(
        3,
        json!({"stopReason": "end_turn", "usage": {"totalTokens": 15, "inputTokens": 10, "outputTokens": 5}}),
    ));
    let EventBody::TaskFinished(finished) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(
        finished.usage.as_ref().unwrap()["sessionTotals"]["inputTokens"],
        10
    );
    assert!(finished.cost_usd.is_none());
}

#[test]
fn an_agent_that_exits_early_says_where_it_stopped() {
    let mut parser = AcpParser::driving(plan(None));
    parser.parse_line(INIT_OK);
    let events = parser.finish(Some(1));
    assert!(
        matches!(&events[..], [EventBody::TaskFailed(f)] if f.message.contains("before it opened a session") && f.message.contains("exit code 1"))
    );

    let mut parser = prompting();
    parser.parse_line(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "x", "kind": "execute", "status": "in_progress", "rawInput": {"command": "sleep 100"}})));
    let events = parser.finish(None);
    assert_eq!(types(&events), ["command.finished", "task.failed"]);

    assert!(AcpParser::driving(plan(None)).finish(Some(0)).is_empty());
}

#[test]
fn the_start_says_whether_the_agent_can_continue_the_session() {
    for (init, can) in [
        (INIT_OK.to_owned(), true),
        (
            result(1, json!({ "protocolVersion": 1, "agentCapabilities": {} })),
            false,
        ),
        (
            result(
                1,
                json!({ "protocolVersion": 1, "agentCapabilities": { "sessionCapabilities": { "resume": {} } } }),
            ),
            true,
        ),
    ] {
        let mut parser = AcpParser::driving(plan(None));
        parser.parse_line(&init);
        let started = parser.parse_line(&result(2, json!({ "sessionId": "s1" })));
        let [EventBody::TaskStarted(started)] = started.as_slice() else {
            panic!("{started:?}");
        };
        assert_eq!(started.can_continue, Some(can), "{init}");
    }
}

#[test]
fn a_cancelled_turn_nobody_cancelled_fails() {
    let mut parser = prompting();
    let events = parser.parse_line(&result(3, json!({ "stopReason": "cancelled" })));
    let [EventBody::TaskFailed(failed)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert!(failed.message.contains("nobody cancelled it"), "{failed:?}");
}

#[test]
fn our_notes_are_not_the_users_message_and_the_context_is_kept() {
    let mut parser = AcpParser::driving(TurnPlan {
        cwd: "/w".into(),
        blocks: vec!["Repo notes: run npm test.".into(), "Fix it.".into()],
        resume: None,
    });
    parser.parse_line(INIT_OK);
    parser.parse_line(&result(2, json!({ "sessionId": "s1" })));
    let chunk = |text: &str| {
        update(
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}),
        )
    };
    parser.parse_line(&chunk("Repo notes: run npm test."));
    parser.parse_line(&chunk("\n\nFix it."));
    parser.parse_line(&update(
        json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000}),
    ));
    let events = parser.parse_line(&result(3, json!({ "stopReason": "end_turn" })));
    let said: Vec<&Message> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::Message(m) => Some(m),
            _ => None,
        })
        .collect();
    let users: Vec<&str> = said
        .iter()
        .filter(|m| m.role == MessageRole::User)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(users, ["Fix it."]);
    let Some(EventBody::TaskFinished(finished)) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(
        finished.usage.as_ref().unwrap()["context"],
        json!({"used": 1200, "size": 200000})
    );
}
