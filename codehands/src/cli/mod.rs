//! Commands of the `codehands` binary, one module each.

mod fake;
mod output;
mod schema;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use runner_core::Result;

/// Run headless coding agents on a private git worktree, then approve or reject the change.
#[derive(Debug, Parser)]
#[command(name = "codehands", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the fake runner's events, one JSON object per line (what a daemon receives).
    Fake(fake::FakeArgs),
    /// Print the JSON Schemas of the contract.
    Schema(schema::SchemaArgs),
}

/// Runs one parsed command line.
pub async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Fake(args) => fake::run(args).await,
        Command::Schema(args) => schema::run(args),
    }
}
