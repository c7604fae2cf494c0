//! The OpenAI Responses API as the scripted server speaks it: `POST /v1/responses`
//! answered from the script, streamed as server-sent events (what Codex uses with
//! `wire_api = "responses"`).
//!
//! A script's [`Block::ToolUse`] becomes a `function_call` item whose `arguments`
//! are its input as JSON text, or a `custom_tool_call` with the input as raw text
//! when the input is a JSON string and the request offers that tool as a custom
//! (free-form) tool, as Codex does for `apply_patch`.

use serde_json::{Value, json};

use super::anthropic::Answer;
use super::script::{Block, HttpError, Reply, Turn};

/// How many tool outputs the request's input holds from item `from` on: each
/// answers one call of an earlier turn, so the count picks the next turn.
pub(super) fn count_tool_outputs(request: &Value, from: usize) -> usize {
    let Some(input) = request.get("input").and_then(Value::as_array) else {
        return 0;
    };
    input
        .iter()
        .skip(from)
        .filter(|item| {
            matches!(
                item.get("type").and_then(Value::as_str),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .count()
}

/// The last user message of the request's input whose text (a string content or an
/// `input_text` part) holds one of `markers`: its position in `input` and which
/// marker. An `input` that is a string is one user message at position 0.
pub(super) fn marked_input(request: &Value, markers: &[&str]) -> Option<super::Marked> {
    match request.get("input")? {
        Value::String(text) => {
            super::last_marked(std::iter::once((0, vec![text.as_str()])), markers)
        }
        Value::Array(items) => {
            let users = items
                .iter()
                .enumerate()
                .filter(|(_, item)| {
                    item.get("role").and_then(Value::as_str) == Some("user")
                        && item
                            .get("type")
                            .and_then(Value::as_str)
                            .is_none_or(|t| t == "message")
                })
                .map(|(position, item)| (position, input_texts(item.get("content"))));
            super::last_marked(users, markers)
        }
        _ => None,
    }
}

/// The texts of a message item's content: the content itself when it is a string,
/// else its `input_text` (or `text`) parts.
fn input_texts(content: Option<&Value>) -> Vec<&str> {
    match content {
        Some(Value::String(text)) => vec![text.as_str()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| {
                matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("input_text" | "text")
                )
            })
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

/// The answer to `POST /v1/responses` for `turn` (or a short text once the script is over).
pub(super) fn answer_responses(
    request: &Value,
    turn: Option<(usize, &Turn)>,
    response_number: usize,
) -> Answer {
    let fallback = Turn::text("(the scripted model has nothing more to say)");
    let (index, turn) = match turn {
        Some((i, t)) if i != usize::MAX => (Some(i), t),
        Some((_, t)) => (None, t),
        None => (None, &fallback),
    };
    match turn {
        Turn::Error(error) => error_answer(error, index),
        Turn::Reply(reply) => Answer {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: sse_body(request, reply, response_number),
            turn: index,
        },
    }
}

/// OpenAI error codes a script may name in [`HttpError::error_type`] to get them as
/// both `type` and `code` (the Anthropic type names it defaults to are not OpenAI's).
const OPENAI_CODES: &[&str] = &[
    "insufficient_quota",
    "usage_limit_reached",
    "usage_not_included",
];

/// The error body OpenAI sends (`{"error": {message, type, code}}`), with the
/// type and code OpenAI uses for that status.
pub(super) fn error_answer(error: &HttpError, turn: Option<usize>) -> Answer {
    let (kind, code) = match error.status {
        _ if OPENAI_CODES.contains(&error.error_type.as_str()) => {
            (error.error_type.as_str(), error.error_type.as_str())
        }
        401 => ("invalid_request_error", "invalid_api_key"),
        403 => (
            "invalid_request_error",
            "unsupported_country_region_territory",
        ),
        429 => ("requests", "rate_limit_exceeded"),
        500 | 502 | 503 => ("server_error", "server_error"),
        _ => ("invalid_request_error", "invalid_request"),
    };
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend(error.headers.iter().cloned());
    Answer {
        status: error.status,
        headers,
        body: json!({
            "error": { "message": error.message, "type": kind, "param": null, "code": code },
        })
        .to_string(),
        turn,
    }
}

/// Whether the request offers `name` as a custom (free-form) tool.
fn is_custom_tool(request: &Value, name: &str) -> bool {
    request
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|tool| {
            tool.get("type").and_then(Value::as_str) == Some("custom")
                && tool.get("name").and_then(Value::as_str) == Some(name)
        })
}

/// The output items of a reply, complete.
fn output_items(request: &Value, reply: &Reply, response_number: usize) -> Vec<Value> {
    reply
        .blocks
        .iter()
        .enumerate()
        .map(|(i, block)| {
            let item_id = format!("{response_number:04}_{i}");
            match block {
                Block::Text(text) => json!({
                    "type": "message", "id": format!("msg_{item_id}"), "role": "assistant",
                    "status": "completed",
                    "content": [{ "type": "output_text", "text": text, "annotations": [] }],
                }),
                Block::Thinking(text) => json!({
                    "type": "reasoning", "id": format!("rs_{item_id}"),
                    "summary": [{ "type": "summary_text", "text": text }],
                }),
                Block::ToolUse { id, name, input } => match input.as_str() {
                    Some(raw) if is_custom_tool(request, name) => json!({
                        "type": "custom_tool_call", "id": format!("ctc_{item_id}"),
                        "status": "completed", "call_id": id, "name": name, "input": raw,
                    }),
                    _ => json!({
                        "type": "function_call", "id": format!("fc_{item_id}"),
                        "status": "completed", "call_id": id, "name": name,
                        "arguments": input.to_string(),
                    }),
                },
            }
        })
        .collect()
}

/// The event stream of one reply: created, each item added (text streamed as
/// deltas) and done, then completed with usage.
fn sse_body(request: &Value, reply: &Reply, response_number: usize) -> String {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-model");
    let id = format!("resp_scripted_{response_number:04}");
    let items = output_items(request, reply, response_number);
    let mut out = String::new();
    let mut event = |data: Value| {
        out.push_str("event: ");
        out.push_str(data["type"].as_str().unwrap_or("unknown"));
        out.push_str("\ndata: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    };
    let response = |status: &str, output: &[Value]| {
        json!({ "id": id, "object": "response", "created_at": 1_700_000_000, "status": status,
                "model": model, "output": output })
    };
    event(json!({ "type": "response.created", "response": response("in_progress", &[]) }));
    for (index, item) in items.iter().enumerate() {
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        if item["type"] == "message" {
            added["content"] = json!([]);
        }
        event(
            json!({ "type": "response.output_item.added", "output_index": index, "item": added }),
        );
        if let Some(text) = item["content"][0]["text"].as_str() {
            for delta in super::halves(text) {
                event(json!({
                    "type": "response.output_text.delta", "item_id": item["id"],
                    "output_index": index, "content_index": 0, "delta": delta,
                }));
            }
        }
        event(json!({ "type": "response.output_item.done", "output_index": index, "item": item }));
    }
    let usage = reply.usage;
    let mut completed = response("completed", &items);
    completed["usage"] = json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": { "cached_tokens": 0 },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": usage.input_tokens + usage.output_tokens,
    });
    event(json!({ "type": "response.completed", "response": completed }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_lines(body: &str) -> Vec<Value> {
        body.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).expect("each data line is JSON"))
            .collect()
    }

    #[test]
    fn counts_both_kinds_of_tool_output() {
        let request = json!({ "input": [
            { "type": "message", "role": "user", "content": [] },
            { "type": "function_call", "call_id": "a" },
            { "type": "function_call_output", "call_id": "a", "output": "x" },
            { "type": "custom_tool_call_output", "call_id": "b", "output": "y" },
        ]});
        assert_eq!(count_tool_outputs(&request, 0), 2);
        assert_eq!(count_tool_outputs(&request, 3), 1, "from item 3 on");
        assert_eq!(count_tool_outputs(&json!({ "input": "text" }), 0), 0);
    }

    #[test]
    fn finds_the_last_user_input_with_a_marker() {
        let request = json!({ "input": [
            { "type": "message", "role": "developer", "content": [{ "type": "input_text", "text": "[B] rules" }] },
            { "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "fix it [A]" }] },
            { "type": "function_call", "call_id": "a" },
            { "type": "function_call_output", "call_id": "a", "output": "[B] printed" },
            { "role": "user", "content": "now [B]" },
            { "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "[C]" }] },
        ]});
        assert_eq!(marked_input(&request, &["[A]", "[B]"]), Some((4, 1)));
        assert_eq!(marked_input(&request, &["[A]"]), Some((1, 0)));
        assert_eq!(marked_input(&request, &["[C]"]), None, "only user messages");
        assert_eq!(
            marked_input(&json!({ "input": "do [A]" }), &["[A]"]),
            Some((0, 0))
        );
    }

    #[test]
    fn streams_a_message_and_a_function_call_then_usage() {
        let reply = Reply::new(vec![
            Block::text("héllo"),
            Block::tool_use("call_1", "exec_command", json!({ "cmd": "ls" })),
        ]);
        let body = sse_body(&json!({ "model": "m" }), &reply, 1);
        let events = data_lines(&body);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "response.created",
                "response.output_item.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_item.done",
                "response.output_item.added",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let call = &events[6]["item"];
        assert_eq!(call["type"], "function_call");
        assert_eq!(call["call_id"], "call_1");
        assert_eq!(call["arguments"], r#"{"cmd":"ls"}"#);
        let deltas: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
        assert_eq!(deltas, "héllo");
        assert_eq!(events[7]["response"]["usage"]["total_tokens"], 120);
    }

    #[test]
    fn a_string_input_for_a_custom_tool_is_a_custom_call() {
        let request = json!({ "tools": [{ "type": "custom", "name": "apply_patch" }] });
        let reply = Reply::new(vec![Block::tool_use(
            "call_p",
            "apply_patch",
            json!("*** Begin Patch\n*** End Patch\n"),
        )]);
        let item = &output_items(&request, &reply, 1)[0];
        assert_eq!(item["type"], "custom_tool_call");
        assert_eq!(item["input"], "*** Begin Patch\n*** End Patch\n");
        let plain = &output_items(&json!({}), &reply, 1)[0];
        assert_eq!(plain["type"], "function_call", "not offered as custom");
    }

    #[test]
    fn errors_carry_the_openai_error_body() {
        let answer = error_answer(&HttpError::status(429).header("retry-after", "1"), Some(0));
        assert_eq!(answer.status, 429);
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        assert!(
            answer
                .headers
                .iter()
                .any(|(n, v)| n == "retry-after" && v == "1")
        );
        let quota = HttpError {
            error_type: "insufficient_quota".into(),
            ..HttpError::status(429)
        };
        let body: Value = serde_json::from_str(&error_answer(&quota, None).body).unwrap();
        assert_eq!(body["error"]["code"], "insufficient_quota");
    }
}
