//! Claude Code's stream-json lines as borrowed, lenient serde types.
//!
//! Speed and robustness come from the same choices: strings borrow from the line
//! (copied only when they hold escapes), everything not needed is skipped without
//! being built, sub-objects that are only sometimes needed stay as raw JSON, and a
//! field of an unexpected JSON type reads as absent instead of failing the line.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// One line, every field any line type uses (serde skips the rest).
#[derive(Deserialize, Default)]
pub(super) struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Str<'a>,
    #[serde(borrow, default)]
    pub subtype: Str<'a>,
    /// An object for assistant and user lines, a string for `permission_denied`.
    #[serde(borrow, default)]
    pub message: MessageField<'a>,
    #[serde(borrow, default)]
    pub session_id: Str<'a>,
    #[serde(borrow, default)]
    pub model: Str<'a>,
    #[serde(borrow, default)]
    pub cwd: Str<'a>,
    #[serde(borrow, default)]
    pub tools: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tool_name: Str<'a>,
    #[serde(borrow, default)]
    pub tool_use_id: Str<'a>,
    #[serde(borrow, default)]
    pub decision_reason: Str<'a>,
    #[serde(borrow, default)]
    pub attempt: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub retry_delay_ms: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error_status: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub error: Str<'a>,
    #[serde(borrow, default)]
    pub is_api_error_message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub api_error_status: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub is_error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub result: Str<'a>,
    #[serde(borrow, default)]
    pub total_cost_usd: Option<&'a RawValue>,
    /// Per model, what the turn since the last result used and cost (`costUSD`): unlike
    /// `total_cost_usd`, it leaves out earlier results of the process and the runs a
    /// resumed session continues.
    #[serde(borrow, default)]
    pub model_usage_since_last_result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub duration_ms: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub num_turns: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub terminal_reason: Str<'a>,
    #[serde(borrow, default)]
    pub errors: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tool_use_result: Option<&'a RawValue>,
    /// `isReplay` on a user message Claude Code took in (`--replay-user-messages`).
    #[serde(rename = "isReplay", borrow, default)]
    pub is_replay: Option<&'a RawValue>,
    /// A control request's id (`control_request` lines).
    #[serde(borrow, default)]
    pub request_id: Str<'a>,
    /// A control request's body.
    #[serde(borrow, default)]
    pub request: Option<&'a RawValue>,
    /// On a user line of tool results: per tool use, whether it ran (a refused one says
    /// `permission_decision.decision: "reject"`).
    #[serde(borrow, default)]
    pub tool_result_meta: Option<&'a RawValue>,
    /// On a result line: the tool uses refused during the turn.
    #[serde(borrow, default)]
    pub permission_denials: Option<&'a RawValue>,
}

/// One entry of a user line's `tool_result_meta`.
#[derive(Deserialize, Default)]
pub(super) struct ResultMeta<'a> {
    #[serde(borrow, default)]
    pub id: Str<'a>,
    #[serde(borrow, default)]
    pub permission_decision: Option<Decision<'a>>,
}

/// Claude Code's permission decision on one tool use.
#[derive(Deserialize, Default)]
pub(super) struct Decision<'a> {
    #[serde(borrow, default)]
    pub decision: Str<'a>,
}

/// One entry of a result line's `permission_denials`.
#[derive(Deserialize, Default)]
pub(super) struct Denial<'a> {
    #[serde(borrow, default)]
    pub tool_name: Str<'a>,
    #[serde(borrow, default)]
    pub tool_use_id: Str<'a>,
    #[serde(borrow, default)]
    pub tool_input: Option<&'a RawValue>,
}

/// The body of a `control_request` Claude Code sends (`can_use_tool` asks to use a tool).
#[derive(Deserialize, Default)]
pub(super) struct ControlRequest<'a> {
    #[serde(borrow, default)]
    pub subtype: Str<'a>,
    #[serde(borrow, default)]
    pub tool_name: Str<'a>,
    #[serde(borrow, default)]
    pub input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub permission_suggestions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tool_use_id: Str<'a>,
}

