//! The Anthropic Messages API as the scripted server speaks it: `POST /v1/messages`
//! answered from the script, streamed as server-sent events when `stream` is true.

use serde_json::{Value, json};

use super::script::{Block, HttpError, Reply, Script, Turn};

/// An answer ready to send: status, headers, body.
pub(super) struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The script turn that answered, when one did.
    pub turn: Option<usize>,
}

/// Which turn answers a conversation holding `tool_results` results, counting the
/// error turns already used up (`hits[i]`: how often turn `i` answered).
pub(super) fn pick_turn(script: &Script, tool_results: usize, hits: &[u32]) -> Option<usize> {
    let mut index = 0;
    let mut asked = 0;
    while asked < tool_results && index < script.turns.len() {
        asked += script.turns[index].tool_uses();
        index += 1;
    }
    // An error turn that has answered its `times` gives way to the next turn.
    while let Some(Turn::Error(HttpError { times: Some(n), .. })) = script.turns.get(index) {
        if hits.get(index).copied().unwrap_or(0) < *n {
            break;
        }
        index += 1;
    }
    (index < script.turns.len()).then_some(index)
}

/// How many `tool_result` blocks the request's messages hold, from message `from` on.
pub(super) fn count_tool_results(request: &Value, from: usize) -> usize {
    let Some(messages) = request.get("messages").and_then(Value::as_array) else {
        return 0;
    };
    messages
        .iter()
        .skip(from)
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
        .count()
}

/// The last user message whose text (a string content or a `text` block) holds one
/// of `markers`: its position in `messages` and which marker (Chat Completions' too).
pub(super) fn marked_message(request: &Value, markers: &[&str]) -> Option<super::Marked> {
    let messages = request.get("messages").and_then(Value::as_array)?;
    let users = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|(position, m)| (position, message_texts(m.get("content"))));
    super::last_marked(users, markers)
}

