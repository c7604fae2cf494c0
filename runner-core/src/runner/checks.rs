//! What a runner checks before it makes anything: a start's options and agent, a repo a caller
//! will start in later, whether a box can be made here.

use std::sync::Arc;

use super::parts::{LocalRunner, MAX_PROMPT_BYTES};
use super::start::{refuse_codehands_worktree, refuse_line_breaks};
use super::{preflight, requests};
use runner_contract::agent_name::AgentName;
use runner_contract::error::{Error, ErrorKind, Result};
use runner_contract::options::StartOptions;
use runner_contract::traits::agent::{Agent, AgentRequest};

impl LocalRunner {
    /// Whether this runner can put an agent in a box here (`Isolation::Box`); the error says
    /// why not and what to do.
    pub fn box_available(&self) -> Result<()> {
        preflight::isolation(
            self.adapters().confinement.as_deref(),
            runner_contract::options::Isolation::Box,
            runner_contract::options::Engine::Local,
        )
    }

    /// Refuses `repo` with the words a start would refuse it with (a path with a line break,
    /// a codehands worktree, not a git repo with a commit), checking only: nothing is made.
    /// For a caller that takes a folder now and starts a session in it later (`codehands
    /// acp`'s `session/new`).
    pub async fn check_repo(&self, repo: &std::path::Path) -> Result<()> {
        refuse_line_breaks(&self.records().home, repo)?;
        refuse_codehands_worktree(self.records(), repo)?;
        self.adapters().vcs.base_commit(repo).await.map(drop)
    }

    pub(super) fn agent(&self, name: &AgentName) -> Result<Arc<dyn Agent>> {
        self.agents().get(name)
    }

    pub(super) async fn check(&self, options: &StartOptions) -> Result<Arc<dyn Agent>> {
        AgentRequest::check_prompt(&options.prompt)?;
        if options.prompt.len() > MAX_PROMPT_BYTES {
            return Err(Error::invalid_input(format!(
                "the prompt is {} bytes, over the limit of {MAX_PROMPT_BYTES}: shorten it",
                options.prompt.len()
            )));
        }
        if let Some(budget) = options.budget_usd {
            AgentRequest::check_budget(budget)?;
        }
        if options.verify && self.adapters().sandbox.is_none() {
            return Err(Error::not_in_build("verify (the Docker sandbox)", "docker"));
        }
        let agent = self.agent(&options.agent)?;
        if let Some(model) = &options.model {
            agent.check_model(model)?;
        }
        if options.permissions.mode == runner_contract::options::PermissionMode::Ask
            && !agent.capabilities().ask_permission
        {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "the {} agent cannot ask for permission before it uses a tool: run it \
                     without asking (tools outside its allow list are then refused)",
                    options.agent
                ),
            ));
        }
        if options.permissions.mode == runner_contract::options::PermissionMode::Ask
            && options.engine != runner_contract::options::Engine::Local
        {
            return Err(requests::remote_takes_no_input(
                options.engine,
                "use --engine local to be asked before a tool runs",
            ));
        }
        preflight::program(agent.as_ref(), &self.settings().caller_env)?;
        preflight::isolation(
            self.adapters().confinement.as_deref(),
            options.isolation,
            options.engine,
        )?;
        Ok(agent)
    }
}
