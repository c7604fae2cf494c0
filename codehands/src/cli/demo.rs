//! `codehands demo`: a real run end to end on any machine. It makes a small repo
//! with a failing test in a temp folder, runs the fake agent on it (a replay of
//! Claude Code fixing the bug), and approves, printing the branch and commit.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use runner_contract::{
    AgentName, Error, ErrorKind, Home, Isolation, Result, SessionId, StartOptions,
};
use runner_process::tool::Tool;

use super::decide::DecideArgs;
use super::decide::Then;

/// Arguments of `codehands demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Milliseconds between the fake agent's lines, so the run can be watched.
    #[arg(long, default_value_t = 150)]
    delay_ms: u64,
    /// Print every event as contract JSON, one per line.
    #[arg(long)]
    json: bool,
    /// Run N attempts of the fake agent side by side as one task, then pick the cheapest
    /// passing one (the others are rejected).
    #[arg(long, value_name = "N")]
    attempts: Option<usize>,
}

/// Makes the repo, runs, approves.
pub async fn run(args: DemoArgs) -> Result<ExitCode> {
    let agent = AgentName::parse(codehands::FAKE_AGENT)?;
    let mut setup = codehands::Setup::from_env()?;
    let probe = codehands::RunnerBuilder::new(setup.clone()).load_home(false);
    let (agents, _) = probe.agents()?;
    if !agents.contains(&agent) {
        return Err(codehands::unknown_agent(&agents, &[], &agent));
    }
    let folder = tempfile::Builder::new()
        .prefix("codehands-demo-")
        .tempdir()
        .map_err(|e| Error::io("cannot make a temp folder for the demo", &e))?
        .keep();
    let repo = folder.join("date-bug");
    let prompt = make_repo(&repo)?;
    // The demo keeps everything in its own folder: the person's ~/.codehands is untouched.
    setup.home = Home::new(folder.join("codehands-home"));
    setup.fake.delay_ms = Some(args.delay_ms);
    let runner = codehands::build_runner(setup)?;
    // Boxed where the machine can, unconfined (and saying so) where it cannot: the demo's
    // agent is our own replay, so it works on a fresh machine either way.
    let isolation = match runner.box_available() {
        Ok(()) => Isolation::Box,
        Err(why) => {
            eprintln!("note: the demo runs without the agent's box: {why}");
            Isolation::None
        }
    };
    if !args.json {
        println!(
            "demo repo: {} (a failing test: the month is off by one)",
            repo.display()
        );
        println!(
            "isolation: {}",
            match isolation {
                Isolation::Box => "box (the agent writes only its worktree and reaches no network)",
                Isolation::None => "none (the agent runs with your rights)",
            }
        );
    }
    if let Some(n) = args.attempts {
        return super::demo_attempts::run(&runner, &repo, prompt, agent, isolation, n, args.json)
            .await;
    }
    let id = SessionId::new_random();
    let mut options = StartOptions::new(id, &repo, prompt, agent);
    options.isolation = isolation;
    let events = runner_contract::Runner::start(&runner, options).await?;
    let decide = DecideArgs {
        then: Some(Then::Approve),
        message: Some("Fix the off-by-one month in formatDate".into()),
        force: false,
        json: args.json,
    };
    let code = super::run::watch_and_decide(&runner, id, events, &decide).await?;
    if !args.json {
        println!("look at it: git -C {} log --oneline --all", repo.display());
    }
    Ok(code)
}

/// Makes the demo repo with one commit and returns its prompt.
fn make_repo(repo: &Path) -> Result<&'static str> {
    let prompt = codehands::write_demo_repo(repo)?;
    git(repo, &["init", "--quiet", "--initial-branch=main"])?;
    git(repo, &["add", "--all"])?;
    git(
        repo,
        &[
            "-c",
            "user.name=codehands demo",
            "-c",
            "user.email=demo@codehands.invalid",
            "commit",
            "--quiet",
            "-m",
            "A date formatter with a failing test",
        ],
    )?;
    Ok(prompt)
}

fn git(repo: &Path, args: &[&str]) -> Result<()> {
    let out = Tool::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .run()
        .map_err(|e| Error::new(ErrorKind::Vcs, format!("{e}: the demo needs git installed")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Vcs,
            format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ))
    }
}
