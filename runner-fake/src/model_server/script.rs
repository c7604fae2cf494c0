//! What the scripted model server answers: a list of turns.

use serde_json::Value;

/// A script: the turns of one conversation, in order.
///
/// The server picks the turn for a request by how many tool results the
/// conversation already holds: turn 0 answers a conversation with none, and each
/// later turn starts once every tool use of the turns before it has a result.
/// Counting results instead of looking at the last message keeps the script
/// right when the agent merges, repeats or reorders messages.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// What to answer once the turns are used up (a short text by default).
    pub after_end: Option<Turn>,
}

impl Script {
    /// A script of these turns.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            turns: turns.into_iter().collect(),
            after_end: None,
        }
    }
}

/// One answer of the model.
#[derive(Debug, Clone)]
pub enum Turn {
    /// A streamed assistant message.
    Reply(Reply),
    /// An HTTP error instead of a message.
    Error(HttpError),
}

impl Turn {
    /// A reply of one text block that ends the turn.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Reply(Reply::new(vec![Block::text(text)]))
    }

    /// A reply of these blocks; it stops for tool use when one of them is a tool use.
    pub fn blocks(blocks: impl IntoIterator<Item = Block>) -> Self {
        Self::Reply(Reply::new(blocks.into_iter().collect()))
    }

    /// How many tool results this turn asks for.
    pub fn tool_uses(&self) -> usize {
        match self {
            Self::Reply(reply) => reply
                .blocks
                .iter()
                .filter(|b| matches!(b, Block::ToolUse { .. }))
                .count(),
            Self::Error(_) => 0,
        }
    }
}

/// A streamed assistant message.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Its content blocks.
    pub blocks: Vec<Block>,
    /// Tokens reported in `message_start` / `message_delta` (what the agent prices).
    pub usage: Usage,
}

impl Reply {
    /// A reply with the default usage.
    pub fn new(blocks: Vec<Block>) -> Self {
        Self {
            blocks,
            usage: Usage::default(),
        }
    }
}

/// Token counts a reply reports. Fixed numbers keep recorded costs stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Self {
            input_tokens: 100,
            output_tokens: 20,
        }
    }
}

/// One content block of a reply.
#[derive(Debug, Clone)]
pub enum Block {
    /// Text, streamed as `text_delta`s.
    Text(String),
    /// Thinking, streamed as `thinking_delta`s with a signature.
    Thinking(String),
    /// A tool call, its input streamed as `input_json_delta`s.
    ToolUse {
        /// The call's id (`toolu_…`), which the tool result names.
        id: String,
        /// The tool (Read, Edit, Bash …).
        name: String,
        /// The tool's input.
        input: Value,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// A tool use block.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// An HTTP error answer, with the Anthropic error body.
#[derive(Debug, Clone)]
pub struct HttpError {
    /// The status: 401, 403, 429, 500, 529 …
    pub status: u16,
    /// The `error.type` of the body (`rate_limit_error`, `overloaded_error` …).
    pub error_type: String,
    /// The `error.message` of the body.
    pub message: String,
    /// Extra response headers (`retry-after`, `anthropic-ratelimit-…`).
    pub headers: Vec<(String, String)>,
    /// Answer this many requests with the error, then go on with the next turn; `None`: always.
    pub times: Option<u32>,
}

impl HttpError {
    /// An error with the body type Anthropic uses for that status.
    pub fn status(status: u16) -> Self {
        let (error_type, message) = match status {
            400 => ("invalid_request_error", "Invalid request."),
            401 => ("authentication_error", "invalid x-api-key"),
            402 => ("billing_error", "Your credit balance is too low."),
            403 => (
                "permission_error",
                "Your API key does not have permission to use this resource.",
            ),
            404 => ("not_found_error", "Not found."),
            413 => (
                "request_too_large",
                "Request exceeds the maximum allowed size.",
            ),
            429 => (
                "rate_limit_error",
                "Number of requests has exceeded your rate limit.",
            ),
            529 => ("overloaded_error", "Overloaded"),
            _ => ("api_error", "Internal server error"),
        };
        Self {
            status,
            error_type: error_type.into(),
            message: message.into(),
            headers: Vec::new(),
            times: None,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Answers only the first `n` requests that reach this turn with the error.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }
}

impl From<HttpError> for Turn {
    fn from(error: HttpError) -> Self {
        Self::Error(error)
    }
}
