//! The stream-json wire: what goes to Claude's stdin, and what each stdout line is.

use runner_contract::framing::Frame;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::events::{AssistantMessage, ProtocolError, ReplayedInput, SessionEvent, TurnResult};

/// One user message, the line Claude reads from stdin (with its newline). A `uuid` is
/// echoed on the input's replay and listed in the `user_message_uuids` of the result that
/// covers it, which is how a caller tells a steer merged into a turn from a queued one.
pub(crate) fn user_line(text: &str, uuid: Option<Uuid>) -> Vec<u8> {
    let mut message = json!({ "type": "user", "message": { "role": "user", "content": text } });
    if let Some(uuid) = uuid {
        message["uuid"] = uuid.to_string().into();
    }
    line_of(&message)
}

/// The control request that interrupts the running turn (Claude answers it with a
/// `control_response` and ends the turn with an error result; the process stays).
pub(crate) fn interrupt_line(request_id: Uuid) -> Vec<u8> {
    line_of(&json!({
        "type": "control_request",
        "request_id": request_id.to_string(),
        "request": { "subtype": "interrupt" },
    }))
}

fn line_of(message: &Value) -> Vec<u8> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    line
}

fn uuid_of(value: &Value) -> Option<Uuid> {
    value.as_str().and_then(|s| Uuid::parse_str(s).ok())
}

/// Turns one framed stdout line into an event.
pub(crate) fn event_of(frame: Frame) -> SessionEvent {
    match frame {
        Frame::Line(line) => match serde_json::from_str::<Value>(&line) {
            Ok(value) => match value.get("type").and_then(Value::as_str) {
                Some(kind) => {
                    let kind = kind.to_owned();
                    message_event(kind, value)
                }
                None => protocol_error(line, "a JSON line without a string \"type\""),
            },
            Err(e) => protocol_error(line, &format!("not JSON: {e}")),
        },
        Frame::NotUtf8(line) => protocol_error(line, "not UTF-8"),
        Frame::TooLong { bytes } => protocol_error(
            String::new(),
            &format!("a line of {bytes} bytes, over the line cap, dropped"),
        ),
    }
}

fn protocol_error(line: String, cause: &str) -> SessionEvent {
    SessionEvent::ProtocolError(ProtocolError {
        line,
        cause: cause.into(),
    })
}

fn message_event(kind: String, raw: Value) -> SessionEvent {
    match kind.as_str() {
        "assistant" => SessionEvent::Assistant(AssistantMessage {
            text: text_of(&raw["message"]["content"]),
            raw,
        }),
        "result" => SessionEvent::Result(turn_result(raw)),
        // Tool results come back as `user` lines too; Claude marks the inputs it replays.
        "user" if raw.get("isReplay").and_then(Value::as_bool) == Some(true) => {
            SessionEvent::Input(ReplayedInput {
                text: text_of(&raw["message"]["content"]),
                uuid: uuid_of(&raw["uuid"]),
                raw,
            })
        }
        _ => SessionEvent::Message { kind, raw },
    }
}

/// Reads a result line.
pub(crate) fn turn_result(raw: Value) -> TurnResult {
    TurnResult {
        ok: raw.get("is_error").and_then(Value::as_bool) != Some(true),
        inputs: raw["user_message_uuids"]
            .as_array()
            .map(|ids| ids.iter().filter_map(uuid_of).collect())
            .unwrap_or_default(),
        text: raw
            .get("result")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        session_id: raw
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        raw,
    }
}

/// The session id a line gives: the init line's or a result's.
pub(crate) fn session_id_of(raw: &Value) -> Option<&str> {
    let kind = raw.get("type").and_then(Value::as_str)?;
    let subtype = raw.get("subtype").and_then(Value::as_str);
    let names_it = kind == "result" || (kind == "system" && subtype == Some("init"));
    names_it
        .then(|| raw.get("session_id").and_then(Value::as_str))
        .flatten()
}

/// A content's text: the string itself, or its text blocks joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> SessionEvent {
        event_of(Frame::Line(text.into()))
    }

    #[test]
    fn the_input_line_is_a_stream_json_user_message() {
        let line = user_line("hi \"there\"\nnext", None);
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let value: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            value,
            json!({"type":"user","message":{"role":"user","content":"hi \"there\"\nnext"}})
        );
    }

    #[test]
    fn an_input_may_carry_its_uuid_and_an_interrupt_is_a_control_request() {
        let uuid = Uuid::new_v4();
        let value: Value = serde_json::from_slice(&user_line("x", Some(uuid))).unwrap();
        assert_eq!(value["uuid"], uuid.to_string());
        let value: Value = serde_json::from_slice(&interrupt_line(uuid)).unwrap();
        assert_eq!(
            value,
            json!({"type":"control_request","request_id":uuid.to_string(),"request":{"subtype":"interrupt"}})
        );
    }

    #[test]
    fn lines_become_their_events() {
        let assistant = line(
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a"},{"type":"tool_use"},{"type":"text","text":"b"}]}}"#,
        );
        assert!(matches!(assistant, SessionEvent::Assistant(m) if m.text == "ab"));
        let input =
            line(r#"{"type":"user","message":{"role":"user","content":"steer"},"isReplay":true}"#);
        assert!(matches!(input, SessionEvent::Input(i) if i.text == "steer"));
        let tool = line(r#"{"type":"user","message":{"content":[{"type":"tool_result"}]}}"#);
        assert!(matches!(tool, SessionEvent::Message { kind, .. } if kind == "user"));
        let result = line(r#"{"type":"result","is_error":true,"result":"no","session_id":"s"}"#);
        assert!(
            matches!(result, SessionEvent::Result(r) if !r.ok && r.text == "no" && r.session_id.as_deref() == Some("s"))
        );
    }

    #[test]
    fn broken_lines_are_protocol_errors_that_keep_the_line() {
        let SessionEvent::ProtocolError(e) = line("{not json") else {
            panic!("a protocol error")
        };
        assert_eq!(e.line, "{not json");
        assert!(e.cause.starts_with("not JSON"));
        assert!(matches!(line("[1,2]"), SessionEvent::ProtocolError(_)));
        assert!(matches!(
            event_of(Frame::TooLong { bytes: 9 }),
            SessionEvent::ProtocolError(e) if e.cause.contains("9 bytes")
        ));
    }

    #[test]
    fn the_session_id_comes_from_init_and_result_lines() {
        let init = json!({"type":"system","subtype":"init","session_id":"a"});
        assert_eq!(session_id_of(&init), Some("a"));
        let other = json!({"type":"assistant","session_id":"b"});
        assert_eq!(session_id_of(&other), None);
    }
}
