//! `codehands sandbox [REPO]`: a repo's tests, once, in the locked box.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use runner_contract::{Error, Home, Result};

use super::output;

/// Arguments of `codehands sandbox`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// The repository (default: the current folder).
    #[arg(default_value = ".")]
    repo: PathBuf,
    /// The IANA timezone of the box (default: the host's), e.g. `UTC` or `Asia/Karachi`.
    #[arg(long)]
    tz: Option<String>,
    /// Print the SandboxResult as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the tests and prints the result; exit code 1 when they did not pass.
pub async fn run(args: SandboxArgs) -> Result<ExitCode> {
    if !args.repo.is_dir() {
        return Err(Error::invalid_input(format!(
            "{} is not a folder: give the repo to test",
            args.repo.display()
        )));
    }
    let setup = codehands::Setup::from_env()?;
    let home: &Home = &setup.home;
    let (id, result) = codehands::sandbox_repo(&setup, &args.repo, args.tz).await?;
    if args.json {
        output::json_line(&result)?;
    } else {
        // The repo's tests print what the agent's code makes them print: shown, never obeyed.
        output::line(&runner_contract::present::visible(&result.output, true))?;
        let verdict = match (&result.error, result.passed) {
            (Some(e), _) => format!("could not test ({}): {}", e.kind.as_str(), e.message),
            (None, true) => "passed".to_owned(),
            (None, false) if result.timed_out => "failed: timed out".to_owned(),
            (None, false) if result.out_of_memory => "failed: out of memory".to_owned(),
            (None, false) => format!(
                "failed (exit code {})",
                result.exit_code.map_or("none".into(), |c| c.to_string())
            ),
        };
        output::line(&format!(
            "{} in {} ({} ms): {verdict}",
            result.command, result.image, result.duration_ms
        ))?;
        output::line(&format!(
            "result: {}",
            home.run_dir(&id)
                .join(format!("test-{}.json", result.n))
                .display()
        ))?;
    }
    Ok(if result.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
