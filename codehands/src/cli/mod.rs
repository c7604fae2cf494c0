//! Commands of the `codehands` binary, one module each.

mod acp;
mod agents;
mod completions;
mod converse;
mod decide;
mod demo;
mod demo_attempts;
mod doctor;
#[cfg(feature = "box")]
mod doctor_box;
mod events;
mod fake;
mod gc;
mod keyboard;
mod last_test;
mod list;
mod logging;
mod output;
mod permissions;
mod probe;
mod remote;
mod run;
mod sandbox;
mod schema;
mod sessions;
mod task;
mod task_diff;
mod task_view;
mod ui;
mod view;

pub use output::stdout_closed;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use runner_contract::{Result, SessionId};

/// Run headless coding agents on a private git worktree, then approve or reject the change.
///
/// Everything lives under $CODEHANDS_HOME (default ~/.codehands). CLAUDE_BIN and
/// CODEX_BIN name the agent programs. Logs go to stderr: -v, -vv, -vvv, or RUST_LOG.
#[derive(Debug, Parser)]
#[command(name = "codehands", version, about, long_about)]
pub struct Cli {
    #[command(flatten)]
    sources: AgentSources,
    /// Log more on stderr: -v info, -vv debug, -vvv trace (RUST_LOG, when set, decides instead).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// Agents from files, for this one command (beside the home's `agents/` and `plugins/`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AgentSources {
    /// An agent profile (TOML) to use for this command; see `codehands agents`.
    #[arg(long = "agent-file", value_name = "PATH", global = true)]
    agent_files: Vec<std::path::PathBuf>,
    /// A plugin library whose agents to use for this command.
    #[arg(long = "plugin", value_name = "PATH", global = true)]
    plugins: Vec<std::path::PathBuf>,
}

/// The agent sources of this command line, set once by [`run`].
static SOURCES: std::sync::OnceLock<AgentSources> = std::sync::OnceLock::new();

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an agent on a private worktree of REPO, watch it, then approve, reject or keep.
    Run(run::RunArgs),
    /// Make a small repo with a failing test and run the fake agent on it end to end.
    Demo(demo::DemoArgs),
    /// Print the change of a session since its base commit.
    Diff(sessions::DiffArgs),
    /// Commit a finished session's change on its branch.
    Approve(sessions::ApproveArgs),
    /// Throw a finished or stopped session's change away (worktree and branch); given a
    /// task's id, every attempt of the task not yet decided.
    Reject(sessions::IdArgs),
    /// Stop a running session (also one run by another codehands process); it can be resumed.
    Stop(sessions::IdArgs),
    /// Resume a stopped session in the same worktree.
    Resume(run::ResumeArgs),
    /// Tell a session more: a finished one gets a follow-up turn in the same worktree, a
    /// running one gets the text mid-turn, to steer it.
    Send(converse::SendArgs),
    /// Answer a permission request of a running session (`run --ask --json`): allow or deny.
    Answer(converse::AnswerArgs),
    /// End a running session's current turn, not the session: it awaits approval with the
    /// change so far, and `send` can redirect the agent.
    Interrupt(converse::InterruptArgs),
    /// Show a task's attempts side by side (`run --attempts`): agent, model, state, time,
    /// cost, tokens, diff, files, tests, verdict, the cheapest passing one marked.
    Task(task::TaskArgs),
    /// List the sessions: a table (id, repo, agent, state, age, cost, branch), or JSON.
    Sessions(list::ListArgs),
    /// Clean up after a crash: interrupted sessions fail, leftovers are removed.
    Recover(sessions::JsonArgs),
    /// Throw away kept and stopped sessions older than a limit (worktree, and the branch
    /// unless the agent committed to it).
    Gc(gc::GcArgs),
    /// Print a shell completion script (bash, zsh or fish) to stdout.
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff) to stdout; `cargo xtask man` writes it to target/man/.
    #[command(hide = true, name = "__man")]
    Man,
    /// Run a repo's tests once in the locked Docker box.
    Sandbox(sandbox::SandboxArgs),
    /// Print the fake runner's events, one JSON object per line (what a daemon receives).
    Fake(fake::FakeArgs),
    /// Print the JSON Schemas of the contract.
    Schema(schema::SchemaArgs),
    /// Show what is installed: git, Docker, each agent's program, and whether our tests ran those versions.
    Doctor(doctor::DoctorArgs),
    /// List the agents: built in, from profile files and from plugins.
    Agents(agents::AgentsArgs),
    /// Speak the Agent Client Protocol on stdin and stdout: an ACP client (an editor's agent
    /// panel) then uses codehands as its agent, each prompt a run of `--agent` on a private
    /// worktree, approved, kept or rejected at the end of each turn.
    Acp(acp::AcpArgs),
    /// Serve the review page on 127.0.0.1: runs live, diffs, a task's attempts side by side,
    /// approve or reject in a browser (the URL it prints holds the page's key).
    Ui(ui::UiArgs),
    /// Print a session's events from its log (`--follow`: and then as they come).
    Events(events::EventsArgs),
    /// Print a session's final report: how it ended, tools, files, commands, tests, cost.
    Report(events::ReportArgs),
    /// A session's remote box for other engines: `remote manifest ID` prints it as Kubernetes
    /// objects (docs/kubernetes.md).
    Remote(remote::RemoteArgs),
    /// Supervise one run (what a run's detached supervisor process runs).
    #[command(name = "__supervise", hide = true)]
    Supervise(events::SuperviseArgs),
}

