//! The trajectory mini-swe-agent 2.4.6 writes (`trajectory_format`
//! "mini-swe-agent-1.1"), as far as the parser reads it. Every field is optional or
//! defaulted and unknown fields are ignored, so a trajectory that grows a field
//! still parses.

use serde::Deserialize;
use serde_json::Value;

/// One whole trajectory: what the run has done so far.
#[derive(Debug, Deserialize)]
pub(super) struct Trajectory {
    /// The conversation, in order; it only grows from one write to the next.
    pub messages: Vec<Message>,
    #[serde(default)]
    pub info: Info,
    /// Present in every trajectory mini writes; a JSON document without it is not one.
    pub trajectory_format: String,
}

/// The run's summary.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Info {
    #[serde(default)]
    pub model_stats: ModelStats,
    #[serde(default)]
    pub config: Value,
}

/// What the model calls cost, as mini counts them.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ModelStats {
    /// US dollars from litellm's price list; 0 for a model it cannot price.
    #[serde(default)]
    pub instance_cost: f64,
    /// How many times the model was asked.
    #[serde(default)]
    pub api_calls: u64,
}

/// One message of the conversation. mini adds `extra` to the API's message with
/// what it did with it.
#[derive(Debug, Deserialize)]
pub(super) struct Message {
    /// `system`, `user`, `assistant`, `tool` or `exit`.
    #[serde(default)]
    pub role: String,
    /// Text, a list of content parts, or null.
    #[serde(default)]
    pub content: Value,
    /// The result a `tool` message answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub extra: Extra,
}

/// mini's own notes on a message.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Extra {
    /// The commands mini parsed from an assistant message, in the order it runs them.
    #[serde(default)]
    pub actions: Vec<Action>,
    /// The model's whole response to an assistant message (its `usage` is read).
    #[serde(default)]
    pub response: Value,
    /// A `tool` message's exit code (-1 when the command could not run).
    #[serde(default)]
    pub returncode: Option<i32>,
    /// A `tool` message's whole output (the content the model saw may be cut).
    #[serde(default)]
    pub raw_output: Option<String>,
    /// Why a command failed to run (a time-out …); empty when it ran.
    #[serde(default)]
    pub exception_info: Option<String>,
    /// A `user` message mini made itself: `FormatError` when the model's answer had no usable command.
    #[serde(default)]
    pub interrupt_type: Option<String>,
    /// How an `exit` message ended the run: `Submitted`, `LimitsExceeded`, or the name of an exception.
    #[serde(default)]
    pub exit_status: Option<String>,
    /// What the agent submitted (the output after its submit command's first line).
    #[serde(default)]
    pub submission: Option<String>,
}

/// One command mini runs for the model.
#[derive(Debug, Deserialize)]
pub(super) struct Action {
    #[serde(default)]
    pub command: String,
    /// The tool call it came from (absent for text-based models).
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// The message's text: the string content, or its text parts joined.
    pub(super) fn text(&self) -> String {
        match &self.content {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}
