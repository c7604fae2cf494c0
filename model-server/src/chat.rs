//! The OpenAI Chat Completions API as the scripted server speaks it:
//! `POST /v1/chat/completions` answered from the script, as one JSON
//! `chat.completion` or, when the request says `"stream": true`, as server-sent
//! `chat.completion.chunk` events ending in `data: [DONE]`. This is the API that
//! litellm, and so mini-swe-agent, calls for an `openai/…` model.
//!
//! A script's [`Block::ToolUse`] becomes an entry of the message's `tool_calls`
//! (`type: function`, the input as JSON text in `arguments`); text blocks are
//! joined into `content`; thinking goes in `reasoning_content`, the field the
//! OpenAI-compatible servers that expose reasoning use (litellm reads it).

use serde_json::{Value, json};

use super::anthropic::Answer;
use super::openai::error_answer;
use super::script::{Block, Reply, Turn};

/// How many tool results the request's messages hold (`role: "tool"`) from
/// message `from` on: each answers one call of an earlier turn, so the count picks
/// the next turn.
pub(super) fn count_tool_messages(request: &Value, from: usize) -> usize {
    request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .skip(from)
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .count()
}

/// The last user message whose text holds one of `markers`: a Chat Completions request
/// lists its messages as the Messages API does (a string content or `text` parts), so
/// Anthropic's reading serves both.
pub(super) use super::anthropic::marked_message;

/// The answer to `POST /v1/chat/completions` for `turn` (or a short text once the script is over).
pub(super) fn answer_chat(
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
    let reply = match turn {
        Turn::Error(error) => return error_answer(error, index),
        Turn::Reply(reply) => reply,
    };
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-model");
    let id = format!("chatcmpl-scripted-{response_number:04}");
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        let usage = request
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        Answer {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: sse_body(reply, &id, model, usage),
            turn: index,
        }
    } else {
        Answer {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: whole_completion(reply, &id, model).to_string(),
            turn: index,
        }
    }
}

/// The tool calls of a reply, in the order the script gives them.
fn tool_calls(reply: &Reply) -> Vec<Value> {
    reply
        .blocks
        .iter()
        .filter_map(|block| match block {
            Block::ToolUse { id, name, input } => Some(json!({
                "id": id, "type": "function",
                "function": { "name": name, "arguments": input.to_string() },
            })),
            _ => None,
        })
        .collect()
}

