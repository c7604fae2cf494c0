//! Runs a scenario with a real agent program: a temp git repo, the scripted model server,
//! the `Invocation` the adapter builds, and an environment built from scratch (nothing of
//! the caller's leaks in but PATH).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use model_server::{ModelServer, RecordedRequest};
use runner_contract::event::PermissionRequested;
use runner_contract::options::PermissionAnswer;
use runner_contract::{
    Agent, AgentInput, AgentRequest, EventBody, ResumeFrom, SessionId, StdinClose,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::repo::make_repo;
use crate::scenario::Scenario;

/// The provider variables that point an agent at the scripted server (its base URL and a
/// dummy key, under the names the agent reads).
pub type ProviderEnv = dyn Fn(&ModelServer) -> Vec<(String, String)> + Send + Sync;

/// The longest a scenario may run before it is killed.
pub const RUN_LIMIT: Duration = Duration::from_secs(240);

/// How long the program may take to exit once its output has ended.
const EXIT_LIMIT: Duration = Duration::from_secs(20);

/// What one run printed and sent.
pub struct RunOutput {
    /// Every stdout line, in order, without newlines.
    pub lines: Vec<String>,
    /// Stderr, whole.
    pub stderr: String,
    /// The exit code (None when killed by a signal).
    pub exit_code: Option<i32>,
    /// Every request the model server received.
    pub requests: Vec<RecordedRequest>,
    /// The repo the agent worked in (removed with `dir`).
    pub repo: PathBuf,
    /// The session id the run was given.
    pub session_id: SessionId,
    /// The temp folder of the repo and of `home/`, the program's HOME; kept alive until
    /// the output is dropped, so a resume can run in the same place.
    pub dir: tempfile::TempDir,
}

/// An agent (its adapter, pointed at the real program) and the provider variables that send
/// it to the scripted server.
pub struct Harness<'a> {
    agent: &'a dyn Agent,
    provider_env: &'a ProviderEnv,
}

impl<'a> Harness<'a> {
    /// Runs scenarios with `agent`, its provider variables given by `provider_env`.
    pub fn new(agent: &'a dyn Agent, provider_env: &'a ProviderEnv) -> Self {
        Harness {
            agent,
            provider_env,
        }
    }

    /// Runs `scenario` in a new repo and returns what the program printed and sent.
    pub async fn run(&self, scenario: &Scenario) -> Result<RunOutput, String> {
        self.run_with(scenario, |_| {}).await
    }

    /// [`Harness::run`], with the request changed by `adjust` before the invocation is built.
    pub async fn run_with(
        &self,
        scenario: &Scenario,
        adjust: impl FnOnce(&mut AgentRequest),
    ) -> Result<RunOutput, String> {
        let dir = tempfile::Builder::new()
            .prefix(".tmp")
            .tempdir_in(scratch_root()?)
            .map_err(|e| format!("temp dir: {e}"))?;
        let repo = make_repo(dir.path(), scenario.files)?;
        std::fs::create_dir_all(dir.path().join("home")).map_err(|e| format!("home: {e}"))?;
        self.run_in(dir, repo, scenario, adjust).await
    }

    /// Resumes the conversation of `previous` (same repo, same HOME, where agents keep their
    /// sessions) with a new prompt, through the adapter's resume arguments.
    pub async fn resume(
        &self,
        scenario: &Scenario,
        previous: RunOutput,
        prompt: &str,
    ) -> Result<RunOutput, String> {
        let id = previous.session_id;
        self.run_in(previous.dir, previous.repo, scenario, |request| {
            request.session_id = id;
            request.prompt = prompt.to_owned();
            request.resume = Some(ResumeFrom {
                agent_session_id: id.to_string(),
            });
        })
        .await
    }

    /// The line that answers `asked` (`Some(true)` allows; a denial says why).
    fn answer(&self, asked: &PermissionRequested, allow: Option<bool>) -> Result<String, String> {
        let answer = match allow {
            Some(true) => PermissionAnswer::Allow {
                updated_input: None,
            },
            Some(false) => PermissionAnswer::Deny {
                message: Some("The scenario denies this.".into()),
            },
            None => PermissionAnswer::Deny {
                message: Some("this run does not ask for permission: the tool is denied".into()),
            },
        };
        self.agent
            .input_line(&AgentInput::Permission {
                request_id: asked.request_id.clone(),
                input: asked.input.clone(),
                answer,
            })
            .map_err(|e| format!("answering permission request {}: {e}", asked.request_id))
    }