/// Runs one parsed command line.
pub async fn run(cli: Cli) -> Result<ExitCode> {
    let _ = SOURCES.set(cli.sources);
    tracing::debug!(command = ?cli.command, "codehands");
    match cli.command {
        // A run of several attempts is a task (cli/task.rs); run.rs knows only one session.
        Command::Run(args) => match args.attempts.clone() {
            Some(attempts) => task::start(args, &attempts).await,
            None => run::run(args).await,
        },
        Command::Demo(args) => demo::run(args).await,
        Command::Diff(args) => sessions::diff(args).await,
        Command::Approve(args) => sessions::approve(args).await,
        Command::Reject(args) => sessions::reject(args).await,
        Command::Stop(args) => sessions::stop(args).await,
        Command::Resume(args) => run::resume(args).await,
        Command::Send(args) => converse::send(args).await,
        Command::Answer(args) => converse::answer(args).await,
        Command::Interrupt(args) => converse::interrupt(args).await,
        Command::Task(args) => task::run(args).await,
        Command::Sessions(args) => list::run(args).await,
        Command::Gc(args) => gc::run(args).await,
        Command::Completions(args) => completions::run(args),
        Command::Man => completions::man(),
        Command::Recover(args) => sessions::recover(args).await,
        Command::Sandbox(args) => sandbox::run(args).await,
        Command::Fake(args) => fake::run(args).await,
        Command::Schema(args) => schema::run(args),
        Command::Doctor(args) => doctor::run(args).await,
        Command::Agents(args) => agents::run(args).await,
        Command::Acp(args) => acp::run(args).await,
        Command::Ui(args) => ui::run(args).await,
        Command::Events(args) => events::run(args).await,
        Command::Report(args) => events::report(args).await,
        Command::Remote(args) => remote::run(args).await,
        Command::Supervise(args) => events::supervise(args).await,
    }
}

/// Parses a session id argument (clap value parser).
fn session_id(text: &str) -> std::result::Result<SessionId, String> {
    SessionId::parse(text).map_err(|e| e.to_string())
}

/// Checks a session argument: a whole id or a prefix of 8+ characters of one (clap value
/// parser); the session it names is found later, in the store.
fn session_ref(text: &str) -> std::result::Result<String, String> {
    SessionId::parse(text)
        .map(|id| id.to_string())
        .or_else(|_| SessionId::check_prefix(text))
        .map_err(|e| e.to_string())
}

/// The clap command of the whole command line (completions and the man page are made from it).
fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Sends logs to stderr (`RUST_LOG` when set, else `warn` raised by each `-v`) and, once a
/// run's session is known, to its `runs/<id>/codehands.log`.
pub fn init_logging(cli: &Cli) {
    logging::init(cli.verbose);
}

/// The builder every command starts from: the environment, plus `--agent-file` and `--plugin`;
/// each run it starts or takes over gets a detached supervisor process of its own
/// (`codehands __supervise ID`), so a run outlives the command that started it.
fn builder() -> Result<codehands::RunnerBuilder> {
    builder_for(codehands::Setup::from_env()?)
}

/// The builder of a supervisor process: runs are supervised in this very process.
fn builder_in_process() -> Result<codehands::RunnerBuilder> {
    let mut setup = codehands::Setup::from_env()?;
    setup.settings.supervisor = None;
    builder_with_sources(setup)
}

fn builder_for(mut setup: codehands::Setup) -> Result<codehands::RunnerBuilder> {
    setup.settings.supervisor = Some(supervisor_command()?);
    builder_with_sources(setup)
}

