//! Session ids: the only kind of id that ever becomes part of a path.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;

/// A session id: a UUID, written in its hyphenated lower-case form.
///
/// Parsing is strict, so a `SessionId` is always safe to use as a file name
/// (`sessions/<id>.json`, `runs/<id>/`): `../x`, `a/b`, the empty string, NUL
/// bytes and anything else that is not a UUID are refused before any path is built.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(uuid::Uuid);

impl SessionId {
    /// A fresh random (v4) id.
    pub fn new_random() -> Self {
        Self(uuid::Uuid::new_v4())
    }

    /// Parses an id, refusing anything that is not a hyphenated UUID.
    pub fn parse(text: &str) -> Result<Self, Error> {
        // Only the canonical 36-character hyphenated form: uuid's parser also
        // accepts braces and `urn:uuid:` prefixes, which we do not want in paths.
        let canonical = text.len() == 36
            && text.bytes().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => b == b'-',
                _ => b.is_ascii_hexdigit(),
            });
        if !canonical {
            return Err(Error::invalid_input(format!(
                "session id {:?} is not a UUID: pass an id like 3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42",
                truncate_for_message(text)
            )));
        }
        let uuid = uuid::Uuid::parse_str(text)
            .map_err(|e| Error::invalid_input(format!("session id {text:?} is not a UUID: {e}")))?;
        Ok(Self(uuid))
    }

    /// The fewest characters of an id that name a session on the command line: the eight
    /// that branches, worktree folders and the `kept` message show.
    pub const MIN_PREFIX: usize = 8;

    /// `text` as a prefix of an id (lower-cased), refused unless it is at least
    /// [`Self::MIN_PREFIX`] characters of a hyphenated UUID's start.
    pub fn check_prefix(text: &str) -> Result<String, Error> {
        let lower = text.to_ascii_lowercase();
        let fits = lower.len() >= Self::MIN_PREFIX
            && lower.len() < 36
            && lower.bytes().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => b == b'-',
                _ => b.is_ascii_hexdigit(),
            });
        if fits {
            Ok(lower)
        } else {
            Err(Error::invalid_input(format!(
                "session id {:?} is not a UUID, nor its first {} or more characters: pass an id \
                 like 3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42, or its start like 3f2a9c1e",
                truncate_for_message(text),
                Self::MIN_PREFIX
            )))
        }
    }

    /// The first eight hex characters, used in worktree folders, branch names and container names.
    pub fn short(&self) -> String {
        self.to_string()[..8].to_owned()
    }
}

fn truncate_for_message(text: &str) -> String {
    text.chars().take(64).collect()
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({self})")
    }
}

impl FromStr for SessionId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for SessionId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for SessionId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SessionId".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A session id: a hyphenated lower- or upper-case UUID.",
            "type": "string",
            "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
        })
    }
}

/// A task id: a UUID, like a session id, and like it parsed before it becomes a path
/// (`tasks/<taskId>.json`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(SessionId);

impl TaskId {
    /// A fresh random id.
    pub fn new_random() -> Self {
        Self(SessionId::new_random())
    }

    /// Parses an id, refusing anything that is not a hyphenated UUID.
    pub fn parse(text: &str) -> crate::error::Result<Self> {
        SessionId::parse(text).map(Self).map_err(|_| {
            Error::invalid_input(format!(
                "task id {:?} is not a UUID: pass the id `codehands run --attempts` printed",
                text.chars().take(64).collect::<String>()
            ))
        })
    }

    /// The first eight hex characters.
    pub fn short(&self) -> String {
        self.0.short()
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({self})")
    }
}

impl Serialize for TaskId {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for TaskId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TaskId".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = SessionId::json_schema(generator);
        schema.insert(
            "description".into(),
            "A task id: a hyphenated lower- or upper-case UUID.".into(),
        );
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_ids_that_are_not_uuids() {
        let long = "a".repeat(300);
        for bad in [
            "../x",
            "a/b",
            "",
            "\0",
            "not-a-uuid",
            long.as_str(),
            "{3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42}",
            "3f2a9c1e0b7d4c559a572f0d8e6b1a42",
            "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a4\0",
            "../../../../etc/passwd",
        ] {
            assert!(SessionId::parse(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn round_trips_and_shortens() {
        let id = SessionId::parse("3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42").unwrap();
        assert_eq!(id.to_string(), "3f2a9c1e-0b7d-4c55-9a57-2f0d8e6b1a42");
        assert_eq!(id.short(), "3f2a9c1e");
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<SessionId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<SessionId>("\"../x\"").is_err());
    }
}