/// The reply's text blocks joined, or `None` when it has none.
fn text(reply: &Reply) -> Option<String> {
    let parts: Vec<&str> = reply
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The reply's thinking joined, or `None` when it has none.
fn reasoning(reply: &Reply) -> Option<String> {
    let parts: Vec<&str> = reply
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Thinking(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

fn finish_reason(reply: &Reply) -> &'static str {
    if reply
        .blocks
        .iter()
        .any(|b| matches!(b, Block::ToolUse { .. }))
    {
        "tool_calls"
    } else {
        "stop"
    }
}

fn usage(reply: &Reply) -> Value {
    let u = reply.usage;
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

/// A whole `chat.completion`, for a request that does not stream.
fn whole_completion(reply: &Reply, id: &str, model: &str) -> Value {
    let mut message = json!({ "role": "assistant", "content": text(reply) });
    let calls = tool_calls(reply);
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    if let Some(reasoning) = reasoning(reply) {
        message["reasoning_content"] = json!(reasoning);
    }
    json!({
        "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{ "index": 0, "message": message, "finish_reason": finish_reason(reply) }],
        "usage": usage(reply),
    })
}

/// The chunks of one reply: the role, the reasoning and text as deltas in two
/// pieces each, every tool call opened with its id and name and its arguments
/// streamed in two pieces, the finish reason, the usage when asked for, `[DONE]`.
fn sse_body(reply: &Reply, id: &str, model: &str, with_usage: bool) -> String {
    let mut out = String::new();
    let mut chunk = |choices: Value, usage: Option<Value>| {
        let mut data = json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "choices": choices,
        });
        if let Some(usage) = usage {
            data["usage"] = usage;
        }
        out.push_str("data: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
    };
    let delta = |delta: Value| json!([{ "index": 0, "delta": delta, "finish_reason": null }]);
    chunk(delta(json!({ "role": "assistant", "content": "" })), None);
    if let Some(reasoning) = reasoning(reply) {
        for piece in super::halves(&reasoning) {
            chunk(delta(json!({ "reasoning_content": piece })), None);
        }
    }
    if let Some(text) = text(reply) {
        for piece in super::halves(&text) {
            chunk(delta(json!({ "content": piece })), None);
        }
    }
    for (index, call) in tool_calls(reply).iter().enumerate() {
        chunk(
            delta(json!({ "tool_calls": [{
                "index": index, "id": call["id"], "type": "function",
                "function": { "name": call["function"]["name"], "arguments": "" },
            }]})),
            None,
        );
        let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
        for piece in super::halves(arguments) {
            chunk(
                delta(
                    json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                ),
                None,
            );
        }
    }
    chunk(
        json!([{ "index": 0, "delta": {}, "finish_reason": finish_reason(reply) }]),
        None,
    );
    if with_usage {
        chunk(json!([]), Some(usage(reply)));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HttpError;

    fn chunks_of(body: &str) -> Vec<Value> {
        body.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .take_while(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).expect("each chunk is JSON"))
            .collect()
    }

    fn reply() -> Reply {
        Reply::new(vec![
            Block::Thinking("the month".into()),
            Block::text("héllo"),
            Block::tool_use("call_1", "bash", json!({ "command": "ls" })),
            Block::tool_use("call_2", "bash", json!({ "command": "pwd" })),
        ])
    }

    #[test]
    fn counts_tool_messages() {
        let request = json!({ "messages": [
            { "role": "system", "content": "s" },
            { "role": "user", "content": "u" },
            { "role": "assistant", "content": null, "tool_calls": [{ "id": "a" }, { "id": "b" }] },
            { "role": "tool", "tool_call_id": "a", "content": "x" },
            { "role": "tool", "tool_call_id": "b", "content": "y" },
        ]});
        assert_eq!(count_tool_messages(&request, 0), 2);
        assert_eq!(count_tool_messages(&request, 4), 1, "from message 4 on");
        assert_eq!(count_tool_messages(&json!({}), 0), 0);
    }

    #[test]
    fn finds_the_last_user_message_with_a_marker() {
        let request = json!({ "messages": [
            { "role": "system", "content": "[B] is a word" },
            { "role": "user", "content": "go [A]" },
            { "role": "assistant", "content": "[B]", "tool_calls": [{ "id": "a" }] },
            { "role": "tool", "tool_call_id": "a", "content": "[B]" },
            { "role": "user", "content": [{ "type": "text", "text": "then [B]" }] },
        ]});
        assert_eq!(marked_message(&request, &["[A]", "[B]"]), Some((4, 1)));
        assert_eq!(marked_message(&request, &["[A]"]), Some((1, 0)));
        assert_eq!(marked_message(&request, &["[C]"]), None);
    }

    #[test]
    fn a_request_that_does_not_stream_gets_one_completion() {
        let answer = answer_chat(
            &json!({ "model": "m" }),
            Some((0, &Turn::Reply(reply()))),
            3,
        );
        assert_eq!((answer.status, answer.turn), (200, Some(0)));
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["model"], "m");
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls");
        assert_eq!(choice["message"]["content"], "héllo");
        assert_eq!(choice["message"]["reasoning_content"], "the month");
        assert_eq!(choice["message"]["tool_calls"][1]["id"], "call_2");
        assert_eq!(
            choice["message"]["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"ls"}"#
        );
        assert_eq!(body["usage"]["total_tokens"], 120);
        let text = answer_chat(&json!({}), Some((1, &Turn::text("done"))), 4);
        let body: Value = serde_json::from_str(&text.body).unwrap();
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert!(body["choices"][0]["message"].get("tool_calls").is_none());
    }

    #[test]
    fn a_streamed_reply_comes_in_chunks_that_join_back() {
        let request =
            json!({ "model": "m", "stream": true, "stream_options": { "include_usage": true } });
        let answer = answer_chat(&request, Some((2, &Turn::Reply(reply()))), 1);
        assert!(answer.body.ends_with("data: [DONE]\n\n"));
        let chunks = chunks_of(&answer.body);
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let joined = |field: &str| -> String {
            chunks
                .iter()
                .filter_map(|c| c["choices"][0]["delta"][field].as_str())
                .collect()
        };
        assert_eq!(joined("content"), "héllo");
        assert_eq!(joined("reasoning_content"), "the month");
        let arguments: String = chunks
            .iter()
            .flat_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array().cloned())
            .flatten()
            .filter(|call| call["index"] == 1)
            .filter_map(|call| call["function"]["arguments"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(arguments, r#"{"command":"pwd"}"#);
        let finish: Vec<&str> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
            .collect();
        assert_eq!(finish, ["tool_calls"]);
        assert_eq!(chunks.last().unwrap()["usage"]["prompt_tokens"], 100);
        let quiet = answer_chat(
            &json!({ "stream": true }),
            Some((0, &Turn::Reply(reply()))),
            1,
        );
        assert!(
            chunks_of(&quiet.body)
                .iter()
                .all(|c| c.get("usage").is_none()),
            "usage only when asked for"
        );
    }

    #[test]
    fn errors_carry_the_openai_error_body() {
        let error = Turn::from(HttpError::status(401));
        let answer = answer_chat(&json!({}), Some((0, &error)), 1);
        assert_eq!((answer.status, answer.turn), (401, Some(0)));
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(body["error"]["code"], "invalid_api_key");
    }
}
