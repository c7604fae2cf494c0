//! `codehands ui [--port N]`: the review page. A person watches runs live, reads a diff with
//! its file tree, compares a task's attempts side by side and approves or rejects, in a
//! browser. The page is served on 127.0.0.1 only, behind a random key in the URL it prints;
//! every action is the library call the command line makes (`Runner`, `LocalRunner::pick`,
//! `reject_task` …), so a refusal reads as the command line's.

#[cfg(feature = "ui")]
mod actions;
#[cfg(feature = "ui")]
mod api;
#[cfg(feature = "ui")]
mod server;
#[cfg(feature = "ui")]
mod stream;

use std::process::ExitCode;

use clap::Args;
use runner_contract::Result;

/// Arguments of `codehands ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// The port on 127.0.0.1 (default: any free one, said in the URL printed).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// `codehands ui`: prints the page's URL (with its key) on stdout, then serves until Ctrl-C.
#[cfg(feature = "ui")]
pub async fn run(args: UiArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    server::serve(runner, args.port).await?;
    Ok(ExitCode::SUCCESS)
}

/// `codehands ui` in a build without the page.
#[cfg(not(feature = "ui"))]
pub async fn run(args: UiArgs) -> Result<ExitCode> {
    let _ = args.port;
    Err(runner_contract::Error::not_in_build(
        "the review page (`codehands ui`)",
        "ui",
    ))
}
