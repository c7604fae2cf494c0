//! The Agent Client Protocol messages an agent prints, as far as codehands reads them: the
//! JSON-RPC 2.0 envelope, and the params and results of the methods a client sees.
//!
//! Our own serde types rather than the `agent-client-protocol-schema` crate's, for three
//! reasons: that crate turns on serde_json's `preserve_order` for the whole workspace (every
//! `serde_json::Value` would keep insertion order, changing the committed schemas and every
//! snapshot of another crate), its `SessionUpdate` refuses an update kind it does not know
//! (a newer agent would break a client that must skip what it does not use), and we read a
//! dozen fields of it. Every field here is optional or defaulted: what an agent leaves out or
//! adds never stops the run; what we cannot do without (a session id) is checked where used.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version codehands speaks.
pub(crate) const PROTOCOL_VERSION: u64 = 1;

/// One line of the agent's output, sorted by its JSON-RPC shape.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// The answer to one of our requests.
    Response {
        /// Its id, as the agent echoed it.
        id: Value,
        /// `Ok(result)` or `Err(error)`.
        outcome: Result<Value, RpcError>,
    },
    /// A request of the agent's (it waits for our answer).
    Request {
        /// Its id, which our answer echoes.
        id: Value,
        /// The method.
        method: String,
        /// Its params.
        params: Value,
    },
    /// A notification (no answer).
    Notification {
        /// The method.
        method: String,
        /// Its params.
        params: Value,
    },
    /// JSON that is no JSON-RPC message (no method, no result, no error): skipped.
    Other,
}

/// The line is not a JSON object: no ACP agent may print it on stdout.
#[derive(Debug)]
pub(crate) struct NotJsonRpc;

impl Incoming {
    /// Sorts one output line.
    pub(crate) fn read(line: &str) -> Result<Self, NotJsonRpc> {
        let value: Value = serde_json::from_str(line).map_err(|_| NotJsonRpc)?;
        let Value::Object(mut map) = value else {
            return Err(NotJsonRpc);
        };
        let id = map.remove("id");
        let params = map.remove("params").unwrap_or(Value::Null);
        if let Some(Value::String(method)) = map.remove("method") {
            return Ok(match id {
                Some(id) if !id.is_null() => Self::Request { id, method, params },
                _ => Self::Notification { method, params },
            });
        }
        let Some(id) = id else {
            return Ok(Self::Other);
        };
        if let Some(error) = map.remove("error") {
            let error = serde_json::from_value(error.clone()).unwrap_or(RpcError {
                code: 0,
                message: error.to_string(),
                data: None,
            });
            return Ok(Self::Response {
                id,
                outcome: Err(error),
            });
        }
        match map.remove("result") {
            Some(result) => Ok(Self::Response {
                id,
                outcome: Ok(result),
            }),
            None => Ok(Self::Other),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RpcError {
    /// The code (-32000 is ACP's "authentication required").
    #[serde(default)]
    pub code: i64,
    /// What went wrong, in the agent's words.
    #[serde(default)]
    pub message: String,
    /// More, when the agent gives it.
    #[serde(default)]
    pub data: Option<Value>,
}

/// ACP's code for "authentication required".
pub(crate) const AUTH_REQUIRED: i64 = -32000;

/// The result of `initialize`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct InitializeResult {
    pub protocol_version: Option<u64>,
    pub agent_capabilities: AgentCapabilities,
}

/// What the agent offers beyond a new session.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct AgentCapabilities {
    /// `session/load` (replays the history, then the session goes on).
    pub load_session: bool,
    pub session_capabilities: SessionCapabilities,
}

/// The session methods the agent offers, each present (`{}`) or absent.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct SessionCapabilities {
    /// `session/resume`: the session goes on without a replay of its history.
    pub resume: Option<Value>,
}

/// The result of `session/new`, `session/load` or `session/resume`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct SessionOpened {
    /// Only in `session/new`'s result.
    pub session_id: Option<String>,
    /// The session's settings (a model among them, by `category`).
    pub config_options: Vec<ConfigOption>,
    /// The older way to say the model (`models.currentModelId`).
    pub models: Option<Models>,
}

/// One session setting.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ConfigOption {
    pub id: String,
    pub category: Option<String>,
    pub current_value: Option<Value>,
}

/// The models of a session (unstable part of ACP).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Models {
    pub current_model_id: Option<String>,
}

impl SessionOpened {
    /// The model the session runs, when the agent says.
    pub(crate) fn model(&self) -> Option<String> {
        let by_option = self
            .config_options
            .iter()
            .find(|o| o.category.as_deref() == Some("model") || o.id == "model")
            .and_then(|o| o.current_value.as_ref())
            .and_then(Value::as_str)
            .map(str::to_owned);
        by_option.or_else(|| self.models.as_ref()?.current_model_id.clone())
    }
}