/// `codehands [--agent-file …] [--plugin …] __supervise`, the session id follows.
fn supervisor_command() -> Result<runner_core::SupervisorCommand> {
    let program = std::env::current_exe().map_err(|e| {
        runner_contract::Error::io("cannot find the codehands program to supervise the run", &e)
    })?;
    let sources = SOURCES.get().cloned().unwrap_or_default();
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    for path in &sources.agent_files {
        args.push("--agent-file".into());
        args.push(
            std::path::absolute(path)
                .unwrap_or_else(|_| path.clone())
                .into(),
        );
    }
    for path in &sources.plugins {
        args.push("--plugin".into());
        args.push(
            std::path::absolute(path)
                .unwrap_or_else(|_| path.clone())
                .into(),
        );
    }
    args.push("__supervise".into());
    Ok(runner_core::SupervisorCommand { program, args })
}

fn builder_with_sources(setup: codehands::Setup) -> Result<codehands::RunnerBuilder> {
    let mut builder = codehands::RunnerBuilder::new(setup);
    let sources = SOURCES.get().cloned().unwrap_or_default();
    for path in &sources.agent_files {
        builder = builder.agent_file(path);
    }
    for path in &sources.plugins {
        builder = builder.plugin(path);
    }
    Ok(builder)
}

/// The runner every command uses: the real one, from the environment.
fn runner() -> Result<runner_core::LocalRunner> {
    builder()?.build()
}

/// The runner, once `agent` is known to it; the error says why not (a broken profile of
/// that name, a built-in left out of this build, or the names that are known).
fn runner_for(agent: &runner_contract::AgentName) -> Result<runner_core::LocalRunner> {
    let mut setup = codehands::Setup::from_env()?;
    setup.settings.supervisor = Some(supervisor_command()?);
    let (registry, problems) = builder_with_sources(setup.clone())?.agents()?;
    if !registry.contains(agent) {
        return Err(codehands::unknown_agent(&registry, &problems, agent));
    }
    codehands::RunnerBuilder::runner(setup, registry)
}

/// The runner, once every agent in `agents` is known to it (a workflow's phases).
fn runner_for_all(agents: &[runner_contract::AgentName]) -> Result<runner_core::LocalRunner> {
    let mut setup = codehands::Setup::from_env()?;
    setup.settings.supervisor = Some(supervisor_command()?);
    let (registry, problems) = builder_with_sources(setup.clone())?.agents()?;
    if let Some(agent) = agents.iter().find(|a| !registry.contains(a)) {
        return Err(codehands::unknown_agent(&registry, &problems, agent));
    }
    codehands::RunnerBuilder::runner(setup, registry)
}

/// Parses `--isolation box|none` (clap value parser).
fn isolation(text: &str) -> std::result::Result<runner_contract::Isolation, String> {
    match text {
        "box" => Ok(runner_contract::Isolation::Box),
        "none" => Ok(runner_contract::Isolation::None),
        other => Err(format!(
            "{other:?} is not an isolation: `box` (the agent confined, the default) or `none` \
             (the agent with your rights)"
        )),
    }
}

fn image(text: &str) -> std::result::Result<String, String> {
    runner_contract::allowances::check_image_name(text).map(|()| text.to_owned())
}

fn engine(text: &str) -> std::result::Result<runner_contract::Engine, String> {
    match text {
        "local" => Ok(runner_contract::Engine::Local),
        "docker" => Ok(runner_contract::Engine::Docker),
        "swarm" => Ok(runner_contract::Engine::Swarm),
        other => Err(format!(
            "{other:?} is not an engine: `local` (this machine), `docker` (the engine DOCKER_HOST \
             names) or `swarm` (the Docker Swarm DOCKER_HOST manages)"
        )),
    }
}

/// Refuses a turn of session `id` asked for with another isolation than the session's:
/// every turn of a session runs alike.
async fn check_isolation(
    runner: &runner_core::LocalRunner,
    id: &runner_contract::SessionId,
    wanted: Option<runner_contract::Isolation>,
) -> Result<()> {
    use runner_contract::Runner;
    let Some(wanted) = wanted else {
        return Ok(());
    };
    let record = runner.session(id).await?;
    if record.isolation == wanted {
        return Ok(());
    }
    Err(runner_contract::Error::invalid_input(format!(
        "session {id} runs with --isolation {}, and every turn of a session runs alike: drop \
         --isolation {wanted}, or start a new session with it",
        record.isolation
    )))
}

/// Parses an agent name argument (clap value parser).
fn agent_name(text: &str) -> std::result::Result<runner_contract::AgentName, String> {
    runner_contract::AgentName::parse(text).map_err(|e| e.to_string())
}
