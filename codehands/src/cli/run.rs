//! `codehands run` and `codehands resume`: stream a session's events, then decide.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use futures::StreamExt;
use runner_contract::{
    AgentName, Event, EventBody, EventStream, PermissionMode, Permissions, Result, Runner, Sent,
    SessionId, StartOptions,
};

pub use super::decide::DecideArgs;
use super::decide::{self, Decided};
use super::output;
use super::permissions::{self, Questions};
use super::view::HumanView;

/// The prompt when none is given, naming the repo's own test command (read from its files:
/// `cargo test` for Cargo.toml, `python -m pytest`, `go test ./...`, `npm test` …).
fn default_prompt(repo: &std::path::Path) -> String {
    match codehands::repo_test_command(repo) {
        Some(command) => format!("Fix the failing test. Run `{command}` to check."),
        None => "Fix the failing test. Run the repo's tests to check.".to_owned(),
    }
}

/// Arguments of `codehands run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The repository (default: the current folder).
    #[arg(default_value = ".")]
    pub repo: PathBuf,
    /// What the agent should do; always text, even when it starts with `--` (put `--` before it).
    /// Default: fix the failing test, running the repo's own test command (`cargo test`,
    /// `python -m pytest`, `go test ./...`, `npm test` …, read from its files).
    #[arg(allow_hyphen_values = true)]
    pub prompt: Option<String>,
    /// Which agent runs, by name (`codehands agents` lists them).
    #[arg(long, value_parser = super::agent_name, default_value = "claude-code")]
    pub agent: AgentName,
    /// The model, in the agent's own naming (for example `sonnet`).
    #[arg(long)]
    pub model: Option<String>,
    /// The budget of the run in US dollars (default 0.50); with `--attempts`, the whole
    /// task's, split evenly across the attempts.
    #[arg(long)]
    pub budget_usd: Option<f64>,
    /// The wall-clock limit of each turn (`90s`, `10m`, `1h`): a turn still running after it
    /// is ended and fails with reason `timeout`, its change kept for inspection (`codehands
    /// diff ID`) until you reject it. With `--attempts`, each attempt's; with `--workflow`,
    /// each phase's that names none of its own.
    #[arg(long, value_name = "DURATION", value_parser = timeout_ms)]
    pub timeout: Option<u64>,
    /// The session id (a UUID; a random one by default).
    #[arg(long, value_parser = super::session_id)]
    pub session_id: Option<SessionId>,
    /// Run the repo's tests in the Docker sandbox after the agent finishes.
    #[arg(long)]
    pub verify: bool,
    /// `box` (the default): the agent and everything it starts write only the worktree,
    /// read nothing of your home but its login, reach only its provider and see none of
    /// your processes. `none`: the agent runs with your rights (where no box can be made).
    #[arg(long, value_name = "box|none", value_parser = super::isolation, default_value = "box")]
    pub isolation: runner_contract::Isolation,
    /// Where the box runs: `local` (this machine, the default), `docker` (a container on the
    /// engine DOCKER_HOST names) or `swarm` (a job on the Docker Swarm DOCKER_HOST manages).
    /// See README.md, "Where runs run".
    #[arg(long, value_name = "local|docker|swarm", value_parser = super::engine, default_value = "local")]
    pub engine: runner_contract::Engine,
    /// The remote box's image (with `--engine docker|swarm`): yours, as the engine has or
    /// pulls it, with codehands' init added there at run time. Default: `[box] image` in the
    /// settings, else the repo's `.devcontainer/devcontainer.json`, else codehands/remote:1.
    /// See docs/remote-box.md, "The repo's own image".
    #[arg(long, value_name = "IMAGE", value_parser = super::image)]
    pub image: Option<String>,
    /// Print the session id (with `--json`, `{"sessionId": …}`) once the agent runs, and
    /// return; the run goes on (`codehands events ID --follow` watches it).
    #[arg(long)]
    pub detach: bool,
    /// Ask before the agent uses a tool outside its allow list, instead of denying it: on a
    /// terminal each request is a question (`allow Bash: …? [y/N]`); with `--json` or
    /// `--detach` it is a `permission.requested` event that another process answers
    /// (`codehands answer`). Anywhere else such tools stay denied.
    #[arg(long)]
    pub ask: bool,
    /// With `--ask`: how many seconds a request waits for an answer before it is denied
    /// (default 300).
    #[arg(long, value_name = "SECS", requires = "ask",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub permission_timeout: Option<u64>,
    /// Run the task as several attempts at once, each a session from the same base commit:
    /// a list `AGENT[:MODEL],…` (`claude-code,codex,claude-code:sonnet`) or a number of
    /// `--agent` runs. Prints the task id and returns; `codehands task ID --follow` watches
    /// them side by side, `codehands approve SESSION` picks one.
    #[arg(long, value_name = "LIST|N",
          conflicts_with_all = ["session_id", "detach", "ask", "then"])]
    pub attempts: Option<String>,
    /// Run the task as a workflow: phases (plan, implement, review …), each a turn of one
    /// session with its own agent, model and permissions, and the review's findings back
    /// to the implementer. A file (a path, or a name ending in `.toml`) or a name: the
    /// built-in `plan-code-review`, or `$CODEHANDS_HOME/workflows/NAME.toml`. The agents
    /// and models are the workflow's; `--budget-usd` is split evenly over the most turns it
    /// can take.
    #[arg(long, value_name = "FILE|NAME",
          conflicts_with_all = ["agent", "model", "attempts", "engine", "detach", "ask", "verify"])]
    pub workflow: Option<String>,
    #[command(flatten)]
    pub decide: DecideArgs,
}