/// The result of `session/prompt`: the turn is over.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PromptResult {
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or `cancelled`.
    pub stop_reason: Option<String>,
    /// Token counts (the spec calls them the session's totals).
    pub usage: Option<Usage>,
}

/// Token counts as ACP gives them.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Usage {
    pub total_tokens: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub thought_tokens: Option<u64>,
    pub cached_read_tokens: Option<u64>,
    pub cached_write_tokens: Option<u64>,
}

/// The params of `session/update`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct UpdateParams {
    pub session_id: Option<String>,
    pub update: Value,
}

/// A content block (only text is read; the rest is named by its type).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ContentBlock {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

impl ContentBlock {
    /// The text a person would read for this block.
    pub(crate) fn words(&self) -> String {
        match (&self.text, self.kind.as_str()) {
            (Some(text), _) => text.clone(),
            (None, kind) => format!("[{kind}]"),
        }
    }
}

/// A `*_chunk` update: one piece of a message.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Chunk {
    pub content: ContentBlock,
    pub message_id: Option<String>,
}

/// A `tool_call` or `tool_call_update`: every field but the id may be absent from an update
/// (then the earlier value holds). Written back (a permission request's input) as read.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ToolCall {
    pub tool_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing)]
    pub content: Option<Vec<ToolContent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<Location>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    #[serde(skip_serializing)]
    pub raw_output: Option<Value>,
}

/// One piece of a tool call's content.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ToolContent {
    /// `content`, `diff` or `terminal`.
    #[serde(rename = "type")]
    pub kind: String,
    /// For `content`: the block.
    pub content: Option<Value>,
    /// For `diff`: the file.
    pub path: Option<String>,
    /// For `diff`: the text before (absent or null for a new file).
    pub old_text: Option<String>,
}

/// A file a tool call touches.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Location {
    pub path: String,
}

/// One entry of a plan.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PlanEntry {
    pub content: String,
    pub status: Option<String>,
}

/// A `plan` update: the whole plan, replacing the one before.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Plan {
    pub entries: Vec<PlanEntry>,
}

/// A `usage_update`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct UsageUpdate {
    pub cost: Option<Cost>,
    /// Tokens in the context now.
    pub used: Option<u64>,
    /// The context window's size in tokens.
    pub size: Option<u64>,
}

/// The session's cost so far.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Cost {
    pub amount: Option<f64>,
    pub currency: Option<String>,
}

/// The params of `session/request_permission`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PermissionParams {
    pub tool_call: ToolCall,
    pub options: Vec<PermissionOption>,
}

/// One answer the agent offers to a permission request.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PermissionOption {
    pub option_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_sorted_by_their_json_rpc_shape() {
        assert!(matches!(
            Incoming::read(r#"{"jsonrpc":"2.0","id":1,"result":{"x":1}}"#),
            Ok(Incoming::Response { outcome: Ok(_), .. })
        ));
        let Ok(Incoming::Response {
            outcome: Err(error),
            ..
        }) = Incoming::read(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"log in"}}"#,
        )
        else {
            panic!("an error response");
        };
        assert_eq!(
            (error.code, error.message.as_str()),
            (AUTH_REQUIRED, "log in")
        );
        assert!(matches!(
            Incoming::read(
                r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}"#
            ),
            Ok(Incoming::Request { .. })
        ));
        assert!(matches!(
            Incoming::read(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
            Ok(Incoming::Notification { .. })
        ));
        assert!(matches!(
            Incoming::read(r#"{"type":"something"}"#),
            Ok(Incoming::Other)
        ));
        for broken in ["DEBUG: hello", "{", "42", "null", "[1]", "\"text\""] {
            assert!(Incoming::read(broken).is_err(), "{broken}");
        }
        // An error object of the wrong shape is kept as text.
        let Ok(Incoming::Response {
            outcome: Err(error),
            ..
        }) = Incoming::read(r#"{"id":3,"error":"boom"}"#)
        else {
            panic!("an error response");
        };
        assert!(error.message.contains("boom"));
    }

    #[test]
    fn the_model_comes_from_a_config_option_or_the_models() {
        let opened: SessionOpened = serde_json::from_str(
            r#"{"sessionId":"s","configOptions":[{"id":"mode","currentValue":"ask"},{"id":"m","category":"model","currentValue":"devstral"}]}"#,
        )
        .unwrap();
        assert_eq!(opened.model().as_deref(), Some("devstral"));
        let opened: SessionOpened =
            serde_json::from_str(r#"{"models":{"currentModelId":"x"}}"#).unwrap();
        assert_eq!(opened.model().as_deref(), Some("x"));
    }
}
