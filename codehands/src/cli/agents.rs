//! `codehands agents`: every agent this command line knows, where it comes from, its
//! program and version, and what it can do.

use std::process::ExitCode;

use clap::Args;
use runner_contract::{AgentCapabilities, Result};
use runner_core::AgentOrigin;
use serde::Serialize;

use super::output;
use super::probe::{self, Probe};

/// Arguments of `codehands agents`.
#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// Print one JSON object per agent, one per line.
    #[arg(long)]
    json: bool,
}

/// One agent as listed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    name: String,
    origin: AgentOrigin,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<&'static str>,
    program: Option<String>,
    #[serde(flatten)]
    probe: Option<Probe>,
    capabilities: AgentCapabilities,
}

/// A file that could not become an agent, listed after the agents.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Broken<'a> {
    broken: &'a codehands::LoadProblem,
}

/// Lists the agents.
pub async fn run(args: AgentsArgs) -> Result<ExitCode> {
    let (registry, problems) = super::builder()?.agents()?;
    // The versions are asked outside a box, as the caller: never with the caller's whole
    // environment or in the caller's folder (`probe::Site`).
    let site = probe::Site::new(&codehands::Setup::from_env()?.settings.caller_env)?;
    let listed: Vec<Listed> = registry
        .iter()
        .map(|(name, entry)| {
            let version = entry.agent.version_probe();
            Listed {
                name: name.to_string(),
                origin: entry.origin.clone(),
                description: entry.agent.description(),
                protocol: entry.agent.protocol(),
                program: version.as_ref().map(|v| v.program.display().to_string()),
                probe: version.as_ref().map(|v| site.agent(v)),
                capabilities: entry.agent.capabilities(),
            }
        })
        .collect();
    if args.json {
        for agent in &listed {
            output::json_line(agent)?;
        }
        for problem in &problems {
            output::json_line(&Broken { broken: problem })?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let colour = output::colour();
    for agent in &listed {
        let found = agent
            .probe
            .as_ref()
            .map_or_else(|| "no version".to_owned(), |p| probe::describe(colour, p));
        output::line(&format!(
            "{:<14} {:<9} {found}  [{}]",
            agent.name,
            agent.origin.label(),
            agent.program.as_deref().unwrap_or("-"),
        ))?;
        let protocol = agent
            .protocol
            .map(|p| format!(", protocol: {p}"))
            .unwrap_or_default();
        if let Some(description) = &agent.description {
            // A profile's words: shown as one line with no control character.
            output::line(&format!(
                "{:<14} {}",
                "",
                runner_contract::present::visible(description, false)
            ))?;
        }
        // An ACP agent says whether it can continue a conversation in its answer to
        // `initialize`, which each turn reads: a follow-up of a session whose agent said no
        // is refused before anything is touched.
        let resume = match agent.protocol {
            Some("acp") if agent.capabilities.resume => {
                "if the agent offers session/load or session/resume"
            }
            _ => yes(agent.capabilities.resume),
        };
        output::line(&format!(
            "{:<14} resume: {resume}, budget: {}{protocol}",
            "",
            yes(agent.capabilities.budget)
        ))?;
    }
    for problem in &problems {
        output::line(&output::paint(
            colour,
            "31",
            &format!("not loaded: {}", problem.message),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn yes(on: bool) -> &'static str {
    if on { "yes" } else { "no" }
}
