//! [`RunnerBuilder`]: the agents a runner knows, from every way in, then the runner.
//!
//! The built-in crates come by cargo feature; a daemon adds its own `Agent`s with
//! [`RunnerBuilder::agent`]; profile files come from `$CODEHANDS_HOME/agents/*.toml` and
//! [`RunnerBuilder::agent_file`]; plugins from `$CODEHANDS_HOME/plugins/` and
//! [`RunnerBuilder::plugin`]. A broken file in the home's folders never stops the others:
//! it is kept as a [`LoadProblem`] that `codehands agents` shows, and naming that agent
//! gives the file's error. A file the caller named itself must load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use runner_contract::{Agent, AgentName, Error, ErrorKind, Result};
use runner_core::{AgentOrigin, AgentRegistry, LocalRunner};

use crate::Setup;
use crate::agents;
use crate::profile::{Profile, ProfileAgent};

/// A file in the home's `agents/` or `plugins/` folder that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadProblem {
    /// The file.
    pub path: PathBuf,
    /// The agent name it would have given (its stem), when that is a valid name.
    pub name: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

/// Collects agents, then builds a [`LocalRunner`] (or just the registry).
pub struct RunnerBuilder {
    setup: Setup,
    registry: AgentRegistry,
    problems: Vec<LoadProblem>,
    load_home: bool,
    refused: Option<Error>,
}

impl RunnerBuilder {
    /// A builder with this build's built-in agents registered.
    pub fn new(setup: Setup) -> Self {
        let mut registry = AgentRegistry::new();
        let mut refused = None;
        for agent in agents::built_in(&setup) {
            if let Err(e) = registry.register(agent, AgentOrigin::BuiltIn) {
                refused.get_or_insert(e);
            }
        }
        Self {
            setup,
            registry,
            problems: Vec::new(),
            load_home: true,
            refused,
        }
    }

    /// Whether to read `$CODEHANDS_HOME/agents/` and `plugins/` (yes by default).
    pub fn load_home(mut self, load: bool) -> Self {
        self.load_home = load;
        self
    }

    /// Registers an agent the caller brings. Its name must be free.
    pub fn agent(mut self, agent: Arc<dyn Agent>) -> Self {
        let result = self.registry.register(agent, AgentOrigin::Registered);
        self.keep(result);
        self
    }

    /// Registers the profile at `path` (`--agent-file`); it must load.
    pub fn agent_file(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let loaded = Profile::read(path, None).and_then(ProfileAgent::new);
        let result = loaded.and_then(|agent| {
            let origin = AgentOrigin::Profile {
                path: path.to_path_buf(),
            };
            self.registry.register(Arc::new(agent), origin)
        });
        self.keep(result);
        self
    }

    /// Registers every agent of the plugin library at `path` (`--plugin`); it must load.
    pub fn plugin(mut self, path: impl AsRef<Path>) -> Self {
        let result = crate::plugins::load(path.as_ref()).and_then(|agents| {
            agents.into_iter().try_for_each(|agent| {
                let origin = AgentOrigin::Plugin {
                    path: path.as_ref().to_path_buf(),
                };
                self.registry.register(agent, origin)
            })
        });
        self.keep(result);
        self
    }

    fn keep(&mut self, result: Result<()>) {
        if let Err(e) = result {
            self.refused.get_or_insert(e);
        }
    }

    /// The registry and the problems of the home's folders, or the first refusal.
    pub fn agents(mut self) -> Result<(AgentRegistry, Vec<LoadProblem>)> {
        if let Some(e) = self.refused.take() {
            return Err(e);
        }
        if self.load_home {
            self.load_home_profiles();
            self.load_home_plugins();
        }
        Ok((self.registry, self.problems))
    }

    /// Builds the real runner with every agent collected.
    pub fn build(self) -> Result<LocalRunner> {
        let setup = self.setup.clone();
        let (registry, _problems) = self.agents()?;
        Self::runner(setup, registry)
    }

    /// The real runner over `agents` (from [`RunnerBuilder::agents`]), with every other
    /// adapter of this build.
    pub fn runner(setup: Setup, agents: AgentRegistry) -> Result<LocalRunner> {
        crate::runner_with(setup, agents)
    }

    fn load_home_profiles(&mut self) {
        let folder = self.setup.home.agents_dir();
        for path in files_in(&folder, "toml", &mut self.problems) {
            let stem = stem(&path);
            let loaded = Profile::read(&path, Some(&stem)).and_then(ProfileAgent::new);
            let result = loaded.and_then(|agent| {
                let origin = AgentOrigin::Profile { path: path.clone() };
                self.registry.register(Arc::new(agent), origin)
            });
            if let Err(e) = result {
                self.problems.push(problem(&path, Some(stem), &e));
            }
        }
    }

    fn load_home_plugins(&mut self) {
        let folder = self.setup.home.plugins_dir();
        for path in files_in(&folder, "so", &mut self.problems) {
            let result = crate::plugins::load(&path).and_then(|agents| {
                agents.into_iter().try_for_each(|agent| {
                    let origin = AgentOrigin::Plugin { path: path.clone() };
                    self.registry.register(agent, origin)
                })
            });
            if let Err(e) = result {
                self.problems.push(problem(&path, None, &e));
            }
        }
    }
}

fn problem(path: &Path, name: Option<String>, e: &Error) -> LoadProblem {
    LoadProblem {
        path: path.to_path_buf(),
        name: name.filter(|n| AgentName::parse(n).is_ok()),
        message: e.to_string(),
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The files of `folder` ending in `.ext`, sorted; a missing folder has none.
fn files_in(folder: &Path, ext: &str, problems: &mut Vec<LoadProblem>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            problems.push(LoadProblem {
                path: folder.to_path_buf(),
                name: None,
                message: format!("cannot list {}: {e}", folder.display()),
            });
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// The error for an agent name nobody registered: the file's own error when a home file
/// of that name failed to load, "not in this build" for a built-in left out, else the
/// registry's list of known names.
pub fn unknown_agent(
    registry: &AgentRegistry,
    problems: &[LoadProblem],
    name: &AgentName,
) -> Error {
    if let Some(problem) = problems
        .iter()
        .find(|p| p.name.as_deref() == Some(name.as_str()))
    {
        return Error::new(ErrorKind::InvalidInput, problem.message.clone());
    }
    if let Some(feature) = agents::feature_of(name.as_str()) {
        return Error::not_in_build(&format!("the {name} agent"), feature);
    }
    match registry.get(name) {
        Err(e) => e,
        Ok(_) => Error::invalid_input(format!("the {name} agent is known")),
    }
}