    async fn run_in(
        &self,
        dir: tempfile::TempDir,
        repo: PathBuf,
        scenario: &Scenario,
        adjust: impl FnOnce(&mut AgentRequest),
    ) -> Result<RunOutput, String> {
        let home = dir.path().join("home");
        let server = ModelServer::start((scenario.script)(&repo))
            .await
            .map_err(|e| format!("model server: {e}"))?;
        let mut request = AgentRequest {
            permissions: Default::default(),
            session_id: SessionId::new_random(),
            worktree: repo.clone(),
            prompt: scenario.prompt.to_owned(),
            model: scenario.model.map(str::to_owned),
            budget_usd: scenario.budget_usd,
            notes: scenario.notes.map(str::to_owned),
            notes_file: None,
            test_command: scenario.test_command.map(str::to_owned),
            resume: None,
            provider_env: (self.provider_env)(&server),
            read_only: false,
            tools: Default::default(),
        };
        if !scenario.answers.is_empty() {
            request.permissions = runner_contract::options::PermissionMode::Ask;
        }
        adjust(&mut request);
        let invocation = self
            .agent
            .invocation(&request)
            .map_err(|e| format!("invocation: {e}"))?;

        let mut child = tokio::process::Command::new(&invocation.program)
            .args(&invocation.args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .envs(scenario.extra_env.iter().copied())
            .envs(invocation.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", invocation.program.display()))?;

        let mut stdin = child.stdin.take();
        if let Some(pipe) = stdin.as_mut() {
            for line in &invocation.stdin {
                pipe.write_all(format!("{line}\n").as_bytes())
                    .await
                    .map_err(|e| format!("stdin: {e}"))?;
            }
        }
        if invocation.close_stdin == StdinClose::AfterWrite {
            stdin = None;
        }
        let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr_task = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text).await;
            text
        });
        let mut reader = BufReader::new(child.stdout.take().expect("stdout is piped"));
        // The adapter's own parser says when the result came, and what the program is owed
        // (a protocol's next request), as it does for the runner; the scenario answers the
        // permission requests.
        let mut parser = self.agent.parser_for(&request);
        let mut answers = scenario.answers.iter().copied();
        let read_all = async {
            let mut lines = Vec::new();
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line).await {
                    Ok(0) => break,
                    Ok(_) => {
                        let text = line.strip_suffix('\n').unwrap_or(&line).to_owned();
                        let events = parser.parse_line(&text);
                        let mut replies = parser.owed_input();
                        for event in &events {
                            if let EventBody::PermissionRequested(asked) = event {
                                replies.push(self.answer(asked, answers.next())?);
                            }
                        }
                        if let Some(pipe) = stdin.as_mut() {
                            for reply in replies {
                                pipe.write_all(format!("{reply}\n").as_bytes())
                                    .await
                                    .map_err(|e| format!("stdin: {e}"))?;
                            }
                        }
                        if invocation.close_stdin != StdinClose::AfterWrite
                            && events.iter().any(|e| e.is_terminal())
                        {
                            // The program waits for more input after its result: end it.
                            stdin = None;
                        }
                        lines.push(text);
                    }
                    Err(e) => return Err(format!("stdout: {e}")),
                }
            }
            Ok(lines)
        };
        let lines = match tokio::time::timeout(RUN_LIMIT, read_all).await {
            Ok(lines) => lines?,
            Err(_) => {
                let _ = child.kill().await;
                return Err(format!("{} ran over {RUN_LIMIT:?}", scenario.name));
            }
        };
        drop(stdin);
        let status = tokio::time::timeout(EXIT_LIMIT, child.wait())
            .await
            .map_err(|_| {
                format!(
                    "{} did not exit within {EXIT_LIMIT:?} after its output ended",
                    invocation.program.display()
                )
            })?
            .map_err(|e| format!("wait: {e}"))?;
        let stderr = stderr_task.await.unwrap_or_default();
        Ok(RunOutput {
            lines,
            stderr,
            exit_code: status.code(),
            requests: server.requests(),
            repo,
            session_id: request.session_id,
            dir,
        })
    }
}

/// Where the harness makes each run's repo and HOME: `target/tmp/` of the test binary that
/// runs it, outside the system's temp folder, as a person's home and repos are (Codex cannot
/// set up its own sandbox's helper with a home under the temp folder). Recordings name it
/// `/tmp`: see [`crate::snapshot::as_tmp`].
pub fn scratch_root() -> Result<std::path::PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the test binary's path: {e}"))?;
    // A test binary is target/<profile>/deps/<name>-<hash>.
    let target = exe
        .ancestors()
        .nth(3)
        .ok_or("the test binary is not under target/<profile>/deps")?;
    let root = target.join("tmp");
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    Ok(root)
}
