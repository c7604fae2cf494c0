//! `codehands events ID` and `codehands report ID`: a session's events and report from its
//! log; and the hidden `__supervise ID`
//! that a run's detached supervisor process runs.

use std::process::ExitCode;

use clap::Args;
use futures::StreamExt;
use runner_contract::{Result, Runner, SessionId};

use super::output;
use super::view::HumanView;

/// Arguments of `codehands events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// The session (its id, or a unique prefix of 8+ characters).
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// Only the events after this seq.
    #[arg(long, default_value_t = 0)]
    after: u64,
    /// Go on printing events as they come, until the session is no longer running.
    #[arg(long, short)]
    follow: bool,
    /// Print every event as contract JSON, one per line.
    #[arg(long)]
    json: bool,
}

/// `codehands events ID [--after N] [--follow] [--json]`.
pub async fn run(args: EventsArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    let id = runner.resolve_session(&args.id).await?;
    let mut view = HumanView::new(false);
    let mut print = |event: &runner_contract::Event| -> std::io::Result<()> {
        if args.json {
            output::write_json_line(event)
        } else {
            view.print(event)
        }
    };
    let closed = |e: std::io::Error| -> Result<ExitCode> {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Ok(ExitCode::SUCCESS)
        } else {
            Err(runner_contract::Error::io("cannot write to stdout", &e))
        }
    };
    if !args.follow {
        // Reading heals a run nobody watches, as every command that reads a session does.
        runner.session(&id).await?;
        for event in runner.logged_events(&id, args.after)? {
            if let Err(e) = print(&event) {
                return closed(e);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut events = runner.events(&id, args.after).await?;
    while let Some(event) = events.next().await {
        if let Err(e) = print(&event) {
            return closed(e);
        }
    }
    // Ended with the session, or before it could be followed to its end: then why.
    runner.after_stream(&id).await?;
    Ok(ExitCode::SUCCESS)
}

/// Arguments of the hidden `codehands __supervise ID`.
#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// The session whose run to supervise.
    #[arg(value_parser = super::session_id)]
    id: SessionId,
}

/// `codehands __supervise ID`: supervises the run here, in this detached process, until its
/// turn ends (nothing when another supervisor has it).
pub async fn supervise(args: SuperviseArgs) -> Result<ExitCode> {
    let step = tracing::trace_span!("supervise.setup");
    let runner = super::builder_in_process()?.build()?;
    drop(step);
    // The supervisor is where the run happens now: its log goes beside the run's events.
    super::logging::log_run_to(runner.home(), &args.id);
    tracing::info!(session = %args.id, "supervising");
    let step = tracing::trace_span!("supervise.turn");
    runner.supervise(&args.id).await?;
    drop(step);
    tracing::info!(session = %args.id, "the turn ended");
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `codehands report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The session (its id, or a unique prefix of 8+ characters); or a task, whose attempts
    /// are reported side by side with the task's total cost (as `codehands task ID`).
    #[arg(value_parser = super::session_ref)]
    id: String,
    /// Print the RunReport (a task's TaskReport) as JSON.
    #[arg(long)]
    json: bool,
}

/// `codehands report ID [--json]`: the session's final report, from its event log.
pub async fn report(args: ReportArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    if let Some(task) = runner.find_task(&args.id).await? {
        let report = runner.task_report(&task).await?;
        if args.json {
            output::json_line(&report)?;
        } else {
            output::text(&super::task_view::table(&report, output::colour()))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let id = runner.resolve_session(&args.id).await?;
    let report = runner.report(&id).await?;
    if args.json {
        output::json_line(&report)?;
    } else {
        output::line(runner_core::report::render_human(&report).trim_end())?;
        // Where a remote turn spent its time (README.md, "Where runs run").
        #[cfg(feature = "remote")]
        if let Some(phases) = engine_docker::Phases::read(&runner.home().run_dir(&id)) {
            output::line(&phases.render())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
