//! What the agent of a turn is asked, and the refusals that depend on where its box runs.

use runner_contract::agent_name::AgentName;
use runner_contract::error::{Error, ErrorKind};
use runner_contract::options::DEFAULT_BUDGET_USD;
use runner_contract::session::SessionRecord;
use runner_contract::traits::agent::{AgentRequest, ResumeFrom};

use super::control::TurnPlan;

/// What the agent of a turn is asked to do, built once from the record and the plan.
pub(super) fn request_for(record: &SessionRecord, plan: &TurnPlan) -> AgentRequest {
    AgentRequest {
        session_id: record.session_id,
        worktree: record.worktree_path.clone(),
        prompt: plan.prompt.clone(),
        model: match &plan.phase {
            Some(phase) => phase.model.clone(),
            None => record.model.clone(),
        },
        budget_usd: record.budget_usd.unwrap_or(DEFAULT_BUDGET_USD),
        notes: None,
        notes_file: None,
        test_command: None,
        permissions: record.permissions.mode,
        resume: plan
            .resume_from
            .clone()
            .map(|agent_session_id| ResumeFrom { agent_session_id }),
        provider_env: Vec::new(),
        read_only: plan.phase.as_ref().is_some_and(|p| p.read_only),
        // Boxed, the box is the boundary and the agent may run any command in it; unboxed,
        // its program's own allow list is (ARCHITECTURE.md, "Adding an agent").
        tools: runner_contract::ToolPolicy {
            boxed: record.isolation == runner_contract::options::Isolation::Box,
            allow: record.allowances.agent_allow.clone(),
            deny: record.allowances.agent_deny.clone(),
        },
    }
}

/// The agent that runs a turn: its phase's, else the session's.
pub(super) fn agent_of<'a>(record: &'a SessionRecord, plan: &'a TurnPlan) -> &'a AgentName {
    plan.phase.as_ref().map_or(&record.agent, |p| &p.agent)
}

/// The refusal of input for a running turn whose box is on a remote engine: a swarm's task
/// has no stdin, so the turn takes its prompt and nothing after it (README.md, "Where runs
/// run").
pub(super) fn remote_takes_no_input(
    engine: runner_contract::options::Engine,
    what_to_do: &str,
) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "a box on the {engine} engine takes no input while its turn runs (a permission \
             answer, a message, an interrupt): {what_to_do}"
        ),
    )
}