/// Arguments of `codehands resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session to resume: its id, or the first 8 or more characters of it.
    #[arg(value_parser = super::session_ref)]
    pub id: String,
    /// What to tell the agent now (default: carry on).
    #[arg(allow_hyphen_values = true)]
    pub prompt: Option<String>,
    /// The session's isolation (`box` or `none`): refused unless it is the one the session
    /// runs with, since every turn of a session runs alike.
    #[arg(long, value_name = "box|none", value_parser = super::isolation)]
    pub isolation: Option<runner_contract::Isolation>,
    #[command(flatten)]
    pub decide: DecideArgs,
}

impl RunArgs {
    /// The prompt given, else the default for the repo (`default_prompt`).
    pub fn prompt_or_default(&self) -> String {
        self.prompt
            .clone()
            .unwrap_or_else(|| default_prompt(&self.repo))
    }
}

/// `codehands run`.
pub async fn run(args: RunArgs) -> Result<ExitCode> {
    let outcome = run_unplanted(args).await;
    // A test build's hook only (the `bench-hooks` feature): a shipped build reads no such
    // variable.
    #[cfg(feature = "bench-hooks")]
    if let Some(wait) = codehands::timing::planted_slowdown() {
        // A regression planted on purpose: `cargo xtask bench check` must fail on it.
        std::thread::sleep(wait);
    }
    outcome
}

async fn run_unplanted(args: RunArgs) -> Result<ExitCode> {
    if let Some(workflow) = args.workflow.clone() {
        return run_workflow(args, &workflow).await;
    }
    // Each step's span is timed by `CODEHANDS_TIMING` (codehands::timing).
    let step = tracing::trace_span!("run.setup");
    let permissions = permissions_of(&args);
    let prompt = args.prompt_or_default();
    let agent = args.agent;
    let runner = super::runner_for(&agent)?;
    let id = args.session_id.unwrap_or_else(SessionId::new_random);
    let mut options = StartOptions::new(id, args.repo, prompt, agent);
    options.model = args.model;
    options.budget_usd = args.budget_usd;
    options.verify = args.verify;
    options.permissions = permissions;
    options.isolation = args.isolation;
    options.engine = args.engine;
    options.allowances.box_image = image_for(args.image, args.engine)?;
    options.timeout_ms = args.timeout;
    drop(step);
    // The checkout's status reads every file of a big repo: read beside the start (which
    // reads only the base commit), not before it; the note is said once the session runs.
    let dirty = {
        let repo = options.repo_path.clone();
        tokio::task::spawn_blocking(move || {
            let _step = tracing::trace_span!("run.dirty_check");
            dirty_note(&repo)
        })
    };
    let (repo, agent) = (options.repo_path.clone(), options.agent.clone());
    let boxed = isolation_line(options.isolation, options.engine);
    let step = tracing::trace_span!("run.start");
    let events = runner.start(options).await?;
    drop(step);
    if !args.decide.json {
        eprintln!("{boxed}");
    }
    if let Ok(Some(note)) = dirty.await {
        eprintln!("{note}");
    }
    super::logging::log_run_to(runner.home(), &id);
    tracing::info!(session = %id, %agent, repo = %repo.display(), "started");
    if args.detach {
        return detached(&runner, id, args.decide.json).await;
    }
    watch_and_decide(&runner, id, events, &args.decide).await
}

