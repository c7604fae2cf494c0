//! The agents a runner knows, by name, with where each came from.
//!
//! runner-core names no agent: the caller (the `codehands` facade, a daemon, a test)
//! registers every one. A name is taken once; the error for an unknown name lists the
//! known ones, so `--agent` and a daemon's option give the same answer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use runner_contract::agent_name::AgentName;
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::traits::agent::Agent;

/// Where an agent came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum AgentOrigin {
    /// A crate built into this program.
    BuiltIn,
    /// A crate the embedding program registered itself.
    Registered,
    /// A profile file (`agents/<name>.toml` or `--agent-file`).
    Profile {
        /// The file.
        path: PathBuf,
    },
    /// A shared library loaded at run time (`plugins/` or `--plugin`).
    Plugin {
        /// The library.
        path: PathBuf,
    },
}

impl AgentOrigin {
    /// A short word for tables: `built-in`, `registered`, `profile`, `plugin`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::BuiltIn => "built-in",
            Self::Registered => "registered",
            Self::Profile { .. } => "profile",
            Self::Plugin { .. } => "plugin",
        }
    }
}

/// One registered agent.
#[derive(Clone)]
pub struct RegisteredAgent {
    /// The agent.
    pub agent: Arc<dyn Agent>,
    /// Where it came from.
    pub origin: AgentOrigin,
}

/// The agents of one runner, keyed by name.
#[derive(Clone, Default)]
pub struct AgentRegistry {
    agents: BTreeMap<AgentName, RegisteredAgent>,
}

impl std::fmt::Debug for AgentRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.agents.keys()).finish()
    }
}

impl AgentRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `agent`; refuses a name that is already taken, saying by what.
    pub fn register(&mut self, agent: Arc<dyn Agent>, origin: AgentOrigin) -> Result<()> {
        let name = agent.name();
        if let Some(taken) = self.agents.get(&name) {
            return Err(Error::invalid_input(format!(
                "the agent name `{name}` of {} is taken by {}: give this agent another name",
                describe(&origin),
                describe(&taken.origin)
            )));
        }
        self.agents.insert(name, RegisteredAgent { agent, origin });
        Ok(())
    }

    /// Adds `agent`, replacing any agent of the same name.
    pub fn replace(&mut self, agent: Arc<dyn Agent>, origin: AgentOrigin) {
        self.agents
            .insert(agent.name(), RegisteredAgent { agent, origin });
    }

    /// The agent called `name`, or an error that lists the known names.
    pub fn get(&self, name: &AgentName) -> Result<Arc<dyn Agent>> {
        self.entry(name).map(|entry| entry.agent.clone())
    }

    /// The agent called `name` with its origin, or an error that lists the known names.
    pub fn entry(&self, name: &AgentName) -> Result<&RegisteredAgent> {
        self.agents.get(name).ok_or_else(|| {
            Error::new(
                ErrorKind::AgentUnavailable,
                format!(
                    "no agent named `{name}`: these are known: {}",
                    self.known_names()
                ),
            )
        })
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &AgentName) -> bool {
        self.agents.contains_key(name)
    }

    /// The known names, comma-separated, for messages (`none` when empty).
    pub fn known_names(&self) -> String {
        if self.agents.is_empty() {
            return "none".to_owned();
        }
        self.agents
            .keys()
            .map(AgentName::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every agent, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&AgentName, &RegisteredAgent)> {
        self.agents.iter()
    }

    /// How many agents are registered.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// Whether no agent is registered.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}

fn describe(origin: &AgentOrigin) -> String {
    match origin {
        AgentOrigin::BuiltIn => "a built-in agent".to_owned(),
        AgentOrigin::Registered => "an agent the program registered".to_owned(),
        AgentOrigin::Profile { path } => format!("the profile {} (key `name`)", path.display()),
        AgentOrigin::Plugin { path } => format!("the plugin {}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_contract::traits::agent::{
        AgentCapabilities, AgentParser, AgentRequest, Invocation,
    };

    struct Named(&'static str);

    impl Agent for Named {
        fn name(&self) -> AgentName {
            AgentName::parse(self.0).unwrap()
        }
        fn capabilities(&self) -> AgentCapabilities {
            AgentCapabilities::default()
        }
        fn invocation(&self, _: &AgentRequest) -> Result<Invocation> {
            Err(Error::invalid_input("not run in these tests"))
        }
        fn parser(&self) -> Box<dyn AgentParser> {
            Box::new(runner_contract::text_lines::TextLinesParser::default())
        }
    }

    #[test]
    fn a_name_is_taken_once_and_the_error_says_by_what() {
        let mut registry = AgentRegistry::new();
        registry
            .register(Arc::new(Named("alpha")), AgentOrigin::BuiltIn)
            .unwrap();
        let origin = AgentOrigin::Profile {
            path: "/x/alpha.toml".into(),
        };
        let err = registry
            .register(Arc::new(Named("alpha")), origin)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/x/alpha.toml"), "{err}");
        assert!(err.contains("taken by a built-in agent"), "{err}");
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let mut registry = AgentRegistry::new();
        for name in ["beta", "alpha"] {
            registry
                .register(Arc::new(Named(name)), AgentOrigin::Registered)
                .unwrap();
        }
        let err = registry
            .get(&AgentName::parse("gamma").unwrap())
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::AgentUnavailable);
        assert_eq!(
            err.to_string(),
            "no agent named `gamma`: these are known: alpha, beta"
        );
    }

    #[test]
    fn replace_swaps_an_agent_of_the_same_name() {
        let mut registry = AgentRegistry::new();
        registry.replace(Arc::new(Named("alpha")), AgentOrigin::BuiltIn);
        registry.replace(Arc::new(Named("alpha")), AgentOrigin::Registered);
        let entry = registry.entry(&AgentName::parse("alpha").unwrap()).unwrap();
        assert_eq!(entry.origin, AgentOrigin::Registered);
    }
}