/// The texts of a message content: the content itself when it is a string, else
/// its `text` blocks (Anthropic's blocks and Chat Completions' parts have one shape).
pub(super) fn message_texts(content: Option<&Value>) -> Vec<&str> {
    match content {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

/// The answer to `POST /v1/messages` for `turn` (or the fallback text when the script is over).
pub(super) fn answer_messages(
    request: &Value,
    turn: Option<(usize, &Turn)>,
    message_number: usize,
) -> Answer {
    let fallback = Turn::text("(the scripted model has nothing more to say)");
    let (index, turn) = match turn {
        Some((i, t)) => (Some(i), t),
        None => (None, &fallback),
    };
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-model");
    let id = format!("msg_scripted_{message_number:04}");
    let streamed = request.get("stream").and_then(Value::as_bool) == Some(true);
    match turn {
        Turn::Error(error) => error_answer(error, index),
        Turn::Reply(reply) if streamed => Answer {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: sse_body(reply, &id, model),
            turn: index,
        },
        Turn::Reply(reply) => Answer {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: whole_message(reply, &id, model).to_string(),
            turn: index,
        },
    }
}

/// The answer to `POST /v1/messages/count_tokens`: a rough count, enough for the agent.
pub(super) fn answer_count_tokens(body: &str) -> Answer {
    Answer {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: json!({ "input_tokens": body.len() / 4 }).to_string(),
        turn: None,
    }
}

fn error_answer(error: &HttpError, turn: Option<usize>) -> Answer {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend(error.headers.iter().cloned());
    Answer {
        status: error.status,
        headers,
        body: json!({
            "type": "error",
            "error": { "type": error.error_type, "message": error.message },
        })
        .to_string(),
        turn,
    }
}

fn stop_reason(reply: &Reply) -> &'static str {
    if reply
        .blocks
        .iter()
        .any(|b| matches!(b, Block::ToolUse { .. }))
    {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn whole_message(reply: &Reply, id: &str, model: &str) -> Value {
    let content: Vec<Value> = reply
        .blocks
        .iter()
        .map(|block| match block {
            Block::Text(text) => json!({ "type": "text", "text": text }),
            Block::Thinking(text) => {
                json!({ "type": "thinking", "thinking": text, "signature": "scripted" })
            }
            Block::ToolUse { id, name, input } => {
                json!({ "type": "tool_use", "id": id, "name": name, "input": input })
            }
        })
        .collect();
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason(reply), "stop_sequence": null,
        "usage": { "input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens },
    })
}

/// The event stream of one reply, every event the real API sends for it.
fn sse_body(reply: &Reply, id: &str, model: &str) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str("event: ");
        out.push_str(name);
        out.push_str("\ndata: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    };
    event(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": reply.usage.input_tokens, "output_tokens": 1 },
        }}),
    );
    for (index, block) in reply.blocks.iter().enumerate() {
        let (start, deltas) = match block {
            Block::Text(text) => (
                json!({ "type": "text", "text": "" }),
                super::halves(text)
                    .map(|t| json!({ "type": "text_delta", "text": t }))
                    .collect::<Vec<_>>(),
            ),
            Block::Thinking(text) => {
                let mut deltas: Vec<Value> = super::halves(text)
                    .map(|t| json!({ "type": "thinking_delta", "thinking": t }))
                    .collect();
                deltas.push(json!({ "type": "signature_delta", "signature": "scripted" }));
                (
                    json!({ "type": "thinking", "thinking": "", "signature": "" }),
                    deltas,
                )
            }
            Block::ToolUse { id, name, input } => (
                json!({ "type": "tool_use", "id": id, "name": name, "input": {} }),
                super::halves(&input.to_string())
                    .map(|j| json!({ "type": "input_json_delta", "partial_json": j }))
                    .collect(),
            ),
        };
        event(
            "content_block_start",
            json!({ "type": "content_block_start", "index": index, "content_block": start }),
        );
        for delta in deltas {
            event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            );
        }
        event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        );
    }
    event(
        "message_delta",
        json!({ "type": "message_delta",
            "delta": { "stop_reason": stop_reason(reply), "stop_sequence": null },
            "usage": { "output_tokens": reply.usage.output_tokens } }),
    );
    event("message_stop", json!({ "type": "message_stop" }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(id: &str) -> Block {
        Block::tool_use(id, "Read", json!({ "file_path": "a" }))
    }

    #[test]
    fn turns_follow_the_count_of_tool_results() {
        let script = Script::new([
            Turn::blocks([tool("a"), tool("b")]),
            Turn::blocks([tool("c")]),
            Turn::text("done"),
        ]);
        assert_eq!(pick_turn(&script, 0, &[]), Some(0));
        assert_eq!(pick_turn(&script, 1, &[]), Some(1), "one of two results");
        assert_eq!(pick_turn(&script, 2, &[]), Some(1));
        assert_eq!(pick_turn(&script, 3, &[]), Some(2));
        assert_eq!(pick_turn(&script, 9, &[]), None, "past the end");
    }

    #[test]
    fn a_limited_error_gives_way_after_its_times() {
        let script = Script::new([HttpError::status(429).times(2).into(), Turn::text("ok")]);
        assert_eq!(pick_turn(&script, 0, &[0]), Some(0));
        assert_eq!(pick_turn(&script, 0, &[1]), Some(0));
        assert_eq!(pick_turn(&script, 0, &[2]), Some(1));
        let always = Script::new([HttpError::status(401).into()]);
        assert_eq!(pick_turn(&always, 0, &[50]), Some(0));
    }

    #[test]
    fn counts_tool_results_in_every_message() {
        let request = json!({ "messages": [
            { "role": "user", "content": [{ "type": "text", "text": "x" }] },
            { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "a" },
                                          { "type": "tool_result", "tool_use_id": "b" }] },
            { "role": "user", "content": "plain" },
        ]});
        assert_eq!(count_tool_results(&request, 0), 2);
        assert_eq!(count_tool_results(&request, 1), 2);
        assert_eq!(count_tool_results(&request, 2), 0, "only from message 2 on");
    }

    #[test]
    fn finds_the_last_user_message_with_a_marker() {
        let request = json!({ "messages": [
            { "role": "user", "content": "first [A]" },
            { "role": "assistant", "content": [{ "type": "text", "text": "[B] said by the model" }] },
            { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "a", "content": "[B] in a result" }] },
            { "role": "user", "content": [{ "type": "text", "text": "then [B]" }] },
            { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "b" }] },
        ]});
        assert_eq!(marked_message(&request, &["[A]", "[B]"]), Some((3, 1)));
        assert_eq!(marked_message(&request, &["[A]"]), Some((0, 0)));
        assert_eq!(
            marked_message(&request, &["[C]"]),
            None,
            "model text and tool results are not user text"
        );
        let both = json!({ "messages": [{ "role": "user", "content": "[B] and [A]" }] });
        assert_eq!(
            marked_message(&both, &["[A]", "[B]"]),
            Some((0, 0)),
            "in one message the marker listed first"
        );
        assert_eq!(marked_message(&json!({}), &["[A]"]), None);
    }

    #[test]
    fn streams_every_event_of_a_tool_use() {
        let reply = Reply::new(vec![Block::text("héllo"), tool("t1")]);
        let body = sse_body(&reply, "msg_1", "m");
        let names: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert!(body.contains(r#""stop_reason":"tool_use""#));
        let joined: String = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| v["delta"]["partial_json"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(joined, r#"{"file_path":"a"}"#);
    }
}