/// The `message` of an assistant or user line.
#[derive(Deserialize, Default)]
pub(super) struct MessageBody<'a> {
    #[serde(borrow, default)]
    pub content: Content<'a>,
}

/// One content block: text, thinking, tool_use, tool_result …
#[derive(Deserialize, Default)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Str<'a>,
    #[serde(borrow, default)]
    pub text: Str<'a>,
    #[serde(borrow, default)]
    pub id: Str<'a>,
    #[serde(borrow, default)]
    pub name: Str<'a>,
    #[serde(borrow, default)]
    pub input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tool_use_id: Str<'a>,
    /// A string or a list of blocks; read only when the result is needed.
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub is_error: Option<&'a RawValue>,
}

/// The input fields of the tools codehands maps.
#[derive(Deserialize, Default)]
pub(super) struct ToolInput<'a> {
    #[serde(borrow, default)]
    pub file_path: Str<'a>,
    #[serde(borrow, default)]
    pub notebook_path: Str<'a>,
    #[serde(borrow, default)]
    pub path: Str<'a>,
    #[serde(borrow, default)]
    pub pattern: Str<'a>,
    #[serde(borrow, default)]
    pub command: Str<'a>,
}

/// The few fields of a tool's structured result that codehands reads.
#[derive(Deserialize, Default)]
pub(super) struct ToolUseResult<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Str<'a>,
}

/// A text part of a tool result given as a list of blocks.
#[derive(Deserialize, Default)]
pub(super) struct TextPart<'a> {
    #[serde(borrow, default)]
    pub text: Str<'a>,
}

/// A string field that reads as absent when it holds anything but a string.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub(super) struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    /// The text, when it is there.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// Whether it is there and equals `text`.
    pub fn is(&self, text: &str) -> bool {
        self.get() == Some(text)
    }

    /// An owned copy.
    pub fn owned(&self) -> Option<String> {
        self.0.as_ref().map(|c| c.clone().into_owned())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Str(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Str(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Str(None))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `message`: an object (assistant, user), a string (`permission_denied`), or other.
#[derive(Default)]
pub(super) enum MessageField<'a> {
    /// An assistant or user message.
    Body(MessageBody<'a>),
    /// A plain string (its text is not needed).
    Text,
    /// Absent or of another type.
    #[default]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for MessageField<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageField<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object or string")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                MessageBody::deserialize(MapAccessDeserializer::new(map)).map(MessageField::Body)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MessageField::Text)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MessageField::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MessageField::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MessageField::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MessageField::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MessageField::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(MessageField::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// `message.content`: a list of blocks, a plain string, or other.
#[derive(Default)]
pub(super) enum Content<'a> {
    /// Content blocks.
    Blocks(Vec<Block<'a>>),
    /// A plain string (a user prompt).
    Text(String),
    /// Absent or of another type.
    #[default]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<Block<'de>>::deserialize(SeqAccessDeserializer::new(seq)).map(Content::Blocks)
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(text.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A raw JSON number or bool, read leniently: `None` when absent or of another type.
pub(super) fn u64_of(raw: Option<&RawValue>) -> Option<u64> {
    raw.and_then(|r| r.get().parse().ok())
}

/// See [`u64_of`].
pub(super) fn f64_of(raw: Option<&RawValue>) -> Option<f64> {
    // serde_json's float_roundtrip feature parses exactly: cost passes through unchanged.
    raw.and_then(|r| serde_json::from_str::<f64>(r.get()).ok())
}

/// See [`u64_of`].
pub(super) fn bool_of(raw: Option<&RawValue>) -> Option<bool> {
    match raw.map(RawValue::get) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    }
}

/// A tool result's text: a string, or the text parts of a list of blocks.
pub(super) fn result_text(raw: Option<&RawValue>) -> String {
    let Some(raw) = raw else {
        return String::new();
    };
    if let Ok(Str(Some(text))) = serde_json::from_str::<Str<'_>>(raw.get()) {
        return text.into_owned();
    }
    serde_json::from_str::<Vec<TextPart<'_>>>(raw.get())
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p.text.get())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