/// Stops session `id` on Ctrl-C. Between two phases of a workflow the session briefly awaits
/// approval (no turn runs to stop): the stop is tried again until the next phase's turn runs,
/// for a few seconds at most, unless the last event seen already closed the run.
async fn stop_soon(runner: &dyn Runner, id: SessionId, last: Option<&Event>) {
    let closed = last.is_some_and(|e| {
        matches!(
            e.body,
            EventBody::ApprovalRequested(_) | EventBody::TaskFailed(_) | EventBody::TaskStopped(_)
        )
    });
    for _ in 0..100 {
        match runner.stop(&id).await {
            Ok(()) => return,
            Err(e) if e.kind() == runner_contract::ErrorKind::IllegalMove && !closed => {
                let state = runner.session(&id).await.map(|r| r.state);
                if state.ok() != Some(runner_contract::SessionState::AwaitingApproval) {
                    eprintln!("codehands: {e}");
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => {
                eprintln!("codehands: {e}");
                return;
            }
        }
    }
    eprintln!("codehands: session {id} awaits approval: nothing runs to stop");
}

/// `codehands run --workflow`: the workflow found and checked, every phase's agent known,
/// then its phases streamed like one run's turns, and the change decided.
async fn run_workflow(args: RunArgs, name: &str) -> Result<ExitCode> {
    let home = codehands::Setup::from_env()?.home;
    let workflow = codehands::workflow::find(name, &home)?;
    let agents: Vec<AgentName> = workflow.phases.iter().map(|p| p.agent.clone()).collect();
    let runner = super::runner_for_all(&agents)?;
    let id = args.session_id.unwrap_or_else(SessionId::new_random);
    let prompt = args.prompt_or_default();
    let options = runner_contract::WorkflowOptions {
        session_id: id,
        repo_path: args.repo,
        prompt,
        workflow,
        budget_usd: args.budget_usd,
        isolation: args.isolation,
        timeout_ms: args.timeout,
    };
    let repo = options.repo_path.clone();
    let events = runner.run_workflow(options).await?;
    if let Ok(Some(note)) = tokio::task::spawn_blocking(move || dirty_note(&repo)).await {
        eprintln!("{note}");
    }
    super::logging::log_run_to(runner.home(), &id);
    tracing::info!(session = %id, workflow = name, "started");
    watch_and_decide(&runner, id, events, &args.decide).await
}

/// `--timeout`: a duration as people write it, in milliseconds.
fn timeout_ms(text: &str) -> std::result::Result<u64, String> {
    runner_contract::options::parse_timeout(text).map_err(|e| e.message().to_owned())
}

/// `--image` for a run on `engine`: refused for the local box, which runs no image.
fn image_for(image: Option<String>, engine: runner_contract::Engine) -> Result<Option<String>> {
    if image.is_some() && engine == runner_contract::Engine::Local {
        return Err(runner_contract::Error::invalid_input(
            "--image names a remote box's image, and the local box runs none: add --engine \
             docker or --engine swarm (README.md, \"Where runs run\")",
        ));
    }
    Ok(image)
}

/// Whether the agent runs in its box, said as `demo` says it (on stderr: stdout may be
/// contract JSON).
fn isolation_line(
    isolation: runner_contract::Isolation,
    engine: runner_contract::Engine,
) -> String {
    match (isolation, engine) {
        (runner_contract::Isolation::None, _) => {
            "isolation: none (the agent runs with your rights)".to_owned()
        }
        (runner_contract::Isolation::Box, runner_contract::Engine::Local) => {
            "isolation: box (the agent writes only its worktree and reaches only its provider)"
                .to_owned()
        }
        (runner_contract::Isolation::Box, engine) => format!(
            "isolation: box on the {} engine (the agent gets a copy of the worktree and reaches only its provider)",
            engine.as_str()
        ),
    }
}

/// What `--ask` comes to: asking where someone can answer (a person at the terminal, or
/// another process reading the JSON or the detached run), denying elsewhere (with a note).
fn permissions_of(args: &RunArgs) -> Permissions {
    if !args.ask {
        return Permissions::default();
    }
    if args.decide.json || args.detach || output::interactive() {
        return Permissions {
            mode: PermissionMode::Ask,
            timeout_secs: args.permission_timeout,
        };
    }
    eprintln!(
        "note: --ask asks at a terminal, and this is none: tools outside the allow list are \
         denied (with --json, another process answers the requests: `codehands answer`)"
    );
    Permissions::default()
}

/// `run --detach`: waits until the agent runs, then says which session it is.
async fn detached(
    runner: &runner_core::LocalRunner,
    id: SessionId,
    json: bool,
) -> Result<ExitCode> {
    let record = runner
        .wait_for_agent(&id, std::time::Duration::from_secs(60))
        .await?;
    if record.state == runner_contract::SessionState::Failed {
        let why = record.failure.unwrap_or_default();
        return Err(runner_contract::Error::new(
            runner_contract::ErrorKind::AgentUnavailable,
            format!("session {id} failed before its agent ran: {why}"),
        ));
    }
    if json {
        output::json_line(&serde_json::json!({ "sessionId": id }))?;
    } else {
        output::line(&id.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The line for stderr (stdout may be contract JSON) when the checkout has uncommitted
/// changes: the agent starts from HEAD without them. A status that cannot be read says
/// nothing here; start() reports a repository it cannot use.
pub(super) fn dirty_note(repo: &std::path::Path) -> Option<String> {
    let n = codehands::uncommitted_files(repo).ok()??;
    let files = if n == 1 { "file" } else { "files" };
    (n > 0).then(|| {
        format!(
            "note: {} has {n} uncommitted {files}; the agent starts from HEAD, without them \
             (commit or stash them first if it needs them)",
            repo.display()
        )
    })
}

/// `codehands resume`.
pub async fn resume(args: ResumeArgs) -> Result<ExitCode> {
    let runner = super::runner()?;
    let id = runner.resolve_session(&args.id).await?;
    super::check_isolation(&runner, &id, args.isolation).await?;
    let events = runner.resume(&id, args.prompt).await?;
    super::logging::log_run_to(runner.home(), &id);
    tracing::info!(session = %id, "resumed");
    watch_and_decide(&runner, id, events, &args.decide).await
}

/// Streams the events (Ctrl-C stops the session cleanly; a session that asks has its
/// permission requests asked at the terminal), then decides; a follow-up the person types
/// instead of deciding is sent, and its turn streams and is decided on the same way.
pub async fn watch_and_decide(
    runner: &runner_core::LocalRunner,
    id: SessionId,
    mut events: EventStream,
    decide: &DecideArgs,
) -> Result<ExitCode> {
    let ask = permissions::asked_here(runner, &id, decide.json).await?;
    loop {
        match watch_once(runner, id, events, decide, ask).await? {
            Watched::Done(code) => return Ok(code),
            Watched::Next(next) => events = next,
        }
    }
}

/// How one turn's watch ended.
enum Watched {
    Done(ExitCode),
    /// The person typed a follow-up: its turn's events.
    Next(EventStream),
}

async fn watch_once(
    runner: &runner_core::LocalRunner,
    id: SessionId,
    events: EventStream,
    decide: &DecideArgs,
    ask: bool,
) -> Result<Watched> {
    let Some(last) = watch(runner, id, events, decide.json, ask).await? else {
        // Nobody reads what we print any more; the run goes on without us.
        eprintln!(
            "codehands: stdout closed; session {id} goes on: `codehands events {id} --follow` watches it"
        );
        return Ok(Watched::Done(ExitCode::SUCCESS));
    };
    match last.as_ref().map(|e| &e.body) {
        Some(EventBody::TaskFailed(f)) => tracing::warn!(session = %id, "failed: {}", f.message),
        Some(body) => tracing::info!(session = %id, last = body.type_name(), "the run ended"),
        None => tracing::warn!(session = %id, "the run ended without an event"),
    }
    let seq = last.as_ref().map_or(0, |e| e.seq);
    match last.as_ref().map(|e| &e.body) {
        Some(EventBody::ApprovalRequested(_)) => loop {
            let text = match decide::after_approval(runner, id, decide).await? {
                Decided::Done(code) => return Ok(Watched::Done(code)),
                Decided::FollowUp(text) => text,
            };
            tracing::info!(session = %id, "follow-up");
            match runner.send(&id, text).await {
                Ok(Sent::FollowUp(events)) => return Ok(Watched::Next(events)),
                // Another process sent a follow-up first, and this text steered its turn:
                // watch that turn.
                Ok(Sent::Steered) => return Ok(Watched::Next(runner.events(&id, seq).await?)),
                // Not sent (an agent that cannot continue a conversation …): ask again.
                Err(e) => eprintln!("codehands: {e}"),
            }
        },
        Some(EventBody::TaskStopped(_)) => {
            if !decide.json {
                output::line(&format!("stopped. Resume with: codehands resume {id}"))?;
            }
            Ok(Watched::Done(ExitCode::SUCCESS))
        }
        Some(EventBody::TaskFailed(_)) => Ok(Watched::Done(ExitCode::FAILURE)),
        _ => {
            // The stream ended before the turn did: say why (a disk that stays full …).
            runner.after_stream(&id).await?;
            Ok(Watched::Done(ExitCode::FAILURE))
        }
    }
}

/// Prints every event (JSON or the human view) and returns the last; `None` when stdout
/// closed before the end (a reader such as `head -1` went away). With `ask`, each
/// permission request is a question at the terminal while the events go on.
async fn watch(
    runner: &dyn Runner,
    id: SessionId,
    mut events: EventStream,
    json: bool,
    ask: bool,
) -> Result<Option<Option<Event>>> {
    let mut view = HumanView::new(output::colour());
    let mut questions = Questions::new(ask);
    let mut last = None;
    let mut ticker = tokio::time::interval(HumanView::TICK);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut stopping = false;
    let _follow = tracing::trace_span!("run.follow");
    let mut first_event = Some(tracing::trace_span!("run.first_event"));
    loop {
        tokio::select! {
            event = events.next() => {
                let Some(event) = event else { break };
                drop(first_event.take());
                questions.hide();
                let printed = if json { output::write_json_line(&event) } else { view.print(&event) };
                match printed {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        view.clear_spinner();
                        return Ok(None);
                    }
                    Err(e) => return Err(runner_contract::Error::io("cannot write to stdout", &e)),
                }
                questions.note(&event.body);
                questions.show();
                last = Some(event);
            }
            line = super::keyboard::next_line(), if questions.waiting() => {
                if let Some((request, answer)) = questions.answered(line) {
                    permissions::answer(runner, &id, &request, answer).await;
                }
                questions.show();
            }
            _ = ticker.tick(), if !json && !questions.waiting() => view.tick(),
            _ = &mut ctrl_c, if !stopping => {
                stopping = true;
                questions.stop();
                view.clear_spinner();
                eprintln!("stopping session {id} …");
                stop_soon(runner, id, last.as_ref()).await;
            }
        }
    }
    view.clear_spinner();
    Ok(Some(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prompt_names_the_repos_own_test_command() {
        let dir = tempfile::tempdir().unwrap();
        let repo = |file: &str, text: &str| {
            let repo = dir.path().join(file.replace('.', "-"));
            std::fs::create_dir_all(&repo).unwrap();
            std::fs::write(repo.join(file), text).unwrap();
            repo
        };
        let cases = [
            (
                repo("Cargo.toml", "[package]\nname = \"a\"\n"),
                "`cargo test`",
            ),
            (repo("go.mod", "module a\n"), "`go test ./...`"),
            (
                repo("package.json", "{\"scripts\":{\"test\":\"node --test\"}}"),
                "`npm test`",
            ),
            (
                repo("pyproject.toml", "[tool.pytest.ini_options]\n"),
                "`python -m pytest`",
            ),
        ];
        for (repo, command) in cases {
            let prompt = default_prompt(&repo);
            assert!(prompt.contains(command), "{}: {prompt}", repo.display());
        }
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert_eq!(
            default_prompt(&empty),
            "Fix the failing test. Run the repo's tests to check."
        );
    }
}
