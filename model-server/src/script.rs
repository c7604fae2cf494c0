//! What the scripted model server answers: a list of turns.

use std::time::Duration;

use serde_json::Value;

/// A script: the turns of one conversation, in order.
///
/// The server picks the turn for a request by how many tool results the
/// conversation already holds: turn 0 answers a conversation with none, and each
/// later turn starts once every tool use of the turns before it has a result.
/// Counting results instead of looking at the last message keeps the script
/// right when the agent merges, repeats or reorders messages.
///
/// A script may hold follow-up scripts ([`Script::follow_up`]), each known by a
/// marker: a request whose conversation holds a user message containing the
/// marker is answered from that follow-up script, counting only the tool results
/// after that message. A conversation of several turns (a second prompt, a
/// message sent mid-turn) is scripted this way.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// What to answer once the turns are used up (a short text by default); its tool
    /// calls get ids of their own each time, so a tool call here scripts an agent that
    /// loops forever.
    pub after_end: Option<Turn>,
    /// The follow-up scripts with their markers, in the order they were added.
    pub follow_ups: Vec<FollowUp>,
}

impl Script {
    /// A script of these turns.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            turns: turns.into_iter().collect(),
            after_end: None,
            follow_ups: Vec::new(),
        }
    }

    /// Adds a follow-up script: a request whose conversation holds a user message
    /// with `marker` in its text is answered from `script` instead, its turn picked
    /// by the tool results in the messages after that marked message.
    ///
    /// When the markers of several follow-ups appear, the one whose message comes
    /// last in the conversation wins; within one message, the follow-up added
    /// first. Only this script's follow-ups are looked at: those of `script`
    /// itself are not.
    pub fn follow_up(mut self, marker: impl Into<String>, script: Script) -> Self {
        self.follow_ups.push(FollowUp {
            marker: marker.into(),
            script,
        });
        self
    }
}

/// A follow-up script and the marker that selects it (see [`Script::follow_up`]).
#[derive(Debug, Clone)]
pub struct FollowUp {
    /// The text a user message must contain.
    pub marker: String,
    /// The script that answers from that message on.
    pub script: Script,
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

    /// The same turn, answered only after `delay` (see [`Reply::delay`]). An error
    /// turn has no delay and is returned unchanged.
    pub fn delayed(self, delay: Duration) -> Self {
        match self {
            Self::Reply(reply) => Self::Reply(reply.delayed(delay)),
            error @ Self::Error(_) => error,
        }
    }

    /// How long the server waits before it answers with this turn.
    pub fn delay(&self) -> Option<Duration> {
        match self {
            Self::Reply(reply) => reply.delay,
            Self::Error(_) => None,
        }
    }

    /// The same turn with `_<n>` after each tool call's id.
    pub fn with_unique_ids(&self, n: usize) -> Self {
        match self {
            Self::Reply(reply) => {
                let mut reply = reply.clone();
                for block in &mut reply.blocks {
                    if let Block::ToolUse { id, .. } = block {
                        *id = format!("{id}_{n}");
                    }
                }
                Self::Reply(reply)
            }
            error @ Self::Error(_) => error.clone(),
        }
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
    /// How long the server waits before it answers (none by default). The request
    /// is recorded as soon as it arrives, and other requests are answered meanwhile,
    /// so a test can act while the agent waits for the model.
    pub delay: Option<Duration>,
}

impl Reply {
    /// A reply with the default usage and no delay.
    pub fn new(blocks: Vec<Block>) -> Self {
        Self {
            blocks,
            usage: Usage::default(),
            delay: None,
        }
    }

    /// The same reply, answered only after `delay`.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
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
