//! The words of the ACP parser: messages of its own, a plan as a person reads it, and the
//! person's message without our repo notes.

use runner_contract::EventBody;
use runner_contract::event::{Message, MessageRole};
use serde_json::Value;

use super::TurnPlan;
use crate::wire::Plan;

/// The user's message as the agent echoes the prompt, without the repo notes we put ahead
/// of it (the first of the prompt's blocks when there are two): they are codehands' words,
/// not the person's.
pub(super) fn without_notes(plan: Option<&TurnPlan>, text: &str) -> String {
    let notes = plan
        .filter(|plan| plan.blocks.len() > 1)
        .map(|plan| plan.blocks[0].trim());
    match notes {
        Some(notes) if !notes.is_empty() && text.trim_start().starts_with(notes) => {
            text.trim_start()[notes.len()..].trim_start().to_owned()
        }
        _ => text.to_owned(),
    }
}

/// A message from codehands about the run.
pub(super) fn system(text: String) -> EventBody {
    EventBody::Message(Message {
        text,
        role: MessageRole::System,
        ..Message::default()
    })
}

/// A plan as a person reads it: one line per entry with its status.
pub(super) fn plan_text(plan: &Plan) -> String {
    let mut text = String::from("Plan:");
    for entry in &plan.entries {
        let mark = match entry.status.as_deref() {
            Some("completed") => "[x]",
            Some("in_progress") => "[~]",
            _ => "[ ]",
        };
        text.push_str(&format!("\n{mark} {}", entry.content));
    }
    text
}

/// A JSON-RPC id as text (a number, or a string's content).
pub(super) fn id_text(id: &Value) -> String {
    id.as_str().map_or_else(|| id.to_string(), str::to_owned)
}

/// `value` without its null fields.
pub(super) fn without_nulls(mut value: Value) -> Value {
    if let Value::Object(map) = &mut value {
        map.retain(|_, v| !v.is_null());
    }
    value
}
