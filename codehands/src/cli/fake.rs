//! `codehands fake`: the fake runner's events as contract JSON.

use std::process::ExitCode;

use clap::Args;
use futures::StreamExt;
use runner_contract::{AgentName, Result, SessionId, StartOptions};

use super::output;

/// Arguments of `codehands fake`.
#[derive(Debug, Args)]
pub struct FakeArgs {
    /// Milliseconds between events.
    #[arg(long, default_value_t = 300)]
    delay_ms: u64,
    /// The session id to use (a UUID); a random one by default.
    #[arg(long)]
    session_id: Option<SessionId>,
}

/// Plays the fake runner once and prints every event as one JSON line.
pub async fn run(args: FakeArgs) -> Result<ExitCode> {
    let runner = codehands::fake_runner(args.delay_ms)?;
    let id = args.session_id.unwrap_or_else(SessionId::new_random);
    let options = StartOptions::new(
        id,
        ".",
        "Fix the failing test. Run npm test to check.",
        AgentName::parse(codehands::FAKE_AGENT)?,
    );
    let mut events = runner.start(options).await?;
    while let Some(event) = events.next().await {
        output::json_line(&event)?;
    }
    Ok(ExitCode::SUCCESS)
}
