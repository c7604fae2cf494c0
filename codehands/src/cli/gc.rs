//! `codehands gc [--older-than 14d] [--dry-run]`: throw away sessions nobody decided on.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use runner_contract::GcOptions;
use runner_contract::{Result, Runner};

use super::output;

/// Arguments of `codehands gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Kept and stopped sessions unchanged for longer than this go (`14d`, `36h`, `90m`).
    #[arg(long, default_value = "14d", value_parser = humantime::parse_duration)]
    older_than: Duration,
    /// Only say what would go.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `codehands gc`.
pub async fn run(args: GcArgs) -> Result<ExitCode> {
    let options = GcOptions {
        older_than: args.older_than,
        dry_run: args.dry_run,
    };
    let report = super::runner()?.gc(options).await?;
    if args.json {
        output::json_line(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    output::line(&format!(
        "{verb} {} session(s) older than {}",
        report.removed.len(),
        humantime::format_duration(args.older_than)
    ))?;
    for id in &report.removed {
        output::line(&format!("  {verb} {id}"))?;
    }
    for branch in &report.kept_branches {
        output::line(&format!(
            "  kept branch {branch} (the agent committed to it)"
        ))?;
    }
    for (id, e) in &report.errors {
        output::line(&format!("  could not remove {id}: {e}"))?;
    }
    for d in &report.disk {
        output::line(&format!(
            "  {}: worktrees {} → {}",
            d.repo,
            mib(d.bytes_before),
            mib(d.bytes_after)
        ))?;
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}
