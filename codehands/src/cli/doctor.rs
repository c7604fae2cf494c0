//! `codehands doctor`: what is installed (git, Docker, bubblewrap, each agent's program),
//! whether our tests ran those versions, and whether the agent's box works here.

use std::ffi::OsStr;
use std::process::ExitCode;

use clap::Args;
use runner_contract::Result;

use super::output;
use super::probe::{self, Finding};

/// The git and Docker versions the test suite runs against on our machines.
const TESTED_GIT: &str = "2.47.";
const TESTED_DOCKER: &str = "20.10.";

/// Arguments of `codehands doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

/// Looks for each tool and prints what it found.
pub async fn run(args: DoctorArgs) -> Result<ExitCode> {
    let setup = codehands::Setup::from_env()?;
    // Every program below runs outside a box, as the caller: never with the caller's whole
    // environment or in the caller's folder (`probe::Site`).
    let site = probe::Site::new(&setup.settings.caller_env)?;
    let mut findings = vec![
        Finding {
            name: "git".into(),
            program: "git".into(),
            location: None,
            probe: site.run(OsStr::new("git"), &["--version"], Some(TESTED_GIT)),
        },
        Finding {
            name: "docker".into(),
            program: "docker".into(),
            location: None,
            probe: site.run_docker(
                &["version", "--format", "{{.Server.Version}}"],
                Some(TESTED_DOCKER),
            ),
        },
    ];
    let (registry, problems) = super::builder()?.agents()?;
    #[cfg(feature = "box")]
    findings.extend(super::doctor_box::findings(&setup, &registry, &site));
    for (name, entry) in registry.iter() {
        if let Some(version) = entry.agent.version_probe() {
            let env = codehands::locate::process_env;
            let location = match name.as_str() {
                "claude-code" => Some(codehands::locate::claude(&env).explain("CLAUDE_BIN")),
                "codex" => Some(codehands::locate::codex(&env).explain("CODEX_BIN")),
                "mistral-vibe" => Some(codehands::locate::vibe(&env).explain("VIBE_ACP_BIN")),
                _ => None,
            };
            findings.push(Finding {
                name: name.to_string(),
                program: version.program.display().to_string(),
                location,
                probe: site.agent(&version),
            });
        }
    }
    if args.json {
        output::json_line(&findings)?;
        return Ok(ExitCode::SUCCESS);
    }
    let colour = output::colour();
    for f in &findings {
        let state = probe::describe(colour, &f.probe);
        output::line(&format!("{:<12} {state}  [{}]", f.name, f.program))?;
        if let Some(location) = &f.location {
            output::line(&format!("             {location}"))?;
        }
        if let Some(note) = &f.probe.note {
            output::line(&format!("             {note}"))?;
        }
    }
    for problem in &problems {
        output::line(&format!("not loaded: {}", problem.message))?;
    }
    Ok(ExitCode::SUCCESS)
}
