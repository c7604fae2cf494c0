//! The lines `codex exec --json` prints (0.163.0), as far as the parser reads them.
//! Every field is optional or defaulted and unknown fields are ignored, so a line
//! that grows a field still parses; an unknown `type` becomes `Other`.

use serde::Deserialize;

/// One top-level line.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum Line {
    /// The thread (Codex's conversation) started or was resumed.
    #[serde(rename = "thread.started")]
    ThreadStarted {
        #[serde(default)]
        thread_id: Option<String>,
    },
    /// A model turn started.
    #[serde(rename = "turn.started")]
    TurnStarted,
    /// The turn ended normally.
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        #[serde(default)]
        usage: Option<serde_json::Value>,
    },
    /// The turn ended in an error.
    #[serde(rename = "turn.failed")]
    TurnFailed {
        #[serde(default)]
        error: Option<ErrorBody>,
    },
    /// An item began.
    #[serde(rename = "item.started")]
    ItemStarted { item: Item },
    /// An item changed (a todo list ticked off).
    #[serde(rename = "item.updated")]
    ItemUpdated { item: Item },
    /// An item ended.
    #[serde(rename = "item.completed")]
    ItemCompleted { item: Item },
    /// A stream-level error: retries ("Reconnecting... 1/5 (…)") and the final error.
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        message: String,
    },
    /// Anything else: skipped.
    #[serde(other)]
    Other,
}

/// The error of `turn.failed`.
#[derive(Debug, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub message: String,
}

/// One item of a turn, with the id that pairs its start and its end.
#[derive(Debug, Deserialize)]
pub(super) struct Item {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(flatten)]
    pub details: ItemDetails,
}

/// What an item is.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ItemDetails {
    /// A shell command Codex ran.
    CommandExecution {
        #[serde(default)]
        command: String,
        #[serde(default)]
        aggregated_output: String,
        #[serde(default)]
        exit_code: Option<i32>,
        #[serde(default)]
        status: Option<String>,
    },
    /// A patch applied (or not) to files.
    FileChange {
        #[serde(default)]
        changes: Vec<Change>,
        #[serde(default)]
        status: Option<String>,
    },
    /// Text from the model.
    AgentMessage {
        #[serde(default)]
        text: String,
    },
    /// The model's plan.
    TodoList {
        #[serde(default)]
        items: Vec<Todo>,
    },
    /// A call of a tool of an MCP server.
    McpToolCall {
        #[serde(default)]
        server: String,
        #[serde(default)]
        tool: String,
        #[serde(default)]
        status: Option<String>,
        #[serde(default)]
        error: Option<serde_json::Value>,
    },
    /// A web search.
    WebSearch {
        #[serde(default)]
        query: String,
    },
    /// An error or warning Codex reports as an item (not fatal to the turn).
    Error {
        #[serde(default)]
        message: String,
    },
    /// Anything else, `reasoning` among them: skipped.
    #[serde(other)]
    Other,
}

/// One file of a `file_change`.
#[derive(Debug, Deserialize)]
pub(super) struct Change {
    #[serde(default)]
    pub path: String,
    /// `add`, `delete` or `update`.
    #[serde(default)]
    pub kind: String,
}

/// One entry of a `todo_list`.
#[derive(Debug, Deserialize)]
pub(super) struct Todo {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub completed: bool,
}
