//! Agent names: how a session, an option or a command line names the agent that runs it.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Error;

/// The longest name an agent may have.
pub const MAX_AGENT_NAME_LEN: usize = 32;

/// A checked agent name: 1 to 32 lowercase ASCII letters, digits and `-`, starting with
/// a letter (for example `my-agent`).
///
/// Parsed once, the way [`crate::SessionId`] is, so a name is always safe to print, to use
/// as a file stem (`agents/<name>.toml`) and to compare; past the parse it is never a free
/// string. runner-core knows no name: agents say theirs (`Agent::name`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentName(String);

impl AgentName {
    /// Parses a name, refusing anything outside the pattern with what a valid one looks like.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bytes = text.as_bytes();
        let valid = (1..=MAX_AGENT_NAME_LEN).contains(&bytes.len())
            && bytes[0].is_ascii_lowercase()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            let shown: String = text.chars().take(64).collect();
            Err(Error::invalid_input(format!(
                "{shown:?} is not an agent name: use 1 to {MAX_AGENT_NAME_LEN} lowercase letters, \
                 digits and `-`, starting with a letter (for example `my-agent`)"
            )))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentName({})", self.0)
    }
}

impl FromStr for AgentName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl AsRef<str> for AgentName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for AgentName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AgentName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for AgentName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AgentName".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An agent's name: 1 to 32 lowercase ASCII letters, digits and `-`, starting with a letter.",
            "type": "string",
            "pattern": "^[a-z][a-z0-9-]{0,31}$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_names_in_the_pattern() {
        for good in ["a", "my-agent", "x1", "a-b-c-9", &"a".repeat(32)] {
            assert_eq!(AgentName::parse(good).unwrap().as_str(), good);
        }
    }

    #[test]
    fn refuses_names_outside_the_pattern() {
        for bad in [
            "",
            "1abc",
            "-abc",
            "Abc",
            "a_b",
            "a b",
            "a/b",
            "../x",
            "a.toml",
            "\0",
            "é",
            &"a".repeat(33),
        ] {
            let err = AgentName::parse(bad).unwrap_err();
            assert!(
                err.to_string().contains("is not an agent name"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn serde_round_trips_and_checks() {
        let name: AgentName = serde_json::from_str("\"my-agent\"").unwrap();
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"my-agent\"");
        assert!(serde_json::from_str::<AgentName>("\"../x\"").is_err());
    }
}
