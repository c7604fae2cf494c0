//! The stream-json lines codehands writes to Claude Code's stdin: the `initialize` control
//! request that makes it ask for permission over stdin, user messages (the prompt, and
//! later messages that steer the turn), answers to its `can_use_tool` requests and the
//! `interrupt` control request. Each line is the same for the same input, so the runner can
//! tell what it already delivered.

use runner_contract::{AgentInput, PermissionAnswer};
use serde_json::json;

/// The control request Claude Code needs first before it sends `can_use_tool` requests.
pub(crate) fn initialize() -> String {
    json!({
        "type": "control_request",
        "request_id": "codehands-initialize",
        "request": { "subtype": "initialize", "hooks": null },
    })
    .to_string()
}

/// A user message; `uuid` makes two messages of the same text two lines.
pub(crate) fn user_message(uuid: &str, text: &str) -> String {
    json!({
        "type": "user",
        "uuid": uuid,
        "message": { "role": "user", "content": text },
        "parent_tool_use_id": null,
    })
    .to_string()
}

/// The line that gives `input` to a running Claude Code.
pub(crate) fn line_for(input: &AgentInput) -> String {
    match input {
        AgentInput::User { id, text } => user_message(id, text),
        AgentInput::Permission {
            request_id,
            input,
            answer,
        } => {
            let response = match answer {
                // Claude Code runs the tool with `updatedInput`: the input as asked, unless
                // the caller changed it.
                PermissionAnswer::Allow { updated_input } => json!({
                    "behavior": "allow",
                    "updatedInput": updated_input.clone().unwrap_or_else(|| input.clone()),
                }),
                PermissionAnswer::Deny { message } => json!({
                    "behavior": "deny",
                    "message": message
                        .clone()
                        .unwrap_or_else(|| "The person running codehands denied this tool.".into()),
                }),
            };
            json!({
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": request_id,
                    "response": response,
                },
            })
            .to_string()
        }
        AgentInput::Interrupt { id, .. } => json!({
            "type": "control_request",
            "request_id": id,
            "request": { "subtype": "interrupt" },
        })
        .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn an_answer_gives_back_the_input_as_asked_unless_changed() {
        let asked = json!({"command": "python3 -c 'print(42)'"});
        let allow = line_for(&AgentInput::Permission {
            request_id: "r1".into(),
            input: asked.clone(),
            answer: PermissionAnswer::Allow {
                updated_input: None,
            },
        });
        let line: Value = serde_json::from_str(&allow).unwrap();
        assert_eq!(line["response"]["request_id"], "r1");
        assert_eq!(line["response"]["response"]["behavior"], "allow");
        assert_eq!(line["response"]["response"]["updatedInput"], asked);
        let deny = line_for(&AgentInput::Permission {
            request_id: "r2".into(),
            input: asked,
            answer: PermissionAnswer::Deny {
                message: Some("not that".into()),
            },
        });
        let line: Value = serde_json::from_str(&deny).unwrap();
        assert_eq!(line["response"]["response"]["behavior"], "deny");
        assert_eq!(line["response"]["response"]["message"], "not that");
    }

    #[test]
    fn the_same_input_is_the_same_line_and_a_message_is_one_line() {
        let a = line_for(&AgentInput::User {
            id: "u1".into(),
            text: "two\nlines".into(),
        });
        assert_eq!(
            a,
            line_for(&AgentInput::User {
                id: "u1".into(),
                text: "two\nlines".into()
            })
        );
        assert!(!a.contains('\n'));
        assert_ne!(a, user_message("u2", "two\nlines"));
        let stop: Value = serde_json::from_str(&line_for(&AgentInput::Interrupt {
            id: "i1".into(),
            agent_session_id: None,
        }))
        .unwrap();
        assert_eq!(stop["request"]["subtype"], "interrupt");
        assert_eq!(stop["request_id"], "i1");
    }
}
